"""Experience replay: a preallocated ring buffer of windows of ``n_step + 1`` rows (row 0 holds
``s_t`` and ``a_t``, row ``k`` what arrived ``k`` steps later). ``put(segment)`` cuts the
collectors' ``[T + 1, B]`` segments into windows (spanning a stream's segments); ``store`` (ALL's)
gathers steps and ``put`` s them as one segment (``looprl.memory.store``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import torch

from looprl.core import SampleBatch, State, StateArray
from looprl.core.leaves import as_numpy
from looprl.core.namedarray import NamedArray, concat, recursive_apply
from looprl.core.suggest import check_count, check_device, check_fits, is_out_of_memory
from looprl.memory.returns import n_step_bootstrap
from looprl.memory.segments import leaves
from looprl.memory.store import (
    check_transition,
    fields,
    gathered_segment,
    goes_on,
    n_step_windows,
    same_rows,
    shape_error,
    stream_numbers,
    window_rows,
)

__all__ = ["ExperienceReplayBuffer", "ReplayBuffer", "replay_contents_saved", "transitions"]

_SAVE_CONTENTS: ContextVar[bool] = ContextVar("save_replay_contents", default=True)
_SAVED_BYTES: ContextVar[list[int] | None] = ContextVar("saved_replay_bytes", default=None)

#: The most steps ``store`` gathers before it windows them (n-step replay; the Atari ring too).
STORE_CHUNK = 32


@contextmanager
def replay_contents_saved(saved: bool) -> Iterator[list[int]]:
    """While active, pickling a replay buffer keeps (``True``) or drops its transitions;
    yields the bytes of the transitions kept, an entry per buffer pickled."""
    kept: list[int] = []
    token, tally = _SAVE_CONTENTS.set(saved), _SAVED_BYTES.set(kept)
    try:
        yield kept
    finally:
        _SAVE_CONTENTS.reset(token)
        _SAVED_BYTES.reset(tally)


class ReplayBuffer:
    """Base of the replay buffers (ALL's ``ReplayBuffer``): sampling through the subclass's
    ``sample_indices`` and ``gather``; pickling without its NumPy views (maybe its contents)."""

    _min_size = 1

    def __init__(self, size: int, device: str | torch.device = "cpu",
                 generator: torch.Generator | None = None, n_step: int = 1):
        check_count(size=size, n_step=n_step)
        if size < self._min_size:
            raise ValueError(f"Replay buffer size must be at least {self._min_size}, got {size}")
        check_device(device)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"{type(self).__name__}'s third argument is a torch.Generator, got "
                            f"{generator!r:.40}; ALL's store_device is not ported: transitions "
                            "are kept on device")
        self.size, self.n_step = int(size), int(n_step)
        self.device, self.generator = device, generator
        self.__dict__.update(self._empty_contents())

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if not _SAVE_CONTENTS.get():
            state.update(self._empty_contents())
        elif (kept := _SAVED_BYTES.get()) is not None:
            kept.append(self.nbytes)
        state["_views"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._views = self._numpy_views()

    def seed(self, seed: int) -> None:
        """Sample from a generator of its own, seeded with ``seed``."""
        self.generator = torch.Generator().manual_seed(seed)

    def sample_batch(self, batch_size: int) -> SampleBatch:
        """``batch_size`` transitions as one ``[n_step + 1, batch_size]`` ``SampleBatch``."""
        check_count(batch_size=batch_size)
        return self.gather(self.sample_indices(batch_size))

    def sample(self, batch_size: int) -> tuple:
        """A minibatch ``(states, actions, rewards, next_states, weights)`` (``transitions``)."""
        return transitions(self.sample_batch(batch_size))

    @contextmanager
    def _allocating(self, item_bytes: int, device: Any = None, empty: bool = True
                    ) -> Iterator[None]:
        """Allocate ``size`` items of ``item_bytes`` bytes: out of memory is one line."""
        try:
            yield
        except (RuntimeError, MemoryError) as error:
            if not is_out_of_memory(error):
                raise
            if empty:
                self.__dict__.update(self._empty_contents())
            check_fits(self.size * item_bytes, f"{type(self).__name__}: {self.size:,} items of "
                       f"{item_bytes:,} bytes need", "lower its size (a preset's "
                       "replay_buffer_size)", device or self.device, error)

    def _as_stored(self, action: Any, dtype: Any) -> Any:
        """``action`` cast to ``dtype``, the stored actions'; fractions cast to integers are a
        one-line ``TypeError`` (1.7 was stored as 1)."""
        action = action if isinstance(action, torch.Tensor) else np.asarray(action)
        if action.dtype == dtype:
            return action
        fractions = action[action % 1 != 0] if _is_float(action.dtype) else []
        if len(fractions) and not _is_float(dtype):
            given, stored = (str(d).removeprefix("torch.") for d in (action.dtype, dtype))
            raise TypeError(f"{type(self).__name__}: actions of {given} with a "
                            f"fraction ({fractions[:3].tolist()}) after actions of "
                            f"{stored}: a buffer keeps its first action's dtype, and "
                            "would cut them; give the actions one dtype (integers for a "
                            "Discrete action space, floats for a Box)")
        return action.to(dtype) if isinstance(action, torch.Tensor) else action.astype(dtype)

    def weights(self, index: torch.Tensor) -> torch.Tensor | None:
        """Importance weights of ``index`` (``None``: uniform replay)."""
        return None

    def update_priorities(self, priorities: Any, index: Any = None) -> None:
        """Uniform replay ignores priorities."""


def transitions(batch: SampleBatch, discount_factor: float | None = None) -> tuple:
    """ALL's ``(states, actions, rewards, next_states, weights)`` of one-step windows (or, given
    ``discount_factor``, ``n``-step ones: ``rewards`` their returns, ``next_states`` the states
    bootstrapped from, with ``discount_factor ** k`` as ``discount``)."""
    steps, n = batch.reward.shape[0] - 1, batch.reward.shape[1]
    device = batch.reward.device
    if discount_factor is None:
        if steps != 1:
            raise ValueError(f"the (states, actions, ...) tuple needs one-step windows, got "
                             f"{steps}-step ones: learn from the SampleBatch")
        rewards, at = batch.reward[1], 1  # the rows bootstrapped from: row 1
    else:
        rewards, boot, _ = n_step_bootstrap(batch.reward, batch.done, batch.truncated,
                                            discount_factor, steps, rows=1)
        rewards, boot = rewards[0], boot[0]
        at = (boot, torch.arange(n, device=device))
    terminal = batch.done[at].bool()
    states = StateArray({**_entries(batch.obs, 0), "reward": batch.reward[0]}, (n,),
                        device=device)
    after = {**_entries(batch.obs, at), "reward": rewards, "mask": (~terminal).float(),
             "done": terminal | batch.truncated[at].bool()}
    if discount_factor is not None:
        after["discount"] = discount_factor ** boot.float()
    weights = torch.ones(n, device=device) if batch.weight is None else batch.weight[0]
    return states, batch.action[0], rewards, StateArray(after, (n,), device=device), weights


def _nbytes(rows: dict[str, Any]) -> int:
    """The bytes of the tensors of ``rows`` (fields of ``NamedArray`` s too)."""
    return sum(x.nbytes for value in rows.values() for x in leaves(value))


def _entries(obs: Any, at: Any) -> dict[str, Any]:
    """A ``StateArray``'s entries from the rows ``at`` of a batch's ``obs`` (``obs.obs``)."""
    if not isinstance(obs, NamedArray):
        return {"observation": obs[at]}
    rows = {key: value[at] for key, value in obs.items()}
    return {"observation": rows.pop("obs"), **rows}


class ExperienceReplayBuffer(ReplayBuffer):
    """Uniform replay of ``size`` transitions, kept on ``device`` (the oldest overwritten)."""

    def __len__(self) -> int:
        self._flush()
        return self._len

    def _empty_contents(self) -> dict[str, Any]:
        # _carry: each stream's last n_step rows [n_step, slots, ...], _waiting of them
        return {"_storage": None, "_pos": 0, "_len": 0, "_carry": None, "_waiting": None,
                "_slots": {}, "_steps": [], "_views": {}}

    @property
    def nbytes(self) -> int:
        """Bytes allocated by the storage (0 before the first transition)."""
        return 0 if self._storage is None else _nbytes(self._storage)

    def _allocate(self, window: dict[str, Any]) -> None:
        """Zeroed storage ``[size, rows, ...]`` for items like ``window`` (``[rows, ...]``)."""
        with self._allocating(_nbytes(window)):
            self._storage = fields(window, lambda leaf: torch.zeros(
                (self.size, *leaf.shape), dtype=leaf.dtype, device=self.device))
        self._views = self._numpy_views()

    def store(self, state: State | None, action: Any, next_state: State) -> None:
        """Store a transition per row, ``put`` when next read or ``STORE_CHUNK`` on."""
        check_transition(type(self).__name__, state, action, next_state)
        single = not isinstance(state, StateArray)
        if state is None or (single and state.done):  # no previous state; a discarded action
            return
        if single and self.n_step == 1 and self._views:
            self._flush()  # (the steps gathered before, in the order they came)
            self._write_step(state, action, next_state)
            return
        steps = self._steps
        if steps and not goes_on(steps[-1][1], state):  # a new sequence
            self._flush()
        if not steps:
            steps.append((None, state))
        steps.append((action, next_state))
        if len(steps) > STORE_CHUNK:
            self._flush()

    def _write_step(self, state: State, action: Any, next_state: State) -> None:
        """Write one single state's one-step window into the NumPy views (a fifth of a ``put``)."""
        s, pos, terminal = self._views, self._pos, float(next_state.mask) == 0
        action = as_numpy(action)
        try:
            s["obs"][pos, 0] = as_numpy(state.observation)
            s["obs"][pos, 1] = as_numpy(next_state.observation)
            s["action"][pos, 0] = (action if getattr(action, "dtype", None) == s["action"].dtype
                                   else self._as_stored(action, s["action"].dtype))
        except ValueError:  # (NumPy's "could not broadcast input array from shape ...")
            name, observations = type(self).__name__, [state.observation, next_state.observation]
            if {np.shape(as_numpy(x)) for x in observations} != {s["obs"].shape[2:]}:
                raise shape_error(name, "the observations", observations,
                                   s["obs"].shape[2:]) from None
            raise shape_error(name, "the actions", [action], s["action"].shape[2:]) from None
        s["reward"][pos, 0] = as_numpy(state.reward)  # (the states' own: ALL's sample has it)
        s["reward"][pos, 1] = as_numpy(next_state.reward)
        s["done"][pos, 1] = terminal
        s["truncated"][pos, 1] = bool(next_state.done) and not terminal
        self._advance(1)

    def _numpy_views(self) -> dict[str, Any]:
        """NumPy views of the storage (``{}`` unless all are CPU tensors NumPy can view)."""
        storage = self._storage or {}
        if not all(isinstance(v, torch.Tensor) and v.device.type == "cpu"
                   for v in storage.values()):
            return {}
        try:
            return {key: value.numpy() for key, value in storage.items()}
        except TypeError:  # bfloat16
            return {}

    def __getstate__(self) -> dict[str, Any]:
        self._flush()
        return super().__getstate__()

    def _flush(self) -> None:
        """``put`` the steps ``store`` gathered as one segment (``gathered_segment``)."""
        if not self._steps:
            return
        steps = list(self._steps)
        self._steps.clear()
        self.put(gathered_segment(type(self).__name__, steps, self._carry or self._storage))

    def _advance(self, n: int) -> None:
        self._pos = (self._pos + n) % self.size
        self._len = min(self._len + n, self.size)

    def put(self, sample: SampleBatch, current_version: int | None = None) -> bool:
        """Store each row of ``[T + 1, B]`` segments as an ``n_step`` window (with ``stream``
        one past row ``T`` waits for the stream's next segment); returns ``True``."""
        self._flush()
        if self.n_step == 1 and self._views and self._put_steps(sample):
            return True
        sample = sample.to(self.device)
        rows = window_rows(sample, sample.obs)
        if (known := self._carry or self._storage) and (
                rows["action"].dtype != known["action"].dtype):  # (the first action's dtype)
            rows["action"] = self._as_stored(rows["action"], known["action"].dtype)
        if self.n_step == 1 or sample.stream is None:
            start = torch.zeros(rows["reward"].shape[1], dtype=torch.long, device=self.device)
            self._write_windows(rows, start, cut=True)
        else:
            self._continue(rows, stream_numbers(sample.stream, rows["reward"].shape))
        return True

    def _put_steps(self, sample: SampleBatch) -> bool:
        """``put`` of one-step NumPy windows into the NumPy views (``False``: not done)."""
        arrays = (sample.obs, sample.action, sample.reward, sample.done, sample.truncated)
        if not all(isinstance(x, np.ndarray) for x in arrays):
            return False
        done, truncated = arrays[3:]
        t, b = np.nonzero(~(done[:-1] | truncated[:-1]))  # rows that start a transition
        k = len(t)
        if k > self.size:
            return False
        at = (self._pos + np.arange(k)) % self.size
        if (dtype := self._views["action"].dtype) != arrays[1].dtype:  # (a later action's)
            arrays = (arrays[0], self._as_stored(arrays[1], dtype), *arrays[2:])
        for row, index in ((0, t), (1, t + 1)):
            for key, array in zip(("obs", "action", "reward", "done", "truncated"), arrays):
                self._views[key][at, row] = array[index, b]
        self._advance(k)
        return True

    def _continue(self, rows: dict[str, Any], streams: list[int]) -> None:
        """Window ``rows`` ``[T + 1, B]`` after the rows each of ``streams`` left waiting."""
        n = self.n_step
        if self._carry is None:  # each stream's last n rows, [n, streams, ...]
            self._carry = fields(rows, lambda x: x.new_zeros((n, 0, *x.shape[2:])))
            self._waiting = torch.zeros(0, dtype=torch.long, device=self.device)
        slots = self._slots_of(streams)
        held = fields(self._carry, lambda x: x[:, slots])
        waiting = self._waiting[slots]
        joint = waiting > 0  # columns whose row 0 is their held last row
        if bool(joint.any()):
            broke = joint & ~same_rows(held["obs"], rows["obs"])
            if bool(broke.any()):  # not the stream's next segment: its windows end there
                self._write_windows(fields(held, lambda x: x[:, broke]),
                                    n - 1 - waiting[broke], cut=True)
                waiting, joint = waiting.masked_fill(broke, 0), joint & ~broke
            for key in ("reward", "done", "truncated"):  # what arrived with it: as held
                rows[key] = torch.cat([torch.where(joint, held[key][-1], rows[key][0])[None],
                                       rows[key][1:]])
        rows = {key: concat([held[key][:-1], value]) for key, value in rows.items()}
        self._waiting[slots] = self._write_windows(rows, n - 1 - waiting, cut=False)
        for key, value in rows.items():
            self._carry[key][:, slots] = recursive_apply(value, lambda x: x[-n:])

    def _slots_of(self, streams: list[int]) -> torch.Tensor:
        """The carry's slots of ``streams`` (a new stream gets an empty one)."""
        index = self._slots
        for stream in streams:
            index.setdefault(stream, len(index))
        if len(index) > len(self._waiting):  # room for twice as many streams
            more = 2 * len(index) - len(self._waiting)
            self._carry = fields(self._carry, lambda x: torch.cat(
                [x, x.new_zeros((x.shape[0], more, *x.shape[2:]))], 1))
            self._waiting = torch.cat([self._waiting, self._waiting.new_zeros(more)])
        return torch.tensor([index[stream] for stream in streams], device=self.device)

    def _write_windows(self, rows: dict[str, Any], start: torch.Tensor, cut: bool
                       ) -> torch.Tensor:
        """Write the complete windows of ``rows`` over the oldest; return ``waiting``."""
        items, waiting = n_step_windows(rows, start, self.n_step, cut)
        n = len(items["reward"])
        if not n:
            return waiting
        if self._storage is None:
            self._allocate({key: value[0] for key, value in items.items()})
        if n > self.size:  # only the last `size` survive, where writing all would leave them
            self._pos = (self._pos + n - self.size) % self.size
            items = {key: value[n - self.size :] for key, value in items.items()}
            n = self.size
        pos = self._pos
        index = (slice(pos, pos + n) if pos + n <= self.size  # a slice: plain copies
                 else ((torch.arange(n) + pos) % self.size).to(self.device))
        for key, value in items.items():
            self._storage[key][index] = value
        self._advance(n)
        return waiting

    def sample_indices(self, batch_size: int) -> torch.Tensor:
        """Uniform indices of stored transitions."""
        if len(self) == 0:
            raise RuntimeError("Cannot sample from an empty replay buffer")
        return torch.randint(0, self._len, (batch_size,), generator=self.generator)

    def gather(self, index: torch.Tensor) -> SampleBatch:
        """The transitions at ``index`` as a time-major ``SampleBatch`` on ``device``."""
        self._flush()
        if self._views:  # (NumPy's take: a third of index_select's instructions)
            rows = np.asarray(as_numpy(index))
            items = {key: torch.from_numpy(view.take(rows, 0).swapaxes(0, 1))
                     for key, view in self._views.items()}
        else:
            rows = torch.as_tensor(index, device=self.device)
            items = fields(self._storage, lambda leaf: leaf.index_select(0, rows).transpose(0, 1))
        return SampleBatch(**items, weight=self.weights(index))


def _is_float(dtype: Any) -> bool:
    """Whether ``dtype`` (NumPy's or torch's) is a floating-point one."""
    return dtype.kind == "f" if isinstance(dtype, np.dtype) else dtype.is_floating_point
