"""Meta components work with every preset family in local experiments: each hook runs and
sees its documented keys (classic control, continuous control, MuJoCo, Atari)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import Recorder
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.presets.catalog import available_agents, make_env

#: small values for the hyperparameters a preset has (fast runs, updates within 400 frames)
SMALL = {"hidden": 16, "replay_start_size": 64, "minibatch_size": 32, "n_envs": 2,
         "n_steps": 16, "update_frequency": 4, "gradient_steps": 1, "epochs": 1,
         "min_batch_size": 32, "n_policy": 1, "aux_minibatch_size": 32, "atoms": 11,
         "replay_buffer_size": 1000}

CASES = [
    *[(f"classic_control.{name}", "CartPole-v1") for name in
      ("a2c", "c51", "ddqn", "dqn", "ppg", "ppo", "rainbow", "vac", "vpg", "vqn", "vsarsa")],
    *[(f"continuous.{name}", "Pendulum-v1") for name in ("ddpg", "ppo", "sac", "td3")],
    ("continuous.sac", "HalfCheetah-v5"),
    ("atari.dqn", "ALE/Pong-v5"),
    ("atari.ppo", "ALE/Pong-v5"),
]


@pytest.mark.parametrize("preset_name, env_id", CASES, ids=[f"{p}-{e}" for p, e in CASES])
def test_every_hook_runs_with_its_keys(preset_name: str, env_id: str, tmp_path: Path) -> None:
    if preset_name.startswith("atari"):
        pytest.importorskip("ale_py")
    if env_id.startswith("HalfCheetah"):
        pytest.importorskip("mujoco")
    builder = available_agents()[preset_name]
    defaults = builder.hyperparameter_defaults
    small = {key: value for key, value in SMALL.items() if key in defaults}
    seed_everything(0)
    env = make_env(preset_name, env_id)
    preset = builder.hyperparameters(**small).env(env).device("cpu").build()
    log: list = []
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0,
                                 train_steps=400, meta=[Recorder("a", log)])
    experiment.train(frames=400)
    experiment.close()
    seen = {hook: metrics for _, hook, metrics in log}
    assert {"pre_episode", "pre_step", "post_step", "pre_update", "post_update"} <= set(seen)
    assert seen["post_step"]["transition"]["reward"].dim() == 1
    assert "losses" in seen["post_update"] and "grad_norm" in seen["post_update"]
    assert any(key.startswith("hp/lr") for key in seen["pre_step"])
