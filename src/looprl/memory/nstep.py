"""N-step replay: each transition is stored with the ``n`` steps that follow it (Sutton,
1988; used by Rainbow, Hessel et al. 2018, https://arxiv.org/abs/1710.02298).

``NStepReplayBuffer`` keeps the last ``n + 1`` rows of every stream and writes a window of
``n + 1`` rows (``SampleBatch``'s convention) into the wrapped buffer once a transition is
``n`` steps old, or when its episode ends (the window then repeats its final row). The trainer
computes the n-step return from it (``looprl.agents.losses.n_step_bootstrap``).
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.core import SampleBatch, State, StateArray

__all__ = ["NStepReplayBuffer"]


class NStepReplayBuffer:
    """Cuts each stream into ``n``-step windows and stores them in a wrapped buffer.

    A stream is a single environment (``State`` inputs) or one row of ``StateArray`` inputs.

    Args:
        n: the number of steps (``1`` gives ordinary one-step transitions).
        buffer: the wrapped ring buffer (an ``ExperienceReplayBuffer`` or
            ``PrioritizedReplayBuffer``) with ``n_step == n``.
    """

    #: the run's metrics dictionary when meta components are attached (``looprl.meta``)
    metrics: dict[str, Any] | None = None

    def __init__(self, n: int, buffer: Any):
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        if buffer.n_step != n:
            raise ValueError(f"the wrapped buffer stores {buffer.n_step}-step windows, not {n}")
        self.n = n
        self.buffer = buffer
        self._rows: dict[str, torch.Tensor] | None = None  # [streams, n + 1, ...]
        self._length: torch.Tensor | None = None  # rows held per stream

    def __len__(self) -> int:
        return len(self.buffer)

    @property
    def size(self) -> int:
        return self.buffer.size

    def store(self, state: State | None, action: Any, next_state: State) -> None:
        """Record one step per stream; write the windows that are complete."""
        if state is None:
            return
        if not isinstance(state, StateArray):  # one environment: batches of one row
            state, next_state = State.array([state]), State.array([next_state])
            action = torch.as_tensor(action).unsqueeze(0)
        device = self.buffer.device
        state, next_state = state.to(device), next_state.to(device)
        action = torch.as_tensor(action, device=device)
        if self._rows is None:
            self._allocate(state, action)
        self._add(state, action, next_state)

    def _allocate(self, state: StateArray, action: torch.Tensor) -> None:
        streams, rows, device = state.shape[0], self.n + 1, self.buffer.device

        def zeros(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
            return torch.zeros((streams, rows, *shape), dtype=dtype, device=device)

        obs = state.observation
        self._rows = {
            "obs": zeros(obs.shape[1:], obs.dtype),
            "action": zeros(action.shape[1:], action.dtype),
            "reward": zeros((), torch.float32),
            "done": zeros((), torch.bool),
            "truncated": zeros((), torch.bool),
        }
        self._length = torch.zeros(streams, dtype=torch.long, device=device)

    def _add(self, state: StateArray, action: torch.Tensor, next_state: StateArray) -> None:
        r, length = self._rows, self._length
        valid = ~state.done
        start = valid & (length == 0)  # a stream's first step: its row 0 is `state`
        if bool(start.any()):
            r["obs"][start, 0] = state.observation[start]
            for key in ("reward", "done", "truncated"):
                r[key][start, 0] = 0
            length[start] = 1
        streams = valid.nonzero(as_tuple=True)[0]
        last = length[streams]
        r["action"][streams, last - 1] = action[streams]
        terminal = next_state.mask[streams] == 0
        r["obs"][streams, last] = next_state.observation[streams]
        r["reward"][streams, last] = next_state.reward[streams].float()
        r["done"][streams, last] = terminal
        r["truncated"][streams, last] = next_state.done[streams] & ~terminal
        length[streams] = last + 1
        ended = torch.zeros_like(valid)
        ended[streams] = next_state.done[streams].bool()
        full = valid & (length == self.n + 1) & ~ended
        if bool(full.any()):
            self.buffer.write({key: value[full] for key, value in r.items()})
            for value in r.values():
                value[full, :-1] = value[full, 1:].clone()
            length[full] = self.n
        for stream in ended.nonzero(as_tuple=True)[0].tolist():
            self._flush(stream)

    def _flush(self, stream: int) -> None:
        """Write every window of ``stream``'s finished episode, each cut at its final row."""
        held = int(self._length[stream])
        rows = torch.arange(held - 1).unsqueeze(1) + torch.arange(self.n + 1)
        rows = rows.clamp(max=held - 1).to(self._length.device)
        self.buffer.write({key: value[stream][rows] for key, value in self._rows.items()})
        self._length[stream] = 0

    def sample_batch(self, batch_size: int) -> SampleBatch:
        """``batch_size`` windows as one ``[n + 1, batch_size]`` ``SampleBatch``."""
        return self.buffer.sample_batch(batch_size)

    def sample_indices(self, batch_size: int) -> torch.Tensor:
        return self.buffer.sample_indices(batch_size)

    def gather(self, index: torch.Tensor) -> SampleBatch:
        """The windows at ``index`` (see ``sample_batch``)."""
        return self.buffer.gather(index)

    def update_priorities(self, priorities: Any, index: Any = None) -> None:
        """Passed on to the wrapped buffer."""
        self.buffer.update_priorities(priorities, index)

