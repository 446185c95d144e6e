"""Helpers shared by presets: space checks and environment facts."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


def require_discrete_actions(env: Any, algorithm: str) -> int:
    """The number of actions of ``env``; ``ValueError`` if its action space is not discrete."""
    space = env.action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise ValueError(
            f"{algorithm} needs a discrete action space, but {env.name} has {space}; "
            "use a preset for continuous actions (looprl.presets.continuous) instead"
        )
    return int(space.n)


def require_flat_observations(env: Any, algorithm: str) -> int:
    """The size of ``env``'s flat ``Box`` observations; ``ValueError`` otherwise."""
    space = env.observation_space
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise ValueError(
            f"The classic-control {algorithm} preset needs flat Box observations, but "
            f"{env.name} has {space}; use an Atari preset for images"
        )
    return int(space.shape[0])
