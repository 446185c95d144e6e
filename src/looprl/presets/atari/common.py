"""Checks shared by the Atari presets."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from looprl.environments.bodies import deepmind_atari_body


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
