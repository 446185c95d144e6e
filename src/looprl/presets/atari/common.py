"""Checks shared by the Atari presets."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


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
