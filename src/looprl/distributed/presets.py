"""The Ray runtime's view of a preset: ``preset_spec(preset, frames)``.

Presets are their own builders: the spec's ``policy`` and ``trainer`` are the preset's
``policy`` and ``trainer`` methods, so the Ray workers build the very policy (network,
optimizer, gradient clipping, exploration) and trainer (schedules, targets, loss) of the
local agent, with the same hyperparameters. The actors make the preset's environment with
the arguments it was made with (``Preset.remote_env``), and the meta components attached
to the preset (``PresetBuilder.meta``) run on the workers as the spec's ``meta``.

* On-policy presets (``OnPolicyPreset``: PPO, PPG, A2C, VAC in every family): actors cut
  segments of the preset's ``n_steps`` rows; a trainer steps on ``n_envs`` of them at a
  time, the local rollout's shape.
* Replay presets (``ReplayPreset``: DQN, DDQN, C51, Rainbow on classic control; DDPG, TD3,
  SAC): the trainer worker keeps the local agent's replay (uniform or prioritized, its size,
  minibatch and start size; ``n_step`` windows cut from the actors' segments, a window that
  would run past a segment's end bootstrapping there) and steps at most
  ``gradient_steps / update_frequency`` times per env step it received. Actors explore with
  the policy's own exploration (its epsilon schedule counting each actor's steps, its noisy
  layers, its action noise, its random warm-up), or, with the DQN presets' ``apex=True``,
  at Ape-X's rates, one per actor (``looprl.policies.apex_epsilons``).
* VQN and VSarsa learn online, as on-policy presets with one-step segments.

Atari presets play the ``"atari"`` environment (``AtariGameEnvironment``: the same DeepMind
preprocessing, rewards clipped as the preset says); unlike the local presets they do not end
an episode at each lost life (``episodic_life``): the actors report whole games. The Atari
DQN family stays local: its replay of a million frames lives in the local Atari replay, which
stores each frame once, while segments would hold every stacked frame.
"""

from __future__ import annotations

import functools
from typing import Any

from looprl.core import Preset
from looprl.distributed.config import AlgorithmSpec

__all__ = ["preset_spec"]


def preset_spec(preset: Preset, frames: float, actors: int = 1, trainers: int = 1
                ) -> tuple[AlgorithmSpec, dict[str, Any]]:
    """The ``AlgorithmSpec`` of a built ``preset`` and the runtime options it implies
    (``segment_length`` of on-policy presets). Schedules span ``frames`` shared by
    ``trainers`` trainers, each stepping on its own batches.

    Raises:
        ValueError: the preset runs locally only (the message says which run on Ray).
    """
    from looprl.policies import apex_epsilons
    from looprl.presets.classic_control.vqn import OnlineClassicControlPreset
    from looprl.presets.off_policy import ReplayPreset
    from looprl.presets.on_policy import OnPolicyPreset

    env, env_args = preset.remote_env()
    train_steps = frames / trainers

    def parts() -> dict[str, Any]:
        return {"env": env, "env_args": env_args, "policy": preset.policy,
                "policy_args": {"copy_model": True},
                "trainer": functools.partial(preset.trainer, train_steps=train_steps),
                "meta": list(preset.meta)}

    if isinstance(preset, OnPolicyPreset | OnlineClassicControlPreset):
        spec = AlgorithmSpec(**parts(), buffer="on_policy",
                             buffer_args={"batch_streams": preset.n_envs})
        return spec, {"segment_length": preset.n_steps}
    if isinstance(preset, ReplayPreset) and env != "atari":
        buffer, buffer_args = preset.remote_replay(train_steps)
        spec = AlgorithmSpec(**parts(), buffer=buffer, buffer_args=buffer_args,
                             explorations=apex_epsilons(actors) if preset.apex else None)
        return spec, {}
    raise ValueError(f"runtime=ray runs the on-policy presets (ppo, ppg, a2c, vac), the "
                     f"classic-control value-based ones (dqn, ddqn, c51, rainbow, vqn, vsarsa) "
                     f"and the continuous ones (ddpg, td3, sac); {preset.name!r} on {env!r} "
                     "runs locally only (runtime=local), or build an AlgorithmSpec in Python")
