"""``SingleModelPytorchPolicy`` (seed 004): the device, version, checkpoint and DDP work a user's
policy inherits (two DDP trainers averaging its gradients: the trainer processes of
``tests/distributed/test_ddp.py``, which check the built-in policies too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from helpers import LinearPolicy
from looprl.agents import SingleModelPytorchPolicy
from looprl.core import Policy


def test_it_is_a_policy_with_a_version_the_trainer_increments() -> None:
    policy = LinearPolicy()
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
    trained = LinearPolicy(seed=1)
    for _ in range(3):
        trained.inc_version()
    torch.save(trained.get_checkpoint(), tmp_path / "policy.pt")
    saved = torch.load(tmp_path / "policy.pt", weights_only=True)
    assert saved["steps"] == saved["version"] == 3
    fresh = LinearPolicy(seed=2)
    assert not torch.equal(fresh.module.weight, trained.module.weight)
    fresh.load_checkpoint(saved)
    assert torch.equal(fresh.module.weight, trained.module.weight) and fresh.version == 3
    fresh.load_checkpoint({"state_dict": saved["state_dict"]})  # pretrained weights: version 0
    assert fresh.version == 0
    with pytest.raises(ValueError, match=r"dict with a 'state_dict' .*got \['weights'\]"):
        fresh.load_checkpoint({"weights": saved["state_dict"]})


def test_a_checkpoint_of_another_network_is_one_line() -> None:
    """torch's nine lines of mismatched tensors become one naming the first (as Policy's)."""
    wide = Named(torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Linear(8, 2)))
    narrow = Named(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)))
    with pytest.raises(ValueError, match=r"^the checkpoint does not fit Named's network: size "
                       r"mismatch for 0\.weight: .*torch.Size\(\[8, 3\]\) \(and 2 more\); "
                       r"load one of a policy built with the same arguments$"):
        wide.load_checkpoint(narrow.get_checkpoint())
    with pytest.raises(ValueError, match="Missing key"):
        Named(torch.nn.Linear(3, 4)).load_checkpoint(narrow.get_checkpoint())
    assert wide.version == 0


class Named(SingleModelPytorchPolicy):
    """A policy of any network (acting is not what these tests call)."""

    def rollout(self, requests: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> Any:
        raise AssertionError("not called")


def test_to_moves_the_network_and_the_device_rollout_reads() -> None:
    policy = LinearPolicy()
    assert policy.device == torch.device("cpu")
    assert policy.to("meta") is policy
    assert policy.device == torch.device("meta") and policy.module.weight.device.type == "meta"
    assert LinearPolicy(device="meta").module.weight.device.type == "meta"


def test_a_device_torch_cannot_use_is_one_line_at_construction_and_in_to() -> None:
    with pytest.raises(ValueError, match="^Unknown device 'gpu'"):
        LinearPolicy(device="gpu")
    with pytest.raises(ValueError, match="^Unknown device 'tpu'"):
        LinearPolicy().to("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sees no CUDA GPU here; use 'cpu'"):
            LinearPolicy(device="cuda")


def test_a_network_that_is_no_module_is_one_line() -> None:
    class NotANet(SingleModelPytorchPolicy):
        def rollout(self, requests: Any, **kwargs: Any) -> Any: ...

        def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> Any: ...

    with pytest.raises(TypeError, match="takes a torch.nn.Module, got a dict"):
        NotANet({"weight": torch.zeros(2)})


def test_distributed_is_nothing_without_a_process_group() -> None:
    policy = LinearPolicy()
    policy.distributed()
    assert policy.net is policy.module
