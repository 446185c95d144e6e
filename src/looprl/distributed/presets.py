"""The Ray runtime's view of a preset: ``preset_spec(preset, frames)``.

The on-policy presets (PPO, PPG, A2C, VAC, in every family) are their own builders: the
spec's ``policy`` and ``trainer`` are the preset's ``policy`` and ``trainer`` methods, so the
Ray workers build the very policy (network, optimizer, gradient clipping) and trainer
(schedules, targets, loss) of the local agent, with the same hyperparameters. Actors cut
segments of the preset's ``n_steps`` rows; a trainer steps on ``n_envs`` of them at a time,
the local rollout's shape. Atari presets play the ``"atari"`` environment
(``AtariGameEnvironment``: the same DeepMind preprocessing, rewards clipped as the preset
says); unlike the local presets they do not end an episode at each lost life
(``episodic_life``): the actors report whole games.

``dqn`` and ``ddqn`` are still mapped by name onto a ``q-network`` with Ape-X exploration
rates per actor and the local presets' ``DQNTrainer`` on n-step windows of prioritized replay.
The Atari DQN family stays local: its replay of a million frames lives in the local Atari
replay, which stores each frame once, while segments would hold every stacked frame.
"""

from __future__ import annotations

import functools
from typing import Any

from looprl.core import Preset
from looprl.distributed.config import AlgorithmSpec

__all__ = ["apex_epsilons", "preset_spec"]

#: presets mapped by name onto a ready-made policy and trainer (the others are builders)
MAPPED = ("dqn", "ddqn")


def apex_epsilons(n: int, base: float = 0.4, alpha: float = 7.0) -> list[float]:
    """Ape-X's exploration rates ``base ** (1 + alpha * i / (n - 1))`` for ``n`` actors."""
    if n == 1:
        return [base]
    return [float(base ** (1 + alpha * i / (n - 1))) for i in range(n)]


def preset_spec(preset: Preset, frames: float, actors: int = 1, trainers: int = 1
                ) -> tuple[AlgorithmSpec, dict[str, Any]]:
    """The ``AlgorithmSpec`` of a built ``preset`` and the runtime options it implies
    (``segment_length``). Schedules span ``frames`` shared by ``trainers`` trainers, each
    stepping on its own batches.

    Raises:
        ValueError: the preset runs locally only (the message says which run on Ray).
    """
    from looprl.presets.on_policy import OnPolicyPreset

    env, env_args = preset.remote_env()
    if isinstance(preset, OnPolicyPreset):
        trainer = functools.partial(preset.trainer, train_steps=frames / trainers)
        spec = AlgorithmSpec(env=env, env_args=env_args, policy=preset.policy,
                             policy_args={"copy_model": True}, trainer=trainer,
                             buffer_args={"batch_streams": preset.n_envs})
        return spec, {"segment_length": preset.n_steps}
    if preset.name in MAPPED and env != "atari":
        return _q_learning(preset.hyperparameters, env, env_args, actors, *_spaces(env, env_args))
    raise ValueError(f"runtime=ray runs the on-policy presets (ppo, ppg, a2c, vac) and "
                     f"{', '.join(MAPPED)} (classic control); {preset.name!r} on {env!r} runs "
                     "locally only (runtime=local), or build an AlgorithmSpec in Python")


def _spaces(env: str, env_args: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    from looprl.environments.srl import make

    instance = make(env, **env_args)
    try:
        observation, action = instance.observation_spaces[0], instance.action_spaces[0]
    finally:
        instance.close()
    obs_dim = {key: space.shape[0] if len(space.shape) == 1 else tuple(space.shape)
               for key, space in observation.spaces.items() if key != "action_mask"}
    return obs_dim, action


def _q_learning(hp: dict[str, Any], env: str, env_args: dict[str, Any], actors: int,
                obs_dim: dict[str, Any], action: Any) -> tuple[AlgorithmSpec, dict[str, Any]]:
    """Ape-X: the local preset's ``DQNTrainer`` on ``n_steps`` windows (3 unless the preset
    says) from prioritized replay, each actor exploring at its ``apex_epsilons`` rate."""
    if not hasattr(action, "n"):
        raise ValueError(f"dqn needs discrete actions; {env} has {action}")
    n_step = hp.get("n_steps", 3)
    policy_args = {"obs_dim": obs_dim, "action_dim": int(action.n), "hidden_dim": hp["hidden"],
                   "lr": hp["lr"], "clip_grad": hp["clip_grad"] or 0.0,
                   "target_update": hp["target_update_frequency"]}
    trainer_args = {"discount_factor": hp["discount_factor"], "n_step": n_step,
                    "update": hp.get("update", "double_q"), "huber": hp["huber"]}
    buffer_args = {"size": hp["replay_buffer_size"], "batch": hp["minibatch_size"],
                   "min_size": max(hp["replay_start_size"], hp["minibatch_size"]),
                   "alpha": hp.get("alpha", 0.6), "beta": hp.get("beta", 0.4)}
    spec = AlgorithmSpec(env=env, env_args=env_args, policy="q-network",
                         policy_args=policy_args, trainer="dqn", trainer_args=trainer_args,
                         buffer="prioritized", buffer_args=buffer_args,
                         explorations=apex_epsilons(actors))
    return spec, {"segment_length": n_step}
