"""Gymnasium environments whose constructors take no ``render_mode``, watched by import path
(``tests.experiments.watched_envs:Frames``): one whose ``render()`` still gives RGB frames,
one that does not render."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class NoRender(gym.Env):
    """Three steps of a constant observation; ``__init__`` takes no arguments."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action: Any):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t >= 3, False, {}


class Frames(NoRender):
    """``NoRender`` whose ``render()`` gives an 8 x 8 RGB frame per step."""

    def render(self) -> np.ndarray:
        return np.full((8, 8, 3), 40 * self.t, np.uint8)


class Interrupted(Frames):
    """``Frames`` whose 7th ``render()`` is a Ctrl-C (the user stops watching)."""

    renders = 0

    def render(self) -> np.ndarray:
        self.renders += 1
        if self.renders > 6:
            raise KeyboardInterrupt
        return super().render()
