"""DeepSea, bsuite's exploration benchmark (Osband et al., 2019), as ``looprl/DeepSea-v0``: an
``N x N`` grid descended one row a step, moving left or right; moving right costs
``move_cost / N``, and out of the bottom-right cell pays 1."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["DeepSea"]


class DeepSea(gym.Env):
    """The deterministic DeepSea of side ``size``; ``randomize_actions``: which action is 'right'
    per cell is drawn (from ``mapping_seed``), else it is 1. Observations: the one-hot position."""

    def __init__(self, size: int = 10, randomize_actions: bool = True, mapping_seed: int = 0,
                 move_cost: float = 0.01):
        if size < 1:
            raise ValueError(f"DeepSea size must be at least 1, got {size}")
        self.size = int(size)
        self.move_cost = float(move_cost)
        if randomize_actions:
            rng = np.random.RandomState(mapping_seed)
            self.action_mapping = rng.binomial(1, 0.5, [self.size, self.size])
        else:
            self.action_mapping = np.ones([self.size, self.size], dtype=np.int64)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.size * self.size,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.row = self.column = 0

    @property
    def optimal_return(self) -> float:
        """The return of going right ``N`` times: ``1 - move_cost``."""
        return 1.0 - self.move_cost

    def _observation(self) -> np.ndarray:
        observation = np.zeros(self.size * self.size, dtype=np.float32)
        if self.row < self.size:
            observation[self.row * self.size + self.column] = 1.0
        return observation

    def reset(self, *, seed: int | None = None, options: dict | None = None
              ) -> tuple[np.ndarray, dict]:
        """Back to the top-left cell."""
        super().reset(seed=seed)
        self.row = self.column = 0
        return self._observation(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """One row down, moving right for the cell's "right" action (0 or 1), else left."""
        if self.row >= self.size:
            raise RuntimeError("DeepSea episode has ended: call reset()")
        if not self.action_space.contains(action):
            raise ValueError(f"Invalid DeepSea action {action!r}: use 0 or 1")
        right = int(action) == self.action_mapping[self.row, self.column]
        reward = float(self.column == self.size - 1) - self.move_cost / self.size if right else 0.0
        self.column = min(max(self.column + (1 if right else -1), 0), self.size - 1)
        self.row += 1
        terminated = self.row == self.size
        return self._observation(), reward, terminated, False, {}


if "looprl/DeepSea-v0" not in gym.registry:
    gym.register("looprl/DeepSea-v0", entry_point="looprl.environments.deepsea:DeepSea")
