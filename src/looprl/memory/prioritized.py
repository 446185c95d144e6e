"""Prioritized experience replay (Schaul et al., 2016, https://arxiv.org/abs/1511.05952):
``P(i) = p_i^alpha / sum_k p_k^alpha``, new transitions at the largest priority seen so far."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from looprl.core.leaves import as_numpy
from looprl.core.suggest import check_count, either, is_number
from looprl.memory.replay import ExperienceReplayBuffer

__all__ = ["Prioritized", "PrioritizedReplayBuffer", "SumTree", "importance_weights"]


def importance_weights(probabilities: torch.Tensor, size: int, beta: float) -> torch.Tensor:
    """Importance-sampling weights ``(size * P(i))^-beta``, divided by the batch's largest."""
    weights = (size * probabilities) ** (-beta)
    return weights / weights.max()


def _tree_leaves(size: int) -> int:
    """The leaves of a ``SumTree`` of ``size``: the power of two from ``size`` up."""
    return 1 << max(0, (size - 1).bit_length())


class SumTree:
    """Binary tree of priorities with subtree sums: node 1 is the root, node ``k`` has children
    ``2k`` and ``2k + 1``, leaf ``i`` is node ``capacity + i`` (a power of two)."""

    def __init__(self, size: int):
        check_count(size=size)
        self.size = int(size)
        self.capacity = _tree_leaves(self.size)
        self.depth = self.capacity.bit_length() - 1
        self.tree = np.zeros(2 * self.capacity, dtype=np.float64)

    @property
    def total(self) -> float:
        """Sum of all priorities."""
        return float(self.tree[1])

    def __getitem__(self, index: Any) -> np.ndarray:
        """Priorities of the leaves ``index``."""
        return self.tree[self.capacity + np.asarray(index)]

    def update(self, index: Any, priorities: Any) -> None:
        """Set the priorities of leaves ``index`` (later duplicates win) and fix the sums."""
        nodes = self.capacity + np.asarray(index, dtype=np.int64).reshape(-1)
        self.tree[nodes] = np.asarray(priorities, dtype=np.float64).reshape(-1)
        for _ in range(self.depth):
            nodes = nodes >> 1  # duplicates recompute the same sum: no need for np.unique
            self.tree[nodes] = self.tree[2 * nodes] + self.tree[2 * nodes + 1]

    def find(self, values: np.ndarray) -> np.ndarray:
        """Leaves ``i`` with ``sum(p[:i]) <= value < sum(p[:i + 1])``, one per value; never a
        leaf of zero priority (values past the total land on the last positive one)."""
        values = np.asarray(values, dtype=np.float64).copy()
        nodes = np.ones(values.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = self.tree[2 * nodes]
            right = (values >= left) & (self.tree[2 * nodes + 1] > 0)
            values -= np.where(right, left, 0.0)
            nodes = 2 * nodes + right
        return nodes - self.capacity


class Prioritized:
    """Proportional prioritization over a buffer's slots (ALL's argument order): ``alpha`` (0:
    uniform), ``beta`` (a float or a schedule), ``epsilon`` (added to priorities)."""

    def __init__(self, size: int | None = None, alpha: float = 0.6, beta: Any = 0.4,
                 epsilon: float = 1e-5, device: str | torch.device = "cpu",
                 generator: torch.Generator | None = None, n_step: int = 1, *,
                 buffer_size: int | None = None):
        size = either("size", size, "buffer_size", buffer_size)
        if isinstance(alpha, (str, torch.device)) or not isinstance(epsilon, (int, float)):
            raise TypeError(f"{type(self).__name__}(size, alpha, beta, epsilon, device) takes "
                            f"ALL's argument order; got alpha={alpha!r}, epsilon={epsilon!r}: "
                            "pass device=... by keyword")
        if not (is_number(beta) or hasattr(type(beta), "value")):
            raise TypeError(f"beta is a number >= 0 or a schedule (e.g. LinearScheduler(0.4, "
                            f"1.0, 0, 100000)), got {beta!r:.40}")
        super().__init__(size, device, generator, n_step)
        for name, value in (("alpha", alpha), ("beta", beta), ("epsilon", epsilon)):
            if isinstance(value, int | float) and not value >= 0:  # (beta: or a schedule)
                raise ValueError(f"{name} must be >= 0, got {value}")
        self.alpha, self.beta, self.epsilon = alpha, beta, epsilon

    def _empty_contents(self) -> dict[str, Any]:
        tree_bytes = 16 * _tree_leaves(self.size)  # (two float64 a leaf)
        with self._allocating(math.ceil(tree_bytes / self.size), "cpu", empty=False):
            fresh = {"tree": SumTree(self.size), "max_priority": 1.0, "_last_index": None}
        return {**super()._empty_contents(), **fresh}

    @property
    def nbytes(self) -> int:
        """Bytes allocated by the storage and the sum tree."""
        return super().nbytes + self.tree.tree.nbytes

    def _draw(self, batch_size: int) -> np.ndarray:
        """Leaves drawn proportionally to priority, one per equal segment of the total."""
        if len(self) == 0:
            raise RuntimeError("Cannot sample from an empty replay buffer")
        total, name = self.tree.total, type(self).__name__
        if total == 0:  # (else every weight is NaN)
            raise ValueError(f"{name}: every priority is 0 (TD errors of 0 with epsilon=0), "
                             "nothing to sample in proportion to; give epsilon > 0 (e.g. 1e-5)")
        if not math.isfinite(total):
            raise FloatingPointError(f"{name}: the priorities sum past float64's range: training "
                                     "diverged; try a lower learning rate or gradient clipping "
                                     "(clip_grad)")
        uniforms = torch.rand(batch_size, generator=self.generator, dtype=torch.float64).numpy()
        return self.tree.find((np.arange(batch_size) + uniforms) * (total / batch_size))

    def weights(self, index: torch.Tensor) -> torch.Tensor:
        """Importance weights ``[n_step + 1, B]`` of ``index`` (remembered)."""
        self._last_index = index.cpu().numpy()
        probabilities = torch.from_numpy(self.tree[self._last_index] / self.tree.total)
        beta = getattr(self.beta, "value", self.beta)  # a schedule: read (and advanced) here
        weights = importance_weights(probabilities, len(self), beta).float().to(self.device)
        return weights.expand(self.n_step + 1, -1)

    def _new_priorities(self, priorities: Any, index: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(index, (|priorities| + epsilon) ** alpha)``; raises ``max_priority``."""
        index = self._last_index if index is None else np.asarray(index).reshape(-1)
        if index is None:
            raise RuntimeError("update_priorities() needs a sample() first")
        priorities = np.abs(np.asarray(as_numpy(priorities), np.float64).reshape(-1)) + self.epsilon
        if priorities.shape != index.shape:
            raise ValueError(f"update_priorities got {priorities.size} priorities for "
                             f"{index.size} transitions: give one per sampled transition "
                             "(the TD errors of the last sample(batch_size), in its order)")
        if not np.isfinite(priorities).all():
            raise FloatingPointError(
                f"update_priorities got non-finite priorities "
                f"{priorities[~np.isfinite(priorities)][:3].tolist()}: training diverged (a NaN "
                "or inf TD error would corrupt every later sample). Try a lower learning rate "
                "or gradient clipping (clip_grad).")
        self.max_priority = max(self.max_priority, float(priorities.max()))
        return index, priorities**self.alpha


class PrioritizedReplayBuffer(Prioritized, ExperienceReplayBuffer):
    """``ExperienceReplayBuffer`` with proportional prioritized replay (``Prioritized``)."""

    def _advance(self, n: int) -> None:
        """New transitions enter at the largest priority seen so far."""
        index = (self._pos + np.arange(n)) % self.size
        self.tree.update(index, self.max_priority**self.alpha)
        super()._advance(n)

    def sample_indices(self, batch_size: int) -> torch.Tensor:
        """Indices drawn proportionally to priority, one per equal segment of the total."""
        return torch.from_numpy(np.minimum(self._draw(batch_size), self._len - 1))

    def update_priorities(self, priorities: Any, index: Any = None) -> None:
        """Set the priorities of ``index`` (default: the last sample's)."""
        self.tree.update(*self._new_priorities(priorities, index))
