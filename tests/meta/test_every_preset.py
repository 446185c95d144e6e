"""Meta components work with every preset family in local experiments: each hook runs and
sees its documented keys (classic control, continuous control, MuJoCo, Atari), and each
agent declares the ``hp/*`` keys that ``looprl.meta.hyperparameters``' table promises for
its family."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import Recorder
from looprl.environments import MujocoEnvironment
from looprl.environments.atari import AtariEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.meta import hyperparameters
from looprl.presets.catalog import available_agents, make_env

#: small values for the hyperparameters a preset has (fast runs, updates within 400 frames)
SMALL = {"hidden": 16, "replay_start_size": 64, "minibatch_size": 32, "n_envs": 2,
         "n_steps": 16, "update_frequency": 4, "gradient_steps": 1, "epochs": 1,
         "min_batch_size": 32, "n_policy": 1, "aux_minibatch_size": 32, "atoms": 11,
         "replay_buffer_size": 1000}
#: Atari DQN's replay minibatches of 4 (an update of 32 stacked frames costs ~0.1 s)
SMALL_ATARI_DQN = {**SMALL, "minibatch_size": 4}

#: the ``hp/*`` keys of each family (besides one ``hp/lr/<name>`` per optimizer)
ON_POLICY = {"hp/lr", "hp/discount", "hp/lam", "hp/entropy_coef", "hp/value_coef", "hp/epochs"}
PPO = ON_POLICY | {"hp/clip", "hp/batch_size"}
REPLAY = {"hp/lr", "hp/discount", "hp/batch_size", "hp/update_frequency", "hp/gradient_steps"}
DQN = REPLAY | {"hp/epsilon", "hp/target_period"}
ONLINE_Q = {"hp/lr", "hp/discount", "hp/epsilon", "hp/target_period"}
KEYS = {"a2c": ON_POLICY, "vac": ON_POLICY, "vpg": ON_POLICY, "ppo": PPO, "ppg": PPO,
        "dqn": DQN, "ddqn": DQN, "c51": DQN, "rainbow": DQN, "vqn": ONLINE_Q, "vsarsa": ONLINE_Q,
        "ddpg": REPLAY | {"hp/tau"}, "td3": REPLAY | {"hp/tau"}, "sac": REPLAY | {"hp/tau"}}

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
    small = SMALL_ATARI_DQN if preset_name == "atari.dqn" else SMALL
    small = {key: value for key, value in small.items() if key in defaults}
    seed_everything(0)
    frames = 128 if preset_name.startswith("atari") else 400  # Atari: 16 updates of DQN, 4 of PPO
    env = make_env(preset_name, env_id)
    capped = preset_name in ("atari.dqn", "continuous.sac") and env_id != "Pendulum-v1"
    if capped:
        # a single-environment run trains whole episodes: Pong's (~800 steps for an untrained
        # agent) and HalfCheetah's (1,000) are cut at the budget
        env.close()
        env = (AtariEnvironment(env_id, max_episode_frames=4 * frames) if preset_name == "atari.dqn"
               else MujocoEnvironment(env_id, max_episode_steps=frames))
    preset = builder.hyperparameters(**small).env(env).device("cpu").build()
    log: list = []
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0,
                                 train_steps=frames, meta=[Recorder("a", log)])
    experiment.train(frames=frames)
    experiment.close()
    assert experiment.frame == frames or not capped
    seen = {hook: metrics for _, hook, metrics in log}
    assert {"pre_episode", "pre_step", "post_step", "pre_update", "post_update"} <= set(seen)
    assert seen["post_step"]["transition"]["reward"].dim() == 1
    assert "losses" in seen["post_update"] and "grad_norm" in seen["post_update"]
    declared = {key for key in seen["pre_step"] if key.startswith("hp/")}
    rates = {key for key in declared if key.startswith("hp/lr/")}
    assert rates and declared - rates == KEYS[preset_name.split(".")[1]]
    table = hyperparameters.__doc__
    assert all(f"``{key}``" in table for key in declared - rates) and "``hp/lr/<name>``" in table
