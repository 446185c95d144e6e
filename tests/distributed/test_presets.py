"""The presets on Ray (``looprl run algorithm=... runtime=ray``, ``DistributedRun(preset, ...)``):
the workers build the preset's own policy and trainer, with the same hyperparameters."""

from __future__ import annotations

import math

import pytest
import torch

pytest.importorskip("hydra")
from hydra import compose, initialize  # noqa: E402

from looprl.agents import ActorCriticPolicy  # noqa: E402
from looprl.configs import build_distributed, register  # noqa: E402
from looprl.distributed import DistributedRun, RuntimeConfig, test_pipeline  # noqa: E402
from looprl.environments import GymEnvironment  # noqa: E402
from looprl.policies.distributions import GaussianHead  # noqa: E402
from looprl.presets.classic_control import a2c, ppg, ppo, vac  # noqa: E402


def distributed(tmp_path, *overrides: str):
    register()
    with initialize(version_base="1.3", config_path=None):
        cfg = compose("looprl", overrides=["runtime=ray", *overrides])
    return build_distributed(cfg, str(tmp_path))


def same_parameters(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))


SMALL = {"ppo": (ppo, {"n_envs": 2, "n_steps": 16, "minibatch_size": 16, "hidden": 16}),
         "ppg": (ppg, {"n_envs": 2, "n_steps": 16, "minibatch_size": 16, "hidden": 16,
                       "n_policy": 1, "aux_minibatch_size": 16}),
         "a2c": (a2c, {"n_envs": 2, "n_steps": 5, "hidden": 16}),
         "vac": (vac, {"n_envs": 2, "hidden": 16})}


@pytest.mark.parametrize("name", list(SMALL))
def test_ray_workers_build_the_presets_own_policy_and_trainer(name):
    builder, hyperparameters = SMALL[name]
    env = GymEnvironment("CartPole-v1")
    preset = builder.hyperparameters(**hyperparameters).env(env).device("cpu").build()
    run = DistributedRun(preset, RuntimeConfig(actors=1, segment_length=99), frames=10_000,
                         logdir=None, quiet=True)
    spec, local = run.spec, preset.agent(train_steps=10_000)
    assert run.name == name and spec.env == "CartPole-v1"
    assert run.runtime.segment_length == preset.n_steps  # the preset's rollout, not 99
    assert spec.buffer_args == {"batch_streams": 2}
    policy = spec.make_policy()
    assert isinstance(policy, ActorCriticPolicy) and policy.module is not preset.model
    assert type(policy.module) is type(preset.model) and same_parameters(policy.module,
                                                                         preset.model)
    trainer = spec.make_trainer(policy)
    assert type(trainer) is type(local.trainer)
    for key in ("epochs", "minibatch_size", "discount_factor", "gae_lambda", "entropy_coef",
                "total_updates"):
        assert getattr(trainer, key) == getattr(local.trainer, key), key
    groups = policy.approximation.optimizer.param_groups
    local_groups = local.policy.approximation.optimizer.param_groups
    assert [g["lr"] for g in groups] == [g["lr"] for g in local_groups]
    assert policy.approximation._clip_grad == local.policy.approximation._clip_grad
    report = test_pipeline(spec, episodes=10**6, max_frames=4 * preset.n_envs * preset.n_steps,
                           n_envs=preset.n_envs, segment_length=preset.n_steps)
    assert report.train_steps >= 1 and math.isfinite(report.stats["policy"])
    env.close()


def test_atari_ppo_runs_on_the_atari_environment_with_the_nature_cnn(tmp_path):
    pytest.importorskip("ale_py")
    run = distributed(tmp_path, "algorithm=atari/ppo", "env=Breakout", "algorithm.n_envs=2",
                      "algorithm.n_steps=16")
    spec = run.spec
    assert (spec.env, spec.env_args) == ("atari", {"game": "Breakout", "clip_rewards": True})
    assert spec.env_label == "Breakout"  # the run directory's name
    assert spec.buffer_args == {"batch_streams": 2} and run.runtime.segment_length == 16
    trainer = spec.make_trainer(spec.make_policy())
    assert trainer.epochs == 4 and trainer.clip(0.0) == 0.1
    report = test_pipeline(spec, episodes=10**6, max_frames=48, n_envs=2, segment_length=16)
    assert report.train_steps >= 1 and "approx_kl" in report.stats
    cnn = [m for m in spec.make_policy().module.modules() if type(m).__name__ == "Conv2d"]
    assert [c.out_channels for c in cnn] == [32, 64, 64]  # Nature


def test_the_atari_dqn_family_stays_local_in_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"^runtime=ray runs the on-policy presets .*; "
                                         r"'dqn' on 'atari' runs locally only"):
        distributed(tmp_path, "algorithm=atari/dqn", "env=Breakout")


def test_continuous_ppo_runs_with_gaussian_actions_on_the_env_bounds(tmp_path):
    run = distributed(tmp_path, "algorithm=continuous/ppo", "env=Pendulum-v1",
                      "algorithm.n_envs=2", "algorithm.n_steps=32")
    policy = run.spec.make_policy()
    assert isinstance(policy.head, GaussianHead) and policy.continuous_action
    assert (policy.head.bounds.low.tolist(), policy.head.bounds.high.tolist()) == ([-2.0], [2.0])
    assert torch.equal(policy.module.actor.log_std, torch.zeros(1))  # log_std_init 0
    report = test_pipeline(run.spec, episodes=1, n_envs=2, segment_length=32)
    assert report.train_steps >= 1 and math.isfinite(report.stats["policy"])
