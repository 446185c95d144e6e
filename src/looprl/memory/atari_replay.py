"""Replay for stacked uint8 frames that stores each frame once in a ring (the DQN replay memory;
1M transitions: 7.1 GB, not 56 GB), stacks rebuilt when sampling. Slot ``k`` holds the newest
frame of a state and the transition out of it, ``links[k]`` its stack's slots (oldest first),
``nexts[k]`` the next state's slot (-1: none yet). A sequence's first state shares the older
frames of the state it follows where they go on; ``put`` goes on with a stream's sequence from its
last state. Overwriting a frame invalidates the transitions that needed it; a transition is
sampled once its n-step window (``n_step_windows``) is complete."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from looprl.core import NamedArray, SampleBatch, State
from looprl.core.leaves import as_numpy
from looprl.memory.prioritized import Prioritized, PrioritizedReplayBuffer
from looprl.memory.replay import STORE_CHUNK, ExperienceReplayBuffer, ReplayBuffer
from looprl.memory.store import check_transition, n_step_windows, stream_numbers, window_rows

__all__ = ["AtariReplayBuffer", "PrioritizedAtariReplayBuffer", "check_room", "frame_ring",
           "slot_bytes"]

log = logging.getLogger(__name__)

#: The storage arrays, one entry per slot (``state_reward``: the reward that came with its state;
#: ``reward``, ``mask`` and ``done``: what came with the next one).
_ARRAYS = ("frames", "action", "reward", "state_reward", "mask", "done", "steps", "links",
           "nexts")

#: The longest n-step window a slot's ``steps`` (int16) holds.
_MAX_STEPS = int(np.iinfo(np.int16).max)

#: Pending priority changes kept before ``PrioritizedAtariReplayBuffer`` applies them anyway.
_MAX_PENDING_UPDATES = 4096


def slot_bytes(frame_bytes: int, action_bytes: int, stack: int) -> int:
    """The bytes of one slot of the frame ring: its frame, action and links, then its state's
    reward, reward, mask, done, steps and next slot (4 + 4 + 4 + 1 + 2 + 4)."""
    return frame_bytes + action_bytes + 4 * stack + 19


class AtariReplayBuffer(ReplayBuffer):
    """Uniform replay of (n-step) transitions between stacked frames shifting by one per step
    (others ``skipped``); ``size``: in frames; ``device``: of samples (storage on the CPU)."""

    _min_size = 2
    skipped = 0  # transitions skipped because their frames did not continue

    @property
    def nbytes(self) -> int:
        """Bytes allocated by the storage (0 before the first transition)."""
        return sum(array.nbytes for a in _ARRAYS if (array := getattr(self, a)) is not None)

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
        # _open: the rows [slot, oldest, done, truncated] of store's sequence from its first
        # transition not ready, _last its last state; _carry: per stream, the same
        counters = {"stack": 0, "_pos": 0, "_filled": 0, "_written": 0, "_count": 0}
        return {**dict.fromkeys(_ARRAYS), **counters, "_open": None, "_last": None,
                "_carry": {}, "_views": {}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled buffer (older code's: ``_upgraded``, waiting transitions rewritten)."""
        carry = {} if "links" in state else state.get("_carry", {})
        super().__setstate__(_upgraded(state))
        for stream, column in carry.items():
            self._put_column({key: as_numpy(value) for key, value in column.items()}, stream)

    def _allocate(self, observation: torch.Tensor, action: torch.Tensor) -> None:
        self.stack = int(observation.shape[0])
        check_room(self.size, self.stack, self.n_step, type(self).__name__)
        with self._allocating(slot_bytes(observation[0].nbytes, action.nbytes, self.stack), "cpu"):
            self.frames = torch.empty((self.size, *observation.shape[1:]), dtype=observation.dtype)
            self.action = torch.zeros((self.size, *action.shape), dtype=action.dtype)
            self.reward, self.state_reward, self.mask = (
                torch.zeros(self.size, dtype=torch.float32) for _ in range(3))
            self.done = torch.zeros(self.size, dtype=torch.bool)
            self.steps = torch.zeros(self.size, dtype=torch.int16)  # the window's; 0: not ready
            self.links = torch.zeros((self.size, self.stack), dtype=torch.int32)
            self.nexts = torch.full((self.size,), -1, dtype=torch.int32)
        self._views = self._numpy_views()

    def _numpy_views(self) -> dict[str, np.ndarray]:
        """NumPy views of the same memory (cheaper writes)."""
        return {key: array.numpy() for key in _ARRAYS if (array := getattr(self, key)) is not None}

    def store(self, state: State | None, action: Any, next_state: State) -> None:
        """Store ``state --action--> next_state``, windowed when next read or ``STORE_CHUNK`` on."""
        check_transition(type(self).__name__, state, action, next_state, batches=False)
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
        if first:  # (its older frames may be the ring's newest state's)
            self._open = [[*self._first(observation, action, (self._pos - 1) % self.size,
                                        float(state.reward)), 0, 0]]
        rows, terminal, ended = self._open, float(next_state.mask) == 0, bool(next_state.done)
        slot = self._next(rows[-1][0], action, next_observation, float(next_state.reward),
                          float(not terminal), ended)
        rows.append([*slot, ended and terminal, ended and not terminal])
        self._last = next_state
        if len(rows) > min(STORE_CHUNK, self.size - self.stack - 1):
            self._flush()  # (before a write could overwrite its first transition's frames)

    def _flush(self, cut: bool = False) -> None:
        """Let ``store``'s transitions whose windows are complete (all if ``cut``) be sampled."""
        rows = self._open
        if rows is not None and len(rows) > 1:
            waiting = self._let_sample(np.array(rows), cut)
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
        rows = {key: as_numpy(value) for key, value in
                window_rows(sample, _frames(sample.obs)).items()}
        rows["skip"] = _breaks(rows)
        self._skip(int(rows["skip"].sum()))
        shape = rows["reward"].shape
        streams = ([None] * shape[1] if sample.stream is None
                   else stream_numbers(sample.stream, shape))
        for b, stream in enumerate(streams):
            self._put_column({key: value[:, b] for key, value in rows.items()}, stream)
        return True

    def _skip(self, count: int = 1) -> None:
        """Count ``count`` skipped transitions (a warning the first time)."""
        if count and not self.skipped:
            log.warning("AtariReplayBuffer skipped a transition whose next observation does "
                        "not continue the frame stack (stacked frames must shift by one per step)")
        self.skipped += count

    def _put_column(self, column: dict[str, np.ndarray], stream: int | None) -> None:
        """Write one segment column ``[L]``, on from its stream's last state if it starts there
        (else a new sequence); let the complete windows be sampled (``stream`` ``None``: cut)."""
        terminal, truncated, skip = column["done"], column["truncated"], column["skip"]
        rows = np.zeros((len(skip), 4), dtype=np.int64)  # [slot, oldest, done, truncated]
        rows[:, 2], rows[:, 3] = terminal, truncated | skip
        stop, end = (terminal | truncated | skip).tolist(), (terminal | truncated).tolist()
        obs, action, reward, mask = (column["obs"], column["action"], column["reward"].tolist(),
                                     (~terminal).tolist())
        held, v = self._carry.pop(stream, None), self._views  # (its waiting ones, last state)
        last = (held[-1] if held is not None and self._written - held[-1, 1] <= self.size
                and v["nexts"][held[-1, 0]] < 0 else None)  # (still there, no state after it)
        new = (last is None or last[2:].any()  # (no state goes on from a final one)
               or not _same(v["frames"][v["links"][last[0]]], obs[0]))
        if not new:  # one sequence with the waiting transitions (the joint row: the column's)
            rows = np.concatenate([held[:-1], rows])
            rows[len(held) - 1, :2] = last[:2]
        elif held is not None:  # a restarted actor: its waiting windows end there
            self._let_sample(held, cut=True)
        r = rows[len(rows) - len(stop) :]  # the column's
        follows = ((self._pos - 1) % self.size if stream is None  # (the ring's newest state)
                   else None if last is None else int(last[0]))
        for t in range(len(stop) - 1):
            if stop[t]:  # a final observation, or frames that do not go on: no transition
                new = True
                continue
            if new:
                r[t, :2] = self._first(obs[t], action[t], follows, reward[t])
            r[t + 1, :2] = self._next(int(r[t, 0]), action[t], obs[t + 1], reward[t + 1],
                                      mask[t + 1], end[t + 1])
            new, last, follows = False, r[t + 1], int(r[t + 1, 0])
        waiting = self._let_sample(rows, cut=stream is None)
        if stream is not None and last is not None:
            self._carry[stream] = rows[len(rows) - waiting - 1 :] if waiting else last[None]

    def _first(self, observation: Any, action: Any, follows: int | None, reward: float
               ) -> tuple[int, int]:
        """Write a sequence's first state (only its newest frame if the others go on from state
        ``follows``'s stack); return its slot and oldest (``_write_frame``)."""
        frames, k = as_numpy(observation), -1
        if self.frames is None:
            self._allocate(torch.as_tensor(frames), torch.as_tensor(action))
        elif follows is not None and _follows(self._views, follows, frames):
            frames, k = frames[-1:], follows
        for frame in frames:
            k, oldest = self._write_frame(frame, k, reward)
        return k, oldest

    def _next(self, k: int, action: Any, observation: Any, reward: float, mask: float,
              done: bool) -> tuple[int, int]:
        """Write the transition out of state ``k`` and the next state's frame (``_write_frame``)."""
        n = self._views
        n["action"][k], n["reward"][k], n["mask"][k], n["done"][k] = (
            self._as_stored(as_numpy(action), n["action"].dtype), reward, mask, done)
        return self._write_frame(as_numpy(observation[-1]), k, reward)

    def _write_frame(self, frame: np.ndarray, prev: int, reward: float) -> tuple[int, int]:
        """Write the state after ``prev`` (-1: none) at the next slot, invalidating the transitions
        that needed the frame it overwrites; return the slot and its oldest frame's write."""
        p, v, j = self._pos, self._views, self._pos
        steps, links, nexts = v["steps"], v["links"], v["nexts"]
        for _ in range(self.stack):
            if steps[j]:
                steps[j], self._count = 0, self._count - 1
                self._queue(j, 0.0)
            if (j := nexts[j]) < 0:
                break
        v["frames"][p], v["state_reward"][p], links[p, -1], nexts[p] = frame, reward, p, -1
        links[p, :-1] = links[prev, 1:] if prev >= 0 else p
        if prev >= 0:
            nexts[prev] = p
        self._pos, self._written = (p + 1) % self.size, self._written + 1
        self._filled = min(self._written, self.size)
        return p, self._written - 1 - (p - int(links[p, 0])) % self.size

    def _let_sample(self, rows: np.ndarray, cut: bool) -> int:
        """Let a sequence's complete transitions still there be sampled; return how many wait."""
        starts, steps, waiting = _windows(rows[:, 2:], self.n_step, cut)
        keep = self._written - rows[starts, 1] <= self.size  # (their frames still there)
        for k, m in zip(rows[starts[keep], 0].tolist(), steps[keep].tolist()):
            self._views["steps"][k], self._count = m, self._count + 1
            self._queue(k, -1.0)
        return waiting

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
        """The windows of ready slots ``index`` as a time-major ``SampleBatch``."""
        self._settle()
        v, n = self._views, self.n_step
        chain = [index.cpu().numpy()]  # the window's states (past its end: whatever is next)
        for _ in range(n):
            chain.append(v["nexts"][chain[-1]])
        rows, steps = np.arange(n + 1)[:, None], v["steps"][chain[0]][None]
        offset = np.minimum(rows, steps)  # [n + 1, B]
        chain = np.stack(chain)
        slots = np.take_along_axis(chain, offset, 0)
        arrived = np.take_along_axis(chain, np.maximum(offset - 1, 0), 0)  # (each row came with)
        reward, terminal = v["reward"][arrived], v["mask"][arrived] == 0
        truncated = (v["done"][arrived] | (rows >= steps) & (steps < n)) & ~terminal
        reward[0], terminal[0], truncated[0] = v["state_reward"][chain[0]], False, False
        batch = {"obs": v["frames"][v["links"][slots]], "action": v["action"][slots],
                 "reward": reward, "done": terminal, "truncated": truncated}
        return SampleBatch(**{key: torch.from_numpy(value).to(self.device)
                              for key, value in batch.items()}, weight=self.weights(index))


class PrioritizedAtariReplayBuffer(Prioritized, AtariReplayBuffer):
    """``AtariReplayBuffer`` with proportional prioritized replay (``Prioritized``); slots
    enter at the largest priority when ready and drop to 0 when invalidated."""

    def _empty_contents(self) -> dict[str, Any]:
        # _updates: (slot, priority or -1 for the maximum) to apply before sampling
        return {**super()._empty_contents(), "_updates": []}

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


def _windows(flags: np.ndarray, n: int, cut: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """``(rows, steps, waiting)`` of a sequence's flags ``[L, 2]`` (done, truncated): the rows
    that start a complete ``n``-step window, its steps and how many transitions wait."""
    done, truncated = flags.T[:, :, None] != 0  # [L, 1] each: one column
    items, waiting = n_step_windows({"obs": np.arange(len(flags))[:, None], "done": done,
                                     "truncated": truncated}, np.zeros(1, dtype=np.int64), n, cut)
    ends = (items["done"] | items["truncated"])[:, 1:]
    steps = np.where(ends.any(1), ends.argmax(1) + 1, n)
    return items["obs"][:, 0], steps, int(waiting[0])


def _upgraded(state: dict[str, Any]) -> dict[str, Any]:
    """The state of a buffer pickled by older code as this code's: linked as it lay (each stack
    in the slots up to its newest, each state followed by the next slot's), rewards of states 0."""
    if "links" not in state:
        size, stack, pos, filled = state["size"], state["stack"], state["_pos"], state["_filled"]
        written = filled + (pos if filled == size else 0)  # (a count of writes ending at _pos)
        links = nexts = None
        if state["frames"] is not None:
            slots = torch.arange(size)
            links = ((slots[:, None] + torch.arange(1 - stack, 1)) % size).int()
            nexts = ((slots + 1) % size).int()
        rows = state["_open"] and [[k, written - stack - (pos - 1 - k) % size, done, truncated]
                                   for k, done, truncated in state["_open"]]  # (_write_frame)
        state.pop("_tail", None)
        state = {**state, "links": links, "nexts": nexts, "_written": written, "_open": rows,
                 "_carry": {}}
    if "state_reward" not in state:
        state["state_reward"] = None if state["frames"] is None else torch.zeros(state["size"])
    return state


def _breaks(rows: dict[str, np.ndarray]) -> np.ndarray:
    """Which rows ``[L, B]`` start a transition that is skipped, its frames not going on."""
    obs, ended = rows["obs"], rows["done"] | rows["truncated"]
    same = (obs[:-1, :, 1:] == obs[1:, :, :-1]).reshape(*ended[:-1].shape, -1).all(-1)
    breaks = np.zeros_like(ended)
    breaks[:-1] = ~(same | ended[:-1])
    return breaks


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` hold the same frames (bytes compared: cheaper than array_equal)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _follows(views: dict[str, np.ndarray], k: int, frames: np.ndarray) -> bool:
    """Whether the older frames of the stack ``frames`` are the newest of state ``k``'s stack."""
    ring = views["frames"]
    return len(frames) < 2 or (_same(ring[k], frames[-2])
                               and _same(ring[views["links"][k, 1:]], frames[:-1]))


def _frames(obs: Any) -> torch.Tensor:
    """The stacked frames of a segment's ``obs`` (a tensor, array or one-field ``NamedArray``)."""
    if isinstance(obs, NamedArray):
        fields = [value for _, value in obs.items() if value is not None]
        if len(fields) != 1:
            raise ValueError(f"AtariReplayBuffer stores one observation field of stacked "
                             f"frames, got {len(fields)}; send obs={{'obs': frames}}")
        obs = fields[0]
    return torch.as_tensor(obs)


def check_room(size: int, stack: int, n_step: int, owner: str = "AtariReplayBuffer") -> None:
    """One line for an ``n_step`` past a slot's ``steps`` (int16), or a ``size`` that cannot
    hold a stack of ``stack`` frames and a window."""
    if n_step > _MAX_STEPS:
        raise ValueError(f"{owner} keeps windows of at most {_MAX_STEPS} steps (int16), got "
                         f"n_step={n_step}: lower it")
    if size < stack + n_step + 1:
        raise ValueError(f"Replay size {size} is too small for stacks of {stack} and "
                         f"{n_step}-step returns: give it at least {stack + n_step + 1} (a "
                         "preset's replay_buffer_size)")


def frame_ring(buffer: Any) -> Any:
    """ALL's ``lazy_frames=True`` for ``buffer``: an empty ``ExperienceReplayBuffer`` or
    ``PrioritizedReplayBuffer`` as the frame ring of as many frames with its settings (each
    stacked frame stored once: ALL's Atari presets' 1M transitions in 7.1 GB, not 56 GB); any
    other ``buffer`` (a ring already, one holding transitions) as it is."""
    ring = {ExperienceReplayBuffer: AtariReplayBuffer,
            PrioritizedReplayBuffer: PrioritizedAtariReplayBuffer}.get(type(buffer))
    if ring is None or len(buffer):
        return buffer
    settings = {"device": buffer.device, "generator": buffer.generator, "n_step": buffer.n_step}
    if ring is PrioritizedAtariReplayBuffer:
        return ring(buffer.size, buffer.alpha, buffer.beta, buffer.epsilon, **settings)
    return ring(buffer.size, **settings)
