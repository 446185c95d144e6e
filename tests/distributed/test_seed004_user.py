"""Seed 004's user, end to end: an own two-agent environment, an own GRU policy
(``SingleModelPytorchPolicy``) and an own trainer (``tests.distributed.seed004_user``), checked
with ``test_environment``, run with ``test_pipeline`` and on Ray with 2 actors, with no change
to the user's code between the three."""

from __future__ import annotations

import numpy as np
import torch
from tests.distributed.seed004_user import MyGRUPolicy, MyTrainer, SignPair

from looprl.core import Policy, register_policy, register_trainer
from looprl.distributed import AlgorithmSpec, test_environment, test_pipeline
from looprl.environments.srl import register, registered_environments

ENV, POLICY, TRAINER = "seed004-sign-pair", "seed004-gru", "seed004-a2c"


def register_users_parts() -> None:
    """What the user's package does on import (here once per process)."""
    if ENV not in registered_environments():
        register(ENV, SignPair)
        register_policy(POLICY, MyGRUPolicy)
        register_trainer(TRAINER, MyTrainer)


def users_spec() -> AlgorithmSpec:
    """The seed's calls: ``Policy(type_=..., args=...)`` gives the policy, the trainer is named;
    no ``sample_buffer`` anywhere."""
    register_users_parts()
    torch.manual_seed(0)
    policy = Policy(type_=POLICY, args=dict(hidden=16))
    return AlgorithmSpec(env=ENV, policy=policy, trainer=TRAINER,
                         trainer_args={"lr": 0.02})


def test_the_users_environment_passes_test_environment() -> None:
    register_users_parts()
    report = test_environment(ENV, test_stepping=True, steps=40)
    assert report.agent_count == 2 and report.episodes == 5
    assert report.obs_shapes == [{"obs": (1,)}, {"obs": (1,)}]


def test_the_users_parts_run_and_learn_in_test_pipeline() -> None:
    """Random play earns 8 per episode (2 agents x 8 steps x 1/2); the GRU learns to match."""
    spec = users_spec()
    report = test_pipeline(spec, episodes=10**6, max_frames=2500, n_envs=4, segment_length=8)
    assert report.train_steps > 0 and set(report.stats) == {"loss"}
    assert np.mean(report.episodes[-20:]) > 12, report.episodes[-20:]


def test_the_users_parts_run_on_ray_with_two_actors(local_ray, tmp_path) -> None:
    from looprl.distributed import DistributedRun, RuntimeConfig

    runtime = RuntimeConfig(actors=2, envs_per_actor=2, groups=1, segment_length=8,
                            cpus_per_actor=1, cpus_per_trainer=1, checkpoint_every=5)
    run = DistributedRun(users_spec(), runtime, frames=1500, logdir=str(tmp_path), quiet=True)
    result = run.run()
    assert result.frames >= 1500 and result.train_steps > 0 and result.returns
    assert {int(r) for r in result.returns} <= set(range(17))  # 2 agents x 8 steps x <= 1
    saved = torch.load(next(tmp_path.rglob("policy.pt")), weights_only=True)
    policy = MyGRUPolicy(hidden=16)
    policy.load_checkpoint(saved)
    assert policy.version == saved["steps"] > 0
