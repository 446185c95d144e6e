"""The Ray runtime's view of a preset: ``preset_spec(preset, frames)``.

Presets are their own builders: the spec's ``policy`` and ``trainer`` are the preset's
``policy`` and ``trainer`` methods, so the Ray workers build the very policy (network,
optimizer, gradient clipping, exploration) and trainer (schedules, targets, loss) of the
local agent, with the same hyperparameters.

* On-policy presets (``OnPolicyPreset``: PPO, PPG, A2C, VAC in every family): actors cut
  segments of the preset's ``n_steps`` rows; a trainer steps on ``n_envs`` of them at a
  time, the local rollout's shape.
* Replay presets (``ReplayPreset``: DQN, DDQN, C51, Rainbow on classic control and Atari;
  DDPG, TD3, SAC): the trainer worker keeps the local agent's replay (uniform or prioritized,
  its size, minibatch and start size; ``n_step`` windows cut from the actors' segments, a
  window that would run past a segment's end bootstrapping there; for Atari the frame ring
  that stores each frame once, filled with each segment row's newest frame) and steps at most
  ``gradient_steps / update_frequency`` times per env step it received. Actors explore with
  the policy's own exploration (its epsilon schedule counting each actor's steps, its noisy
  layers, its action noise, its random warm-up), or, with the DQN presets' ``apex=True``,
  at Ape-X's rates, one per actor (``looprl.policies.apex_epsilons``).
* VQN and VSarsa learn online, as on-policy presets with one-step segments.
* VPG (``A2CTrainer`` with ``gae_lambda=1``) learns from whole episodes, as locally: each
  actor stream's segment ends at the first episode end after ``min_batch_size`` steps
  (``AlgorithmSpec.whole_episodes``), and the trainer steps on each such segment alone, so
  its advantages are Monte-Carlo returns minus the baseline, never bootstrapped mid-episode.
* Multi-agent presets (``IndependentMultiagentPreset``: ``multiagent.dqn``, ``multiagent.ppo``,
  ``independent(builder)``): each agent's preset gives its own policy, trainer and buffer
  (its own spec, as above, over its share of the frames); the actors' ``IndependentPolicy``
  answers each row with its agent's policy, and the trainer worker keeps one buffer per
  agent and steps each agent's trainer on its own agent's streams (``IndependentCore``).
  The actors step the PettingZoo environment's SRL adapter (``"pettingzoo"``).

Atari presets play the ``"atari"`` environment (``AtariGameEnvironment``: the same DeepMind
preprocessing, rewards clipped as the preset says); unlike the local presets they do not end
an episode at each lost life (``episodic_life``): the actors report whole games.

Every preset of the four families runs on Ray; any other ``Preset`` is a one-line error.
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
        ValueError: the preset is of no family (the message says which run on Ray), or a
            multi-agent preset asks for what its agents cannot share.
    """
    from looprl.presets.multiagent import IndependentMultiagentPreset

    if isinstance(preset, IndependentMultiagentPreset):
        return _independent_spec(preset, frames, actors, trainers)
    from looprl.policies import apex_epsilons
    from looprl.presets.classic_control.vpg import VPGClassicControlPreset
    from looprl.presets.classic_control.vqn import OnlineClassicControlPreset
    from looprl.presets.off_policy import ReplayPreset
    from looprl.presets.on_policy import OnPolicyPreset

    env, env_args = preset.remote_env()
    train_steps = frames / trainers

    def parts() -> dict[str, Any]:
        return {"env": env, "env_args": env_args, "policy": preset.policy,
                "policy_args": {"copy_model": True},
                "trainer": functools.partial(preset.trainer, train_steps=train_steps)}

    if isinstance(preset, VPGClassicControlPreset):
        spec = AlgorithmSpec(**parts(), buffer="on_policy", buffer_args={"batch_streams": 1},
                             whole_episodes=True)
        return spec, {"segment_length": preset.hyperparameters["min_batch_size"]}
    if isinstance(preset, OnPolicyPreset | OnlineClassicControlPreset):
        spec = AlgorithmSpec(**parts(), buffer="on_policy",
                             buffer_args={"batch_streams": preset.n_envs})
        return spec, {"segment_length": preset.n_steps}
    if isinstance(preset, ReplayPreset):
        buffer, buffer_args = preset.remote_replay(train_steps)
        spec = AlgorithmSpec(**parts(), buffer=buffer, buffer_args=buffer_args,
                             explorations=apex_epsilons(actors) if preset.apex else None)
        return spec, {}
    raise ValueError(f"runtime=ray runs every preset of the families (classic control, Atari, "
                     f"continuous, multi-agent); {preset.name!r} ({type(preset).__name__}) "
                     "is none of them: run it locally (runtime=local), or build an "
                     "AlgorithmSpec in Python")


def _independent_spec(preset: Any, frames: float, actors: int, trainers: int
                      ) -> tuple[AlgorithmSpec, dict[str, Any]]:
    """The spec of independent learners: the preset's ``IndependentPolicy`` and
    ``IndependentTrainer`` over its agents' parts, and each agent's own buffer (from its
    own spec over its share of ``frames``)."""
    env, env_args = preset.remote_env()
    if env is None:
        raise ValueError(f"runtime=ray steps multi-agent presets in PettingZoo environments "
                         f"(MultiagentPettingZooEnv); {preset.name!r} was built for another "
                         "one: run it locally (runtime=local)")
    if trainers > 1:
        raise ValueError(f"{preset.name!r} (independent learners) trains in one trainer "
                         f"worker; set runtime.trainers=1 (got {trainers})")
    share = frames / len(preset.presets)
    agents = [preset_spec(agent, share, actors) for agent in preset.presets.values()]
    lengths = {options["segment_length"] for _, options in agents if options}
    if len(lengths) > 1:
        raise ValueError(f"the agents of {preset.name!r} learn from segments of "
                         f"{sorted(lengths)} steps; give their presets one n_steps")
    if len({str(spec.explorations) for spec, _ in agents}) > 1:
        raise ValueError(f"the agents of {preset.name!r} explore differently on Ray (apex); "
                         "set apex for all of them or for none")
    spec = AlgorithmSpec(
        env=env, env_args=env_args, policy=preset.policy, policy_args={"copy_model": True},
        trainer=functools.partial(preset.trainer, train_steps=frames), buffer="independent",
        buffer_args={"agents": [(spec.buffer, spec.buffer_args) for spec, _ in agents]},
        explorations=agents[0][0].explorations)
    return spec, ({"segment_length": lengths.pop()} if lengths else {})
