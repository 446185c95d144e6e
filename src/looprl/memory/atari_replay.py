"""Replay for stacked uint8 frames that stores each frame once (the DQN replay memory).

One ring of single frames; stacks are rebuilt when sampling (1M transitions: about 7.1 GB
instead of 56 GB). Slot ``k`` holds the newest frame of one state and the transition out of
it (``valid[k]``: one was stored); writing a slot invalidates the transitions that needed the
frame it overwrites. A transition is sampled (``ready``) once its ``n_step`` window is
complete. ``put`` with ``stream`` numbers writes the transitions still waiting at a column's
end again at the start of the stream's next column, where their windows complete.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from looprl.core import NamedArray, SampleBatch, State, StateArray
from looprl.memory.prioritized import Prioritized
from looprl.memory.replay import ReplayContents
from looprl.memory.windows import segment_rows, stream_numbers

__all__ = ["AtariReplayBuffer", "PrioritizedAtariReplayBuffer"]

log = logging.getLogger(__name__)

#: Bytes per slot besides the frame: action (int64), reward, mask (float32), done, valid, ready.
_METADATA_BYTES = 8 + 4 + 4 + 1 + 1 + 1

#: The storage arrays, one entry per slot.
_ARRAYS = ("frames", "action", "reward", "mask", "done", "valid", "ready")

#: Pending priority changes kept before ``PrioritizedAtariReplayBuffer`` applies them anyway.
_MAX_PENDING_UPDATES = 4096


class AtariReplayBuffer(ReplayContents):
    """Uniform replay of (n-step) transitions between stacked frames, shifting by one frame
    per step (``store`` skips, and counts in ``skipped``, those that do not); ``size``:
    capacity in frames; ``device``: of sampled batches (storage stays in CPU memory)."""

    _min_size = 2
    skipped = 0  # transitions skipped because their frames did not continue

    @staticmethod
    def footprint(size: int, frame_shape: tuple[int, ...] = (84, 84)) -> int:
        """Bytes a buffer of ``size`` slots allocates for frames of ``frame_shape``."""
        return int(size) * (int(np.prod(frame_shape)) + _METADATA_BYTES)

    @property
    def nbytes(self) -> int:
        """Bytes allocated by the storage (0 before the first ``store``)."""
        return 0 if self.frames is None else sum(getattr(self, a).nbytes for a in _ARRAYS)

    def __len__(self) -> int:
        """The number of transitions that can be sampled."""
        return self._count

    def _empty_contents(self) -> dict[str, Any]:
        # _count: ready transitions; _waiting: the open sequence's newest transitions, not
        # ready yet; _last: the state whose newest frame is at _pos - 1; _carry: per stream
        # (put), the rows of its last column from its first waiting transition on
        counters = {"stack": 0, "_pos": 0, "_filled": 0, "_count": 0, "_waiting": 0}
        return {**dict.fromkeys(_ARRAYS), **counters, "_last": None, "_carry": {}, "_views": {}}

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
        self.valid = torch.zeros(self.size, dtype=torch.bool)  # a transition is stored
        self.ready = torch.zeros(self.size, dtype=torch.bool)  # ... and its window complete
        self._views = self._numpy_views()

    def _numpy_views(self) -> dict[str, np.ndarray]:
        """NumPy views of the same memory (cheaper scalar writes)."""
        return {} if self.reward is None else {k: getattr(self, k).numpy() for k in _ARRAYS[2:]}

    def store(self, state: State | None, action: Any, next_state: State) -> None:
        """Store the transition ``state --action--> next_state``."""
        if isinstance(state, StateArray) or isinstance(next_state, StateArray):
            raise TypeError("AtariReplayBuffer stores single-environment transitions, not batches")
        if state is None or state.done:
            return
        first = state is not self._last  # the first transition of a new sequence of frames
        if self._append(state.observation, action, next_state.observation,
                        float(next_state.reward), float(next_state.mask),
                        bool(next_state.done), first):
            self._last = next_state

    def put(self, sample: SampleBatch, current_version: int | None = None) -> bool:
        """Store each training row of ``[T + 1, B]`` segments; ``current_version`` is ignored."""
        rows = segment_rows(sample, _frames(sample.obs))
        streams = (stream_numbers(sample.stream, rows["reward"].shape)
                   if sample.stream is not None and self.n_step > 1 else None)
        for b in range(rows["reward"].shape[1]):
            column = {key: value[:, b] for key, value in rows.items()}
            if streams is None:
                self._write_column(column)
                self._close()
            else:
                self._continue_stream(column, streams[b])
            self._last = None
        return True

    def _continue_stream(self, column: dict[str, torch.Tensor], stream: int) -> None:
        """Write ``column`` after the transitions ``stream`` left waiting; carry the new ones."""
        carry = self._carry.pop(stream, None)
        if carry is not None:
            if torch.equal(carry["obs"][-1], column["obs"][0]):  # one sequence with the carry
                # the joint row: its action comes with this segment, its reward and ends as carried
                carry["action"][-1] = column["action"][0]
                column = {key: torch.cat([carry[key], value[1:]]) for key, value in column.items()}
            else:  # not the stream's next segment (a restarted actor): they end there
                self._write_column(carry)
                self._close()
        self._write_column(column)
        waiting, self._waiting = self._waiting, 0
        if waiting:
            self._carry[stream] = {key: value[-waiting - 1 :].clone()
                                   for key, value in column.items()}

    def _write_column(self, column: dict[str, torch.Tensor]) -> None:
        """Write the transitions of one segment column ``[L]`` as one sequence, left open."""
        obs, action = column["obs"], column["action"]
        reward, done = column["reward"].numpy(), column["done"].numpy()
        end = done | column["truncated"].numpy()
        first = True
        for t in range(len(reward) - 1):
            if end[t]:  # a final observation: no transition leaves it
                first = True
                continue
            first = not self._append(obs[t], action[t], obs[t + 1], float(reward[t + 1]),
                                     float(not done[t + 1]), bool(end[t + 1]), first)

    def _append(self, observation: torch.Tensor, action: Any, next_observation: torch.Tensor,
                reward: float, mask: float, done: bool, first: bool) -> bool:
        """Write one transition (all its frames if ``first`` of a sequence); whether stored."""
        action = torch.as_tensor(action)
        if self.frames is None:
            self._allocate(observation, action)
        if not self._continues(observation, next_observation):
            return False
        if first:
            self._close()
            for frame in observation.cpu():
                self._write_frame(frame)
        k = (self._pos - 1) % self.size
        self._write_frame(next_observation[-1].cpu())
        self.action[k] = action
        n = self._views
        n["reward"][k] = reward
        n["mask"][k] = mask
        n["done"][k] = done
        n["valid"][k] = True
        self._waiting += 1
        if done:
            self._close()
        elif self._waiting == self.n_step:  # the window of k - n + 1 is now complete
            self._waiting -= 1
            self._make_ready((k - self.n_step + 1) % self.size)
        return True

    def _continues(self, observation: torch.Tensor, next_observation: torch.Tensor) -> bool:
        """Whether the frames continue; if not, the transition is skipped (``skipped``)."""
        if torch.equal(observation[1:], next_observation[:-1]):
            return True
        self.skipped += 1
        self._close()
        self._last = None
        if self.skipped == 1:
            log.warning("AtariReplayBuffer skipped a transition whose next observation does "
                        "not continue the frame stack (stacked frames must shift by one per step)")
        return False

    def _close(self) -> None:
        """End the open sequence: its waiting transitions' windows stop at its last state."""
        newest = self._pos - 2  # the slot of the last stored transition
        for j in range(self._waiting):
            self._make_ready((newest - j) % self.size)
        self._waiting = 0

    def _make_ready(self, k: int) -> None:
        """Let slot ``k``'s stored transition be sampled."""
        n = self._views
        if n["valid"][k] and not n["ready"][k]:
            n["ready"][k] = True
            self._count += 1
            self._queue(k, -1.0)

    def _write_frame(self, frame: torch.Tensor) -> None:
        """Write ``frame`` at the next slot, invalidating the transitions that needed it."""
        p = self._pos
        valid, ready = self._views["valid"], self._views["ready"]
        for j in range(p, p + self.stack):  # transitions whose window starts at or covers p
            j %= self.size
            if valid[j]:
                valid[j] = False
                if ready[j]:
                    ready[j] = False
                    self._count -= 1
                    self._queue(j, 0.0)
        self.frames[p] = frame
        self._pos = (p + 1) % self.size
        self._filled = min(self._filled + 1, self.size)

    def _queue(self, k: int, priority: float) -> None:
        """Hook: slot ``k`` became ready (``priority`` -1) or, ready, was invalidated (0)."""

    def sample_indices(self, batch_size: int) -> torch.Tensor:
        """Uniform slots among those holding a ready transition (rejection sampling)."""
        if self._count == 0:
            raise RuntimeError("Cannot sample from an empty replay buffer")
        chosen: list[torch.Tensor] = []
        found = 0
        while found < batch_size:
            candidates = torch.randint(0, self._filled, (2 * batch_size,), generator=self.generator)
            candidates = candidates[self.ready[candidates]]
            chosen.append(candidates)
            found += candidates.shape[0]
        return torch.cat(chosen)[:batch_size]

    def _steps(self, index: torch.Tensor) -> torch.Tensor:
        """The steps ``m <= n_step`` of each slot's window (cut by an episode end or a break)."""
        steps = torch.ones_like(index)
        going = torch.ones_like(index, dtype=torch.bool)
        for j in range(1, self.n_step):
            previous, slot = (index + j - 1) % self.size, (index + j) % self.size
            going &= ~self.done[previous] & self.valid[slot]  # episode end or break: stop
            steps += going
        return steps

    def gather(self, index: torch.Tensor) -> SampleBatch:
        """The windows of slots ``index`` as a time-major ``SampleBatch`` (cut windows: the
        last row repeated, marked ``truncated``)."""
        index = index.cpu()
        rows = torch.arange(self.n_step + 1).unsqueeze(1)
        steps = self._steps(index).unsqueeze(0)
        offset = torch.minimum(rows, steps)  # [n + 1, B]
        if self.n_step == 1:  # one window of stack + 1 frames holds both observations
            window = self.frames[(index.unsqueeze(-1) + torch.arange(-self.stack + 1, 2))
                                 % self.size]
            obs = torch.stack([window[:, :-1], window[:, 1:]])
        else:  # each row's state: its frames relative to its newest
            slots = (index + offset).unsqueeze(-1) + torch.arange(-self.stack + 1, 1)
            obs = self.frames[slots % self.size]
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
        self._apply_updates()
        return torch.from_numpy(self._draw(batch_size))

    def gather(self, index: torch.Tensor) -> SampleBatch:
        self._apply_updates()
        return super().gather(index)

    def update_priorities(self, priorities: Any, index: Any = None) -> None:
        """Set the priorities of the slots ``index`` (default: the last sample's) still ready."""
        self._apply_updates()
        index, priorities = self._new_priorities(priorities, index)
        keep = self._views["ready"][index]
        self.tree.update(index[keep], priorities[keep])


def _frames(obs: Any) -> torch.Tensor:
    """The stacked frames of a segment's ``obs`` (a tensor, array or one-field ``NamedArray``)."""
    if isinstance(obs, NamedArray):
        fields = [value for _, value in obs.items() if value is not None]
        if len(fields) != 1:
            raise ValueError(f"AtariReplayBuffer stores one observation field of stacked "
                             f"frames, got {len(fields)}; send obs={{'obs': frames}}")
        obs = fields[0]
    return torch.as_tensor(obs)
