"""Means of the keys meta components add to ``metrics['transition']``, logged at the end of
the logging interval as ``log/transition/<key>``. The hub notices added keys by the
dictionary's length alone (no work per step when there are none)."""

from __future__ import annotations

from itertools import islice
from typing import Any

import numpy as np
import torch

__all__ = ["TransitionMeans"]


class TransitionMeans:
    """Running sums (and row counts) of the transition keys components added."""

    def __init__(self) -> None:
        self._sums: dict[str, list[Any]] = {}

    def add(self, transition: dict[str, Any], known: int) -> None:
        """Add the values of ``transition``'s keys after its first ``known`` (the loop's);
        values that are no number or 0-d/1-d numeric tensor or array are left out."""
        for key, value in islice(transition.items(), known, None):
            if (total := _row_sum(value)) is not None:
                old = self._sums.get(key, (0.0, 0))
                self._sums[key] = [old[0] + total[0], old[1] + total[1]]

    def take(self) -> dict[str, float]:
        """The mean of each key since the last call; starts anew."""
        means = {"log/transition/" + key: float(total) / count
                 for key, (total, count) in self._sums.items() if count}
        self._sums.clear()
        return means


def _row_sum(value: Any) -> tuple[Any, int] | None:
    """``(sum, rows)`` of a number or a 0-d/1-d numeric tensor or array; else ``None``."""
    if isinstance(value, bool | int | float | np.number):
        return float(value), 1
    if isinstance(value, torch.Tensor) and value.ndim <= 1 and value.numel():
        if value.is_floating_point() or value.dtype in (torch.bool, torch.int32, torch.int64):
            return value.detach().sum(dtype=torch.float64), value.numel()  # (float32: 2**24)
    if isinstance(value, np.ndarray) and value.ndim <= 1 and value.size:
        if np.issubdtype(value.dtype, np.number) or value.dtype == np.bool_:
            return float(value.sum()), value.size
    return None
