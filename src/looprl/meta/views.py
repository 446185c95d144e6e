"""What the hooks receive: the one form of observation rows ``[N, ...]`` and update batches,
made by the hub."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from looprl.core import SampleBatch
from looprl.core.leaves import as_tensor
from looprl.core.namedarray import NamedArray, recursive_apply

__all__ = ["hook_batch", "hook_tensor", "observation_rows"]


def hook_tensor(value: Any) -> torch.Tensor:
    """``value`` as a tensor: a NumPy array's view (a read-only one's copy)."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        value = value.copy()
    return as_tensor(value, None)


def observation_rows(obs: Any) -> torch.Tensor:
    """Observation rows as hooks see them (a ``NamedArray``'s ``obs``; float64 as float32)."""
    rows = hook_tensor(obs["obs"] if isinstance(obs, NamedArray) else obs)
    return rows.float() if rows.dtype == torch.float64 else rows


def hook_batch(batch: SampleBatch) -> SampleBatch:
    """``batch`` as the update hooks see it: every field a tensor, ``obs`` the observation
    rows ``[T + 1, B, ...]``; ``batch`` itself is left as it was."""
    seen = recursive_apply(batch, hook_tensor)
    seen.obs = observation_rows(seen.obs)
    return seen
