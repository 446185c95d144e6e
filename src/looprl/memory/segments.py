"""``SegmentBuffer``: the rows a collector writes, cut into ``SampleBatch`` segments. Every
``segment_length`` rows a stream (one agent of one env copy) completes a segment, whose last row
starts the next one (``whole_episodes``: at the end of the episode that brings it there). Rows
live in preallocated ``[T + 1, streams]`` NumPy arrays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from looprl.core import RolloutResult, SampleBatch
from looprl.core.leaves import as_numpy
from looprl.core.namedarray import NamedArray, concat, recursive_apply
from looprl.core.suggest import check_count

__all__ = ["SegmentBuffer", "leaves", "rows_of", "segment_rows"]


def leaves(x: Any) -> list[Any]:
    """The arrays of ``x``: a ``NamedArray``'s nested fields flattened (``None`` s left out)."""
    if not isinstance(x, NamedArray):
        return [] if x is None else [x]
    return [leaf for value in x.values() for leaf in leaves(value)]


class SegmentBuffer:
    """Rows of ``streams`` streams, cut into ``SampleBatch`` segments; ``first_stream``: the
    number of stream 0 in the segments' ``stream`` field."""

    _nested: bool | None = None  # some field of the rows is a NamedArray (``_leaves``)

    def __init__(self, segment_length: int, streams: int, whole_episodes: bool = False,
                 first_stream: int = 0):
        check_count(segment_length=segment_length, streams=streams)
        self.segment_length = segment_length
        self.whole_episodes = whole_episodes
        self.rows: SampleBatch | None = None  # [capacity, streams, ...], from the first rows
        self._stores: list[np.ndarray] = []  # the leaves of ``rows``
        self.t = np.zeros(streams, dtype=np.int64)  # rows of each stream's segment so far
        self._steps = np.zeros(streams, dtype=np.int64)  # of them, rows that end no episode
        self._all = np.arange(streams)
        self.first_stream = first_stream
        self._aligned = True  # every stream is at the same row (basic-index writes)
        self._segments: list[SampleBatch] = []
        self._numbered: np.ndarray | None = None  # ``stream`` of segments of every stream

    def write(self, streams: np.ndarray | None, rows: SampleBatch,
              ended: np.ndarray | None) -> None:
        """Write ``rows`` (``[len(streams), ...]``) of ``streams`` (``None``: all); ``ended``:
        whether each ends its episode (read with ``whole_episodes`` only)."""
        every = streams is None
        if self.rows is None:
            self._allocate(rows)
        if every and not self._aligned:
            self._aligned = self.t.min() == self.t.max()
        t = self.t if every else self.t[streams]
        if self.whole_episodes and t.max() == len(self.rows.reward):  # full: double it
            self.rows = recursive_apply(self.rows, lambda x: np.concatenate((x, np.zeros_like(x))))
            self._stores = leaves(self.rows)
        if every and self._aligned:  # one row of every stream: basic-index writes
            row = int(t[0])
            for store, value in zip(self._stores, self._leaves(rows), strict=True):
                store[row] = value
            t.fill(row + 1)  # (every stream is at ``row``: cheaper than ``+= 1``)
            if not self.whole_episodes:  # all streams complete their segments together
                if row == self.segment_length:
                    self._cut_all()
                return
        else:
            self._aligned = False
            streams = self._all if every else streams
            for store, value in zip(self._stores, self._leaves(rows), strict=True):
                store[t, streams] = value
            self.t[streams] = t + 1
        self._cut(self._all if every else streams, ended)

    def _allocate(self, rows: SampleBatch) -> None:
        capacity, n = self.segment_length + 1, len(self.t)
        self.rows = recursive_apply(rows, lambda x: np.zeros((capacity, n, *np.shape(x)[1:]),
                                                             np.asarray(x).dtype))
        self._stores = leaves(self.rows)
        self._nested = any(isinstance(value, NamedArray) for value in rows.values())

    def _leaves(self, rows: SampleBatch) -> list[Any]:
        """``leaves(rows)``: one comprehension for rows of no nested field (as the first ones)."""
        if self._nested is False:
            return [value for value in rows.values() if value is not None]
        return leaves(rows)

    def _cut(self, streams: np.ndarray, ended: np.ndarray | None) -> None:
        """Copy out the segments the rows just written complete."""
        t, length = self.t[streams], self.segment_length
        if not self.whole_episodes:
            full = streams[t == length + 1]
            if len(full) == len(self.t):  # every stream at once: plain copies
                self._cut_all()
            elif len(full):
                self._add(self.rows[:, full], full)  # a copy (an index array)
                self.rows[0, full] = self.rows[length, full]
                self.t[full] = 1
            return
        self._steps[streams] += ~ended
        for s in streams[ended & (self._steps[streams] >= length)].tolist():
            self._add(self.rows[: self.t[s], [s]], [s])
            self.t[s] = self._steps[s] = 0
            self._aligned = False

    def _cut_all(self) -> None:
        """Copy out the segment every stream just completed; its last row starts the next."""
        self._add(recursive_apply(self.rows, np.copy), self._all)
        for store in self._stores:
            store[0] = store[self.segment_length]
        self.t[:] = 1

    def _add(self, segment: SampleBatch, streams: Any) -> None:
        """Keep ``segment`` (a copy of rows) of ``streams``, numbered in its ``stream``."""
        length = len(segment.reward)
        if streams is self._all and length == self.segment_length + 1:  # (the same each time)
            numbers = self._numbered
            if numbers is None:
                numbers = self._numbered = np.repeat(self.first_stream + self._all[None],
                                                     length, 0)
        else:
            numbers = np.repeat(self.first_stream + np.asarray(streams)[None], length, 0)
        segment.stream = numbers
        self._segments.append(segment)

    def end_episodes(self, streams: np.ndarray) -> None:
        """The latest rows of ``streams`` end their episodes as truncated."""
        streams = streams[self.t[streams] > 0]
        if not len(streams):  # (none has rows yet)
            return
        self.rows.truncated[self.t[streams] - 1, streams] = True
        self._cut(streams, np.ones(len(streams), dtype=bool))

    def segments(self) -> list[SampleBatch]:
        """The segments finished since the last call (``batched``)."""
        if not self._segments:  # (most steps finish none)
            return []
        done, self._segments = self._segments, []
        return batched(done)


def batched(segments: Sequence[SampleBatch]) -> list[SampleBatch]:
    """``segments`` concatenated along dim 1 where their shapes match."""
    if len(segments) < 2:
        return list(segments)
    groups: dict[str, list[SampleBatch]] = {}
    for segment in segments:
        groups.setdefault(str(segment.shape), []).append(segment)
    return [group[0] if len(group) == 1 else concat(group, dim=1) for group in groups.values()]


def segment_rows(obs: Any, action: np.ndarray, reward: np.ndarray, done: np.ndarray,
                 truncated: np.ndarray, result: RolloutResult, version: np.ndarray,
                 policy_state: Any = None, agent: np.ndarray | None = None) -> SampleBatch:
    """One row per stream for ``SegmentBuffer.write`` (the collector's and the ``Actor``'s): what
    it saw and did, ``result``'s ``log_prob`` and ``value`` as float32, ``version`` per row."""
    return SampleBatch(obs=obs, action=action, reward=reward, done=done, truncated=truncated,
                       policy_state=policy_state, log_prob=_float32(result.log_prob),
                       value=_float32(result.value), policy_version=version, agent=agent)


def _float32(value: Any) -> np.ndarray | None:
    """``value`` as a float32 array (of a float32 tensor: a view)."""
    return None if value is None else np.asarray(as_numpy(value), dtype=np.float32)


def rows_of(obs: Any, reward: Any, end: Any, mask: Any, result: RolloutResult, version: int
            ) -> tuple[SampleBatch, np.ndarray]:
    """``(rows, ended)`` for ``SegmentBuffer.write`` from what an agent's ``act`` sees
    (``mask``: 0 where the end is terminal); ``ValueError`` for a recurrent policy."""
    if result.policy_state is not None:
        raise ValueError("the local on-policy agents run feed-forward policies; train "
                         "recurrent ones with runtime=ray (looprl.distributed)")
    n = len(result.action)

    def column(x: Any, dtype: Any) -> np.ndarray:
        x = as_numpy(x)
        if isinstance(x, np.ndarray) and x.shape == (n,):
            return x if x.dtype == dtype else x.astype(dtype)
        return np.full(n, x, dtype)  # one value (a single state)

    ended, terminal = column(end, bool), column(mask, np.float32) == 0
    rows = segment_rows(as_numpy(obs), as_numpy(result.action), column(reward, np.float32),
                        ended & terminal, ended & ~terminal, result, np.full(n, version, np.int64))
    return rows, ended
