"""Trainer-side buffers of sample segments (``SampleBatch``, time-major ``[T + 1, B]``):
``OnPolicyBuffer`` and the replay buffers, built by ``make_sample_buffer``."""

from __future__ import annotations

from typing import Any

import numpy as np

from looprl.core import SampleBatch
from looprl.core.leaves import as_numpy
from looprl.core.namedarray import NamedArray, recursive_apply
from looprl.core.suggest import check_choice, check_count
from looprl.memory.atari_replay import AtariReplayBuffer, PrioritizedAtariReplayBuffer
from looprl.memory.prioritized import PrioritizedReplayBuffer
from looprl.memory.replay import ExperienceReplayBuffer

__all__ = ["REPLAY_KINDS", "OnPolicyBuffer", "make_sample_buffer"]


def _rows_and_streams(sample: SampleBatch) -> tuple[int, int]:
    """``(T + 1, B)`` of a segment, read from ``reward``."""
    shape = None if sample.reward is None else tuple(np.shape(sample.reward))
    if shape is None or len(shape) != 2:
        raise ValueError(f"a sample segment needs reward of shape [T + 1, B], got {shape}")
    return shape  # type: ignore[return-value]


def _columns(sample: SampleBatch, index: slice) -> SampleBatch:
    """The streams ``index`` of a time-major segment."""
    return recursive_apply(sample, lambda leaf: leaf[:, index])


class OnPolicyBuffer:
    """Collects fresh segments into batches of ``batch_streams`` streams (columns), dropping
    those whose oldest ``policy_version`` is more than ``max_lag`` versions behind."""

    def __init__(self, batch_streams: int, max_lag: int | None = None):
        check_count(batch_streams=batch_streams)
        if max_lag is not None and max_lag < 0:
            raise ValueError(f"max_lag must be >= 0 or None, got {max_lag}")
        self.batch_streams, self.max_lag = batch_streams, max_lag
        self._pending: list[SampleBatch] = []
        self._rows: int | None = None

    def __len__(self) -> int:
        """Streams waiting to be batched."""
        return sum(_rows_and_streams(s)[1] for s in self._pending)

    def put(self, sample: SampleBatch, current_version: int) -> bool:
        """Keep ``sample`` (return ``True``) unless it is too old for ``current_version``;
        ``ValueError`` if its length differs from the ones before (``batch_streams > 1``)."""
        rows, _ = _rows_and_streams(sample)
        if self._stale(sample, current_version):
            return False
        if self._rows is not None and rows != self._rows and self.batch_streams > 1:
            raise ValueError(f"segments batched {self.batch_streams} at a time must all have "
                             f"T + 1 = {self._rows} rows, got {rows} (segments of whole "
                             "episodes need batch_streams=1)")
        self._rows = rows
        self._pending.append(sample)
        return True

    def drop_stale(self, current_version: int) -> int:
        """Drop pending segments now more than ``max_lag`` versions behind; return how many
        streams went."""
        streams = len(self)
        self._pending = [s for s in self._pending if not self._stale(s, current_version)]
        return streams - len(self)

    def _stale(self, sample: SampleBatch, current_version: int) -> bool:
        versions = getattr(sample, "policy_version", None)
        return (self.max_lag is not None and versions is not None
                and current_version - int(np.min(as_numpy(versions))) > self.max_lag)

    def ready(self) -> bool:
        """Whether ``get`` can return a full batch."""
        return len(self) >= self.batch_streams

    def get(self) -> SampleBatch:
        """The oldest ``batch_streams`` pending streams as one batch (``RuntimeError`` if not
        ``ready()``)."""
        if not self.ready():
            raise RuntimeError(f"OnPolicyBuffer holds {len(self)} of {self.batch_streams} streams")
        parts, need = [], self.batch_streams
        while need:
            sample = self._pending.pop(0)
            streams = _rows_and_streams(sample)[1]
            if streams > need:
                self._pending.insert(0, _columns(sample, slice(need, None)))
                sample = _columns(sample, slice(0, need))
            parts.append(sample)
            need -= min(streams, need)
        return parts[0] if len(parts) == 1 else NamedArray.cat(parts, dim=1)


#: The buffer of each kind a trainer names.
_KINDS = {"on_policy": OnPolicyBuffer, "uniform": ExperienceReplayBuffer,
          "prioritized": PrioritizedReplayBuffer, "atari_uniform": AtariReplayBuffer,
          "atari_prioritized": PrioritizedAtariReplayBuffer}
#: the kinds that replay (every kind but ``"on_policy"``)
REPLAY_KINDS = tuple(kind for kind in _KINDS if kind != "on_policy")


def check_sample_buffer(kind: str | None, owner: str, also: tuple[str, ...] = ()) -> None:
    """A one-line ``ValueError`` for a ``kind`` that is no key of ``_KINDS`` nor of ``also``
    (``owner``: whose it is); ``None`` (the trainer's kind) passes."""
    if kind is not None:
        check_choice(f"{owner} buffer", kind, [*_KINDS, *also])


def make_sample_buffer(kind: str, **kwargs: Any) -> Any:
    """The buffer of ``kind`` (a key of ``_KINDS``, as a trainer's ``sample_buffer`` names
    it), built with ``kwargs``; a one-line ``ValueError`` if unknown."""
    check_choice("sample buffer", kind, list(_KINDS))
    return _KINDS[kind](**kwargs)
