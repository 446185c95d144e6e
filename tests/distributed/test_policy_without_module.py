"""A seed-004 user's own ``looprl.core.Policy`` that exposes no ``module`` but implements SRL's
``get_checkpoint`` / ``load_checkpoint`` runs on Ray as in ``test_pipeline``: the trainer
publishes its checkpoint and the actors load it (was: 'trainer worker failed to start:
NotImplementedError: ... does not expose a module')."""

from __future__ import annotations

import pytest
import torch
from tests.distributed.checkpoint_policy import CheckpointPolicy
from tests.distributed.seed004_user import MyTrainer, SignPair

from looprl.distributed import AlgorithmSpec, test_pipeline
from looprl.environments import srl

ENV = "no-module-sign-pair"


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ENV`` registered for this module's tests only (the registry's list of names is part of
    other tests' messages)."""
    monkeypatch.setitem(srl._REGISTRY, ENV, SignPair)


def spec() -> AlgorithmSpec:
    return AlgorithmSpec(env=ENV, policy=CheckpointPolicy, trainer=MyTrainer)


def test_its_parameters_are_published_as_its_checkpoint() -> None:
    from looprl.distributed.pipeline import load_parameters, policy_parameters

    trained, acting = CheckpointPolicy(), CheckpointPolicy()
    load_parameters(acting, policy_parameters(trained))
    for a, b in zip(trained.parameters(), acting.parameters(), strict=True):
        assert torch.equal(a, b)


def test_it_runs_in_test_pipeline_and_on_ray(local_ray, tmp_path) -> None:
    from looprl.distributed import DistributedRun, RuntimeConfig

    assert test_pipeline(spec(), episodes=3, max_frames=400, segment_length=8).train_steps > 0
    runtime = RuntimeConfig(actors=2, envs_per_actor=2, segment_length=8, cpus_per_actor=0.5,
                            cpus_per_trainer=0.5)
    result = DistributedRun(spec(), runtime, frames=600, logdir=str(tmp_path), quiet=True).run()
    assert result.frames >= 600 and result.train_steps > 0 and result.returns
    assert result.trainer_steps == [result.train_steps]  # (the end compared the trainers)
