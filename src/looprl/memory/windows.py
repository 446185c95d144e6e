"""N-step windows: the rows ``t .. t + n`` of a stream that one replay item holds, cut out of
``{field: rows}`` dicts (``obs`` a tensor or a ``NamedArray``)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from looprl.core.namedarray import recursive_apply
from looprl.memory.segments import leaves

__all__ = ["fields", "n_step_windows", "same_rows", "stream_numbers", "window_rows"]


def n_step_windows(rows: dict[str, Any], start: Any, n: int, cut: bool
                   ) -> tuple[dict[str, Any], Any]:
    """``({field: [k, n + 1, ...]}, waiting)``: the complete ``n``-step windows of ``rows``
    ``{field: [L, B, ...]}`` (tensors or all NumPy arrays), and per column how many wait.

    Row ``t`` of column ``b`` is a transition when ``start[b] <= t < L - 1`` and it ends no
    episode; its window is complete when its ``n`` steps are there or its episode ends by row
    ``L - 1``; with ``cut``, one running past row ``L - 1`` ends there, marked ``truncated``.
    """
    ended = rows["done"] | rows["truncated"]  # [L, B]
    xp = np if isinstance(ended, np.ndarray) else torch
    index, past, fits = _window_rows(ended.shape[0], n, None if xp is np else ended.device)
    moves = (index[:, :1] >= start) & ~ended[:-1]  # [L - 1, B]: transitions
    if cut:
        take, waiting = moves, xp.zeros_like(start)
    else:
        seen = ended.cumsum(0)  # an episode ends in rows t + 1 .. L - 1:
        take = moves & (fits | (seen[-1] > seen[:-1]))
        waiting = (moves & ~take).sum(0)
    t, b = xp.where(take)
    index, b = index[t], b[:, None]  # [k, n + 1] rows of columns [k, 1]
    items = fields(rows, lambda leaf: leaf[index, b])  # [L, B, ...] -> [k, n + 1, ...]
    items["truncated"] |= past[t] & ~items["done"]
    return items, waiting


@functools.lru_cache(maxsize=64)
def _window_rows(length: int, n: int, device: Any) -> tuple[Any, ...]:
    """Each window's rows ``[L - 1, n + 1]`` (clamped at row ``L - 1``), which run past it, and
    whether its ``n`` steps fit ``[L - 1, 1]`` (NumPy arrays for ``device`` ``None``)."""
    last = length - 1
    index = np.arange(last)[:, None] + np.arange(n + 1)
    past = (index >= last) & (index[:, -1:] > last)
    windows = index.clip(max=last), past, index[:, -1:] <= last
    return windows if device is None else tuple(torch.as_tensor(x, device=device)
                                                 for x in windows)


def fields(rows: dict[str, Any], fn: Any) -> dict[str, Any]:
    """``fn`` applied to every leaf of ``rows``."""
    return {key: recursive_apply(value, fn) for key, value in rows.items()}


def same_rows(held: Any, rows: Any) -> torch.Tensor:
    """Per column, whether the last row of ``held`` equals the first of ``rows``."""
    equal = [(a[-1] == b[0]).reshape(b.shape[1], -1).all(1)
             for a, b in zip(leaves(held), leaves(rows), strict=True)]
    return torch.stack(equal).all(0)


def window_rows(sample: Any, obs: Any) -> dict[str, Any]:
    """The rows ``{field: [T + 1, B, ...]}`` of a segment that ``n_step_windows`` reads."""
    return {"obs": obs, "action": torch.as_tensor(sample.action),
            "reward": torch.as_tensor(sample.reward), "done": torch.as_tensor(sample.done).bool(),
            "truncated": torch.as_tensor(sample.truncated).bool()}


def stream_numbers(stream: Any, shape: torch.Size) -> list[int]:
    """Each column's stream number, from a segment's ``stream`` ``[T + 1, B]``."""
    stream = torch.as_tensor(stream)
    if stream.shape != shape:
        raise ValueError(f"SampleBatch.stream has shape {tuple(stream.shape)}; it numbers each "
                         f"column's stream at every row, like reward's {tuple(shape)}")
    return stream[0].tolist()
