"""What the Atari presets share: checks, the DeepMind bodies, and the base of the replay
presets (``AtariReplayPreset``: DQN, DDQN, C51, Rainbow)."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym

from looprl.agents.dqn import DQN
from looprl.environments.bodies import deepmind_atari_body
from looprl.memory.atari_replay import AtariReplayBuffer, PrioritizedAtariReplayBuffer
from looprl.presets.off_policy import QPreset
from looprl.presets.parts import beta_schedule


def require_frames(env: Any, algorithm: str) -> int:
    """The number of stacked frames of ``env``'s ``(frames, H, W)`` uint8 observations.

    Raises:
        ValueError: the observations are not stacked uint8 frames.
    """
    space = env.observation_space
    if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 3 and space.dtype == "uint8"):
        raise ValueError(
            f"The Atari {algorithm} preset needs stacked uint8 frames (frames, H, W), but "
            f"{env.name} has {space}; use AtariEnvironment or a classic-control preset"
        )
    return int(space.shape[0])


class DeepMindBody:
    """``_wrap`` for presets: the DeepMind Atari bodies around the agent, switched by the
    ``episodic_life`` and ``clip_rewards`` hyperparameters."""

    hyperparameters: dict[str, Any]
    env_name: str | None

    def _wrap(self, agent: Any) -> Any:
        hp = self.hyperparameters
        return deepmind_atari_body(agent, hp["episodic_life"], hp["clip_rewards"])

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        """Ray actors play the game in the ``"atari"`` environment (the same preprocessing,
        rewards clipped as ``clip_rewards`` says; whole games, not lives)."""
        clip = bool(self.hyperparameters["clip_rewards"])
        return "atari", {"game": self.env_name, "clip_rewards": clip}


class AtariReplayPreset(DeepMindBody, QPreset):
    """Base of the Atari DQN family: a ``QPreset`` whose replay is the frame ring that
    stores each frame once (``AtariReplayBuffer`` of ``replay_buffer_size`` slots, or with
    ``prioritized`` ``PrioritizedAtariReplayBuffer``, beta annealed to 1) with ``n_steps``-step
    windows (1 without that hyperparameter), and whose local agent wears the DeepMind bodies.
    On Ray the trainer worker keeps the same ring and fills it from the actors' segments
    (``remote_replay``: ``"atari_uniform"`` or ``"atari_prioritized"``).
    """

    @property
    def n_step(self) -> int:
        return int(self.hyperparameters.get("n_steps", 1))

    def replay_buffer(self, train_steps: float = math.inf) -> AtariReplayBuffer:
        hp = self.hyperparameters
        size, device = hp["replay_buffer_size"], self.device
        if not self.prioritized:
            return AtariReplayBuffer(size, device, n_step=self.n_step)
        return PrioritizedAtariReplayBuffer(size, device, n_step=self.n_step, alpha=hp["alpha"],
                                            beta=beta_schedule(hp, train_steps))

    def remote_replay(self, train_steps: float = math.inf) -> tuple[str, dict[str, Any]]:
        kind, args = super().remote_replay(train_steps)
        return f"atari_{kind}", args

    def _agent(self, policy: Any, trainer: Any, buffer: Any, logger: Any, **schedule: Any
               ) -> Any:
        return self._wrap(DQN(policy, trainer, buffer, **schedule))
