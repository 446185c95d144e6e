"""Replay for stacked uint8 frames that stores each frame once (the DQN replay memory).

One ring of single frames; stacks are rebuilt when sampling (1M transitions: about 7.1 GB
instead of 56 GB). Slot ``k`` holds the newest frame of one state and the transition out of
it; a sequence of transitions goes on in slot ``k + 1``. A sequence's first state takes the
ring's newest frames as its older ones where they are (after a lost life, the frames go on).
Writing a slot invalidates the transitions that needed the frame it overwrites. The n-step
windows are cut from each sequence's rows by ``memory.windows.n_step_windows``, as
``ExperienceReplayBuffer``'s: a transition is sampled once its window is complete, the slots
``k .. k + steps[k]``. ``put`` with ``stream`` numbers goes on with a stream's sequence in
place when its next column starts where it stopped and nothing was written after it (each
frame written once); otherwise the transitions still waiting at a column's end are written
again at the start of the stream's next column, where their windows complete.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from looprl.core import NamedArray, SampleBatch, State, StateArray
from looprl.core.namedarray import as_numpy
from looprl.memory.prioritized import Prioritized
from looprl.memory.replay import ReplayContents
from looprl.memory.windows import n_step_windows, segment_rows, stream_numbers

__all__ = ["AtariReplayBuffer", "PrioritizedAtariReplayBuffer"]

log = logging.getLogger(__name__)

#: The storage arrays, one entry per slot.
_ARRAYS = ("frames", "action", "reward", "mask", "done", "steps")

#: The most transitions ``store`` writes before it cuts their windows.
_STORE_CHUNK = 32

#: Pending priority changes kept before ``PrioritizedAtariReplayBuffer`` applies them anyway.
_MAX_PENDING_UPDATES = 4096


class AtariReplayBuffer(ReplayContents):
    """Uniform replay of (n-step) transitions between stacked frames, shifting by one frame
    per step (those that do not are skipped, and counted in ``skipped``); ``size``: capacity
    in frames; ``device``: of sampled batches (storage stays in CPU memory)."""

    _min_size = 2
    skipped = 0  # transitions skipped because their frames did not continue
    _tail: int | None = None  # (buffers pickled before streams went on in place)

    @property
    def nbytes(self) -> int:
        """Bytes allocated by the storage (0 before the first transition)."""
        return 0 if self.frames is None else sum(getattr(self, a).nbytes for a in _ARRAYS)

    @property
    def ready(self) -> torch.Tensor | None:
        """Whether each slot holds a transition that can be sampled."""
        self._flush()
        return None if self.steps is None else self.steps > 0

    def __len__(self) -> int:
        """The number of transitions that can be sampled."""
        self._flush()
        return self._count

    def _empty_contents(self) -> dict[str, Any]:
        # _count: ready transitions; _open: the rows [slot, done, truncated] of the sequence
        # store goes on with, from its first transition not ready yet; _last: the state whose
        # newest frame is at _pos - 1; _carry: per stream (put), the rows of its last column
        # from its first waiting transition; _tail: the stream whose last state is at _pos - 1
        counters = {"stack": 0, "_pos": 0, "_filled": 0, "_count": 0}
        return {**dict.fromkeys(_ARRAYS), **counters, "_open": None, "_last": None,
                "_carry": {}, "_tail": None, "_views": {}}

    def _allocate(self, observation: torch.Tensor, action: torch.Tensor) -> None:
        self.stack = int(observation.shape[0])
        if self.size < self.stack + self.n_step + 1:
            raise ValueError(f"Replay size {self.size} is too small for stacks of {self.stack} "
                             f"and {self.n_step}-step returns")
        self.frames = torch.empty((self.size, *observation.shape[1:]), dtype=observation.dtype)
        self.action = torch.zeros((self.size, *action.shape), dtype=action.dtype)
        self.reward = torch.zeros(self.size, dtype=torch.float32)
        self.mask = torch.zeros(self.size, dtype=torch.float32)
        self.done = torch.zeros(self.size, dtype=torch.bool)
        self.steps = torch.zeros(self.size, dtype=torch.int16)  # the window's; 0: not ready
        self._views = self._numpy_views()

    def _numpy_views(self) -> dict[str, np.ndarray]:
        """NumPy views of the same memory (cheaper writes)."""
        arrays = {key: getattr(self, key) for key in _ARRAYS}
        return {key: array.numpy() for key, array in arrays.items() if array is not None}

    def store(self, state: State | None, action: Any, next_state: State) -> None:
        """Store the transition ``state --action--> next_state`` (its window is cut when the
        buffer is next read, or 32 transitions later)."""
        if isinstance(state, StateArray) or isinstance(next_state, StateArray):
            raise TypeError("AtariReplayBuffer stores single-environment transitions, not batches")
        if state is None or state.done:
            return
        first = state is not self._last  # the first transition of a new sequence of frames
        if first:
            self._close()
        observation, next_observation = state.observation, next_state.observation
        if not torch.equal(observation[1:], next_observation[:-1]):
            self._skip()
            self._close()
            return
        terminal, ended = float(next_state.mask) == 0, bool(next_state.done)
        k = self._write(observation, action, next_observation, float(next_state.reward),
                        float(not terminal), ended, first)
        rows = [[k, False, False]] if first else self._open
        rows.append([(k + 1) % self.size, ended and terminal, ended and not terminal])
        self._open, self._last = rows, next_state
        if len(rows) > min(_STORE_CHUNK, self.size - self.stack - 1):
            self._flush()  # (before a write could overwrite its first transition's frames)

    def _flush(self, cut: bool = False) -> None:
        """Let the transitions ``store`` wrote whose windows are complete be sampled (all of
        them if ``cut``: the sequence ends at its last state)."""
        rows = self._open
        if rows is not None and len(rows) > 1:
            slots, steps, waiting = _windows(np.array(rows), self.n_step, cut)
            for k, m in zip(slots, steps):
                self._mark(k, m)
            del rows[: len(rows) - waiting - 1]

    def _close(self) -> None:
        """End ``store``'s sequence: the windows still waiting stop at its last state."""
        self._flush(cut=True)
        self._open = self._last = None

    def _settle(self) -> None:
        """Bring the storage up to date before it is read (``_flush``)."""
        self._flush()

    def put(self, sample: SampleBatch, current_version: int | None = None) -> bool:
        """Store each training row of ``[T + 1, B]`` segments; ``current_version`` is ignored."""
        self._close()
        rows = segment_rows(sample, _frames(sample.obs))
        breaks = _breaks(rows)
        self._skip(int(breaks.sum()))
        rows["skip"] = torch.from_numpy(breaks)
        streams = (None if sample.stream is None
                   else stream_numbers(sample.stream, rows["reward"].shape))
        for b in range(rows["reward"].shape[1]):
            column = {key: value[:, b] for key, value in rows.items()}
            if streams is None:
                self._write_column(column, cut=True)
            else:
                self._continue_stream(column, streams[b])
        return True

    def _skip(self, count: int = 1) -> None:
        """Count ``count`` skipped transitions (a warning the first time)."""
        if count and not self.skipped:
            log.warning("AtariReplayBuffer skipped a transition whose next observation does "
                        "not continue the frame stack (stacked frames must shift by one per step)")
        self.skipped += count

    def _continue_stream(self, column: dict[str, torch.Tensor], stream: int) -> None:
        """Write ``column`` after the transitions ``stream`` left waiting (in place if its last
        state is the newest one written and ``column`` starts with it); carry the new ones."""
        carry = self._carry.pop(stream, None)
        held = 0 if carry is None else len(carry["obs"]) - 1  # its waiting transitions
        in_place = self._tail == stream  # (its last state's frames end at _pos - 1)
        last = (_newest(self._views["frames"], self._pos, self.stack) if in_place
                else None if carry is None else as_numpy(carry["obs"][-1]))
        goes_on = last is not None and _same(last, as_numpy(column["obs"][0]))
        if carry is not None and not goes_on:  # a restarted actor: they end there
            self._write_column(carry, cut=True, held=held if in_place else None)
        elif carry is not None:  # one sequence with the carry (the joint row: column's)
            column = {key: torch.cat([carry[key][:-1], value]) for key, value in column.items()}
        waiting, newest = self._write_column(column, cut=self.n_step == 1,  # (none waits)
                                             held=held if in_place and goes_on else None)
        self._tail = stream if newest else None
        if waiting:
            self._carry[stream] = {key: value[-waiting - 1 :].clone()
                                   for key, value in column.items()}

    def _write_column(self, column: dict[str, torch.Tensor], cut: bool,
                      held: int | None = None) -> tuple[int, bool]:
        """Write the transitions of one segment column ``[L]``, a new sequence after each end
        or skipped transition, those whose windows are complete ready (``_windows``); its first
        ``held`` are in the ring already, row ``held`` the newest state (in place; ``None``: a
        new sequence). Return how many wait and whether its last row is the newest state."""
        terminal, truncated, skip = (column[key].numpy() for key in ("done", "truncated", "skip"))
        end, stop = terminal | truncated, terminal | truncated | skip
        rows, steps, waiting = _windows(np.stack(
            [np.arange(len(stop)), terminal, truncated | skip], 1), self.n_step, cut)
        ready = dict(zip(rows, steps))
        obs, action, reward = column["obs"], column["action"], column["reward"].numpy()
        h, first, newest = held or 0, held is None, held is not None
        for t in filter(ready.__contains__, range(h)):  # in place: before slot _pos - 1
            self._mark((self._pos - 1 - h + t) % self.size, ready[t])
        for t in range(h, len(stop) - 1):
            if stop[t]:  # a final observation, or frames that do not go on: no transition
                first, newest = True, False
                continue
            k = self._write(obs[t], action[t], obs[t + 1], float(reward[t + 1]),
                            float(not terminal[t + 1]), bool(end[t + 1]), first)
            first, newest = False, True
            if t in ready:
                self._mark(k, ready[t])
        return waiting, newest

    def _write(self, observation: torch.Tensor, action: Any, next_observation: torch.Tensor,
               reward: float, mask: float, done: bool, first: bool) -> int:
        """Write one transition (if ``first`` of a sequence, all its frames but those that are
        the newest in the ring, as after a lost life); return its slot."""
        if self.frames is None:
            self._allocate(observation, torch.as_tensor(action))
        self._tail = None  # (put sets it again after a stream's column)
        if first:
            frames = as_numpy(observation)
            if len(frames) <= self._filled + 1 and _follows(self._views["frames"], self._pos,
                                                            frames):
                frames = frames[-1:]  # the frames before it go on from the ring's newest
            for frame in frames:
                self._write_frame(frame)
        k = (self._pos - 1) % self.size
        self._write_frame(as_numpy(next_observation[-1]))
        n = self._views
        n["action"][k] = as_numpy(action)
        n["reward"][k] = reward
        n["mask"][k] = mask
        n["done"][k] = done
        return k

    def _mark(self, k: int, steps: int) -> None:
        """Let slot ``k``'s transition be sampled, with a window of ``steps`` steps."""
        self._views["steps"][k] = steps
        self._count += 1
        self._queue(k, -1.0)

    def _write_frame(self, frame: np.ndarray) -> None:
        """Write ``frame`` at the next slot, invalidating the transitions that needed it."""
        p = self._pos
        steps = self._views["steps"]
        for j in range(p, p + self.stack):  # transitions whose window starts at or covers p
            j %= self.size
            if steps[j]:
                steps[j] = 0
                self._count -= 1
                self._queue(j, 0.0)
        self._views["frames"][p] = frame
        self._pos = (p + 1) % self.size
        self._filled = min(self._filled + 1, self.size)

    def _queue(self, k: int, priority: float) -> None:
        """Hook: slot ``k`` became ready (``priority`` -1) or, ready, was invalidated (0)."""

    def sample_indices(self, batch_size: int) -> torch.Tensor:
        """Uniform slots among those holding a ready transition (rejection sampling)."""
        self._settle()
        if self._count == 0:
            raise RuntimeError("Cannot sample from an empty replay buffer")
        chosen: list[torch.Tensor] = []
        found = 0
        while found < batch_size:
            candidates = torch.randint(0, self._filled, (2 * batch_size,), generator=self.generator)
            candidates = candidates[self.steps[candidates] > 0]
            chosen.append(candidates)
            found += candidates.shape[0]
        return torch.cat(chosen)[:batch_size]

    def gather(self, index: torch.Tensor) -> SampleBatch:
        """The windows of ready slots ``index`` as a time-major ``SampleBatch`` (cut windows:
        the last row repeated, marked ``truncated``)."""
        self._settle()
        index = index.cpu()
        rows = torch.arange(self.n_step + 1).unsqueeze(1)
        steps = self.steps[index].long().unsqueeze(0)
        offset = torch.minimum(rows, steps)  # [n + 1, B]
        obs = _stacks(self.frames, index, offset, self.stack)
        arrived = (index + offset - 1) % self.size  # the transition each row arrived with
        first = rows == 0
        terminal = (self.mask[arrived] == 0) & ~first
        cut = (rows >= steps) & (steps < self.n_step)  # by a break in the sequence
        truncated = (self.done[arrived] | cut) & ~terminal
        device = self.device
        return SampleBatch(
            obs=obs.to(device),
            action=self.action[(index + offset) % self.size].to(device),
            reward=torch.where(first, 0.0, self.reward[arrived]).to(device),
            done=terminal.to(device),
            truncated=(truncated & ~first).to(device),
            weight=self.weights(index),
        )


class PrioritizedAtariReplayBuffer(Prioritized, AtariReplayBuffer):
    """``AtariReplayBuffer`` with proportional prioritized replay (``Prioritized``); slots
    enter at the largest priority when ready and drop to 0 when invalidated."""

    def _empty_contents(self) -> dict[str, Any]:
        # _updates: (slot, priority or -1 for the maximum) to apply before sampling
        return {**super()._empty_contents(), "_updates": []}

    @property
    def nbytes(self) -> int:
        """Bytes allocated by the storage and the sum tree."""
        return super().nbytes + self.tree.tree.nbytes

    def _queue(self, k: int, priority: float) -> None:
        self._updates.append((k, priority))
        if len(self._updates) >= _MAX_PENDING_UPDATES:
            self._apply_updates()

    def _settle(self) -> None:
        """Also apply the queued priority changes."""
        super()._settle()
        self._apply_updates()

    def _apply_updates(self) -> None:
        """Apply the queued priority changes in order (the last one per slot wins)."""
        if not self._updates:
            return
        updates = np.asarray(self._updates)
        self._updates.clear()
        priorities = updates[:, 1]
        priorities[priorities < 0] = self.max_priority**self.alpha
        self.tree.update(updates[:, 0].astype(np.int64), priorities)

    def sample_indices(self, batch_size: int) -> torch.Tensor:
        """Slots drawn proportionally to priority, one per equal segment of the total."""
        self._settle()
        return torch.from_numpy(self._draw(batch_size))

    def update_priorities(self, priorities: Any, index: Any = None) -> None:
        """Set the priorities of the slots ``index`` (default: the last sample's) still ready."""
        self._settle()
        index, priorities = self._new_priorities(priorities, index)
        keep = self._views["steps"][index] > 0
        self.tree.update(index[keep], priorities[keep])


def _windows(rows: np.ndarray, n: int, cut: bool) -> tuple[list[int], list[int], int]:
    """``(ids, steps, waiting)`` of a sequence's rows ``[L, 3]`` (id, done, truncated): the ids
    of those that start a complete ``n``-step window (``n_step_windows``), its steps (up to its
    first end) and how many transitions wait."""
    ids, done, truncated = rows.T[:, :, None]  # [L, 1] each: one column
    items, waiting = n_step_windows({"obs": ids, "done": done != 0, "truncated": truncated != 0},
                                    np.zeros(1, dtype=np.int64), n, cut)
    ends = (items["done"] | items["truncated"])[:, 1:]
    steps = np.where(ends.any(1), ends.argmax(1) + 1, n)
    return items["obs"][:, 0].tolist(), steps.tolist(), int(waiting[0])


def _breaks(rows: dict[str, torch.Tensor]) -> np.ndarray:
    """Which rows ``[L, B]`` start a transition that is skipped, its frames not going on."""
    obs, ended = as_numpy(rows["obs"]), (rows["done"] | rows["truncated"]).numpy()
    same = (obs[:-1, :, 1:] == obs[1:, :, :-1]).reshape(*ended[:-1].shape, -1).all(-1)
    breaks = np.zeros_like(ended)
    breaks[:-1] = ~(same | ended[:-1])
    return breaks


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` hold the same frames (their bytes compared: cheaper than
    ``np.array_equal``)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _stacks(frames: torch.Tensor, index: torch.Tensor, offset: torch.Tensor, stack: int
            ) -> torch.Tensor:
    """The stacked states ``[n + 1, B, stack, ...]`` of the rows ``offset`` ``[n + 1, B]`` of
    the windows of slots ``index`` (each its frames up to its newest, in the ring)."""
    size = len(frames)
    if len(offset) == 2:  # one-step windows: stack + 1 frames hold both observations
        window = frames[(index.unsqueeze(-1) + torch.arange(-stack + 1, 2)) % size]
        return torch.stack([window[:, :-1], window[:, 1:]])
    slots = (index + offset).unsqueeze(-1) + torch.arange(-stack + 1, 1)
    return frames[slots % size]


def _newest(frames: np.ndarray, pos: int, count: int) -> np.ndarray:
    """The ``count`` frames of a ring ``frames`` before slot ``pos`` (its newest ones)."""
    if pos >= count:
        return frames[pos - count : pos]  # (a view)
    return frames[np.arange(pos - count, pos) % len(frames)]


def _follows(ring: np.ndarray, pos: int, frames: np.ndarray) -> bool:
    """Whether the older frames of the stack ``frames`` are the newest of the ``ring`` (those
    before slot ``pos``; its newest one compared first, the cheaper miss)."""
    return len(frames) < 2 or (_same(ring[pos - 1], frames[-2])
                               and _same(_newest(ring, pos, len(frames) - 1), frames[:-1]))


def _frames(obs: Any) -> torch.Tensor:
    """The stacked frames of a segment's ``obs`` (a tensor, array or one-field ``NamedArray``)."""
    if isinstance(obs, NamedArray):
        fields = [value for _, value in obs.items() if value is not None]
        if len(fields) != 1:
            raise ValueError(f"AtariReplayBuffer stores one observation field of stacked "
                             f"frames, got {len(fields)}; send obs={{'obs': frames}}")
        obs = fields[0]
    return torch.as_tensor(obs)
