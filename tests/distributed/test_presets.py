"""The distributed counterparts of the presets (``looprl run algorithm=... runtime=ray``)."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("hydra")
from hydra import compose, initialize  # noqa: E402

from looprl.configs import build_distributed, register  # noqa: E402
from looprl.distributed import test_pipeline  # noqa: E402


def distributed(tmp_path, *overrides: str):
    register()
    with initialize(version_base="1.3", config_path=None):
        cfg = compose("looprl", overrides=["runtime=ray", *overrides])
    return build_distributed(cfg, str(tmp_path))


def test_atari_ppo_runs_on_the_atari_environment_with_the_nature_cnn(tmp_path):
    pytest.importorskip("ale_py")
    run = distributed(tmp_path, "algorithm=atari/ppo", "env=Breakout", "algorithm.n_envs=2",
                      "algorithm.n_steps=16")
    spec = run.spec
    assert (spec.env, spec.env_args) == ("atari", {"game": "Breakout", "clip_rewards": True})
    assert spec.env_label == "Breakout"  # the run directory's name
    assert spec.policy == "actor-critic-shared" and spec.policy_args["num_layers"] == 0
    assert spec.policy_args["obs_dim"] == {"obs": (4, 84, 84)}
    assert spec.buffer_args == {"batch_streams": 2} and run.runtime.segment_length == 16
    assert spec.trainer_args["epochs"] == 4 and spec.trainer_args["clip"](0.0) == 0.1
    report = test_pipeline(spec, episodes=10**6, max_frames=48, n_envs=2, segment_length=16)
    assert report.train_steps >= 1 and "approx_kl" in report.stats
    cnn = [m for m in spec.make_policy().module.modules() if type(m).__name__ == "Conv2d"]
    assert [c.out_channels for c in cnn] == [32, 64, 64]  # Nature


def test_the_atari_dqn_family_stays_local_in_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"^runtime=ray runs the presets ppo, ppg, dqn, ddqn, "
                                         r"atari.ppo, atari.ppg, continuous.ppo; 'atari.dqn' runs "
                                         r"locally only"):
        distributed(tmp_path, "algorithm=atari/dqn", "env=Breakout")


def test_continuous_ppo_runs_with_gaussian_actions_on_the_env_bounds(tmp_path):
    run = distributed(tmp_path, "algorithm=continuous/ppo", "env=Pendulum-v1",
                      "algorithm.n_envs=2", "algorithm.n_steps=32")
    args = run.spec.policy_args
    assert run.spec.policy == "actor-critic-separate" and args["continuous_action"]
    assert (args["action_low"], args["action_high"]) == ([-2.0], [2.0])
    assert args["init_log_std"] == 0.0 and args["hidden_dim"] == 64
    report = test_pipeline(run.spec, episodes=1, n_envs=2, segment_length=32)
    assert report.train_steps >= 1 and math.isfinite(report.stats["policy"])
