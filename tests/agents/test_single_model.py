"""``SingleModelPytorchPolicy`` (seed 004): the device, version, checkpoint and DDP work a user's
policy inherits."""

from __future__ import annotations

import copy
import multiprocessing
import pickle
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from looprl.agents import SingleModelPytorchPolicy
from looprl.core import Policy


class Linear(SingleModelPytorchPolicy):
    """The smallest user policy: one linear layer."""

    def __init__(self, seed: int = 0, device: str = "cpu"):
        torch.manual_seed(seed)
        super().__init__(nn.Linear(3, 2), device=device)

    def rollout(self, requests: Any, **kwargs: Any) -> Any:
        return self.net(requests)

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> Any:
        return self.net(sample)


def test_it_is_a_policy_with_a_version_the_trainer_increments() -> None:
    policy = Linear()
    assert isinstance(policy, Policy) and policy.version == 0
    policy.inc_version()
    policy.inc_version()
    assert policy.version == 2
    policy.version = 7  # what a worker does when it loads published parameters
    assert policy.version == 7
    assert policy.net is policy.module and list(policy.parameters()) == list(
        policy.module.parameters())
    policy.eval_mode()
    assert not policy.module.training
    policy.train_mode()
    assert policy.module.training


def test_a_checkpoint_restores_parameters_and_version_and_loads_with_weights_only(
        tmp_path: Path) -> None:
    trained = Linear(seed=1)
    for _ in range(3):
        trained.inc_version()
    torch.save(trained.get_checkpoint(), tmp_path / "policy.pt")
    saved = torch.load(tmp_path / "policy.pt", weights_only=True)
    assert saved["steps"] == saved["version"] == 3
    fresh = Linear(seed=2)
    assert not torch.equal(fresh.module.weight, trained.module.weight)
    fresh.load_checkpoint(saved)
    assert torch.equal(fresh.module.weight, trained.module.weight) and fresh.version == 3
    fresh.load_checkpoint({"state_dict": saved["state_dict"]})  # pretrained weights: version 0
    assert fresh.version == 0
    with pytest.raises(ValueError, match=r"dict with a 'state_dict' .*got \['weights'\]"):
        fresh.load_checkpoint({"weights": saved["state_dict"]})


def test_to_moves_the_network_and_the_device_rollout_reads() -> None:
    policy = Linear()
    assert policy.device == torch.device("cpu")
    assert policy.to("meta") is policy
    assert policy.device == torch.device("meta") and policy.module.weight.device.type == "meta"
    assert Linear(device="meta").module.weight.device.type == "meta"


def test_a_network_that_is_no_module_is_one_line() -> None:
    class NotANet(SingleModelPytorchPolicy):
        def rollout(self, requests: Any, **kwargs: Any) -> Any: ...

        def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> Any: ...

    with pytest.raises(TypeError, match="takes a torch.nn.Module, got a dict"):
        NotANet({"weight": torch.zeros(2)})


def test_distributed_is_nothing_without_a_process_group() -> None:
    policy = Linear()
    policy.distributed()
    assert policy.net is policy.module


def one_rank(rank: int, init_method: str, out: str) -> None:
    """Rank ``rank`` of 2: the trainer group distributes the policy (``distributed()``) and one
    backward pass through ``net`` on this rank's input; saves the gradient and what a copy
    and a pickle of the distributed policy are."""
    from looprl.distributed.ddp import TrainerGroup

    torch.set_num_threads(1)
    group = TrainerGroup(rank, 2, gpus=False, timeout=60)
    group.join(init_method)
    policy = Linear()
    group.distribute(policy)
    policy.analyze(torch.full((1, 3), float(rank + 1))).sum().backward()
    group.check_in_sync(policy.module)
    results = {"grad": policy.module.weight.grad.clone(),
               "wrapped": type(policy.net).__name__,
               "copy": type(copy.deepcopy(policy).net).__name__,
               "pickle": type(pickle.loads(pickle.dumps(policy)).net).__name__,
               "keys": sorted(policy.get_checkpoint()["state_dict"])}
    torch.distributed.destroy_process_group()
    torch.save(results, out)


def test_two_trainers_average_the_gradients_of_its_network(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    ranks = [context.Process(target=one_rank, args=(r, f"file://{tmp_path / 'meet'}",
                                                    str(tmp_path / f"{r}.pt")))
             for r in range(2)]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join(timeout=120)
        if process.is_alive():
            process.kill()
    assert [process.exitcode for process in ranks] == [0, 0]
    first, second = (torch.load(tmp_path / f"{r}.pt") for r in range(2))
    assert torch.allclose(first["grad"], torch.full((2, 3), 1.5))  # the mean of 1 and 2
    assert torch.equal(first["grad"], second["grad"])
    assert first["wrapped"] == "DistributedDataParallel"
    assert first["copy"] == first["pickle"] == "Linear"  # copies are not distributed
    assert first["keys"] == ["bias", "weight"]  # no DDP "module." prefix
