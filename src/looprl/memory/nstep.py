"""N-step replay: transitions ``(s_t, a_t, R_t^(n), s_{t+k}, mask, gamma^k)`` (Sutton, 1988;
used by Rainbow, Hessel et al. 2018, https://arxiv.org/abs/1710.02298).

``R_t^(n) = sum_{j<k} gamma^j r_{t+j+1}`` with ``k = n``, or fewer steps when the episode
ends first. Termination and truncation stay apart: ``mask`` is 0 only when the episode
terminated within the ``k`` steps, so a truncated episode still bootstraps from its last
state with ``gamma^k``. Sampled ``next_states`` carry that discount as the ``discount``
entry, which the value-based trainers use in place of ``gamma``.
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.core import State, StateArray

__all__ = ["NStepReplayBuffer"]


class NStepReplayBuffer:
    """Accumulates n-step returns per stream and stores them in a wrapped buffer.

    A stream is a single environment (``State`` inputs) or one row of ``StateArray``
    inputs. Each stream keeps its last ``n`` steps; a step's transition is written once
    it is ``n`` steps old or when its episode ends (done), whichever comes first.

    Args:
        n: the number of steps (``1`` gives ordinary one-step transitions).
        discount_factor: gamma.
        buffer: the wrapped ring buffer (an ``ExperienceReplayBuffer`` or
            ``PrioritizedReplayBuffer``); this object must be its only writer, so that the
            discounts kept here stay aligned with its slots.
    """

    #: the run's metrics dictionary when meta components are attached (``looprl.meta``)
    metrics: dict[str, Any] | None = None

    def __init__(self, n: int, discount_factor: float, buffer: Any):
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        self.n = n
        self.discount_factor = discount_factor
        self.buffer = buffer
        self.discounts = torch.zeros(buffer.size, device=buffer.store_device)
        self._written = 0
        self._t = 0
        self._pending: dict[str, torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.buffer)

    @property
    def size(self) -> int:
        return self.buffer.size

    def store(self, state: State | None, action: Any, next_state: State) -> None:
        """Record one step per stream; write the transitions that are complete."""
        if state is None:
            return
        if not isinstance(state, StateArray):
            state, action, next_state = _as_batch(state, action, next_state)
        device = self.buffer.store_device
        state, next_state = state.to(device), next_state.to(device)
        if self._pending is None:
            self._allocate(state, torch.as_tensor(action, device=device))
        self._add(state, torch.as_tensor(action, device=device), next_state)
        self._t += 1

    def _allocate(self, state: StateArray, action: torch.Tensor) -> None:
        rows, n, device = state.shape[0], self.n, self.buffer.store_device
        obs = state.observation
        self._pending = {
            "observation": torch.zeros((rows, n, *obs.shape[1:]), dtype=obs.dtype, device=device),
            "action": torch.zeros((rows, n, *action.shape[1:]), dtype=action.dtype, device=device),
            "return": torch.zeros((rows, n), device=device),
            "age": torch.full((rows, n), -1, dtype=torch.long, device=device),
        }

    def _add(self, state: StateArray, action: torch.Tensor, next_state: StateArray) -> None:
        p = self._pending
        slot = self._t % self.n
        valid = ~state.done
        p["observation"][valid, slot] = state.observation[valid]
        p["action"][valid, slot] = action[valid]
        p["return"][valid, slot] = 0.0
        p["age"][valid, slot] = 0
        live = (p["age"] >= 0) & valid.unsqueeze(1)
        reward = next_state.reward.float().unsqueeze(1)
        p["return"] += torch.where(live, self.discount_factor ** p["age"].clamp_min(0) * reward, 0)
        p["age"] += live.long()
        ready = live & ((p["age"] >= self.n) | next_state.done.unsqueeze(1))
        self._emit(ready, next_state)

    def _emit(self, ready: torch.Tensor, next_state: StateArray) -> None:
        rows, slots = ready.nonzero(as_tuple=True)
        if rows.numel() == 0:
            return
        p = self._pending
        k = rows.shape[0]
        device = rows.device
        states = StateArray({"observation": p["observation"][rows, slots]}, (k,), device=device)
        ends = StateArray(
            {
                "observation": next_state.observation[rows],
                "reward": p["return"][rows, slots],
                "mask": next_state.mask[rows].float(),
                "done": next_state.done[rows],
            },
            (k,),
            device=device,
        )
        self.buffer.store(states, p["action"][rows, slots], ends)
        index = (self._written + torch.arange(k, device=device)) % self.size
        self.discounts[index] = self.discount_factor ** p["age"][rows, slots].float()
        self._written += k
        p["age"][rows, slots] = -1

    def sample(self, batch_size: int):
        """``(states, actions, returns, next_states, weights)``; ``next_states['discount']``
        holds ``gamma^k`` of each transition."""
        return self.gather(self.buffer.sample_indices(batch_size))

    def sample_indices(self, batch_size: int) -> torch.Tensor:
        return self.buffer.sample_indices(batch_size)

    def gather(self, index: torch.Tensor):
        """The transitions at ``index`` in the format of ``sample``."""
        states, actions, rewards, next_states, weights = self.buffer.gather(index)
        next_states["discount"] = self.discounts[index].to(rewards.device)
        return states, actions, rewards, next_states, weights

    def update_priorities(self, td_errors: torch.Tensor) -> None:
        """Passed on to the wrapped buffer."""
        self.buffer.update_priorities(td_errors)


def _as_batch(state: State, action: Any, next_state: State) -> tuple:
    """One transition of single states as batches of one row."""
    device = state.device

    def row(value: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
        return torch.as_tensor(value, dtype=dtype, device=device).unsqueeze(0)

    states = StateArray(
        {"observation": row(state.observation), "done": row(bool(state.done))}, (1,), device=device
    )
    ends = StateArray(
        {
            "observation": row(next_state.observation),
            "reward": row(next_state.reward, torch.float32),
            "mask": row(next_state.mask, torch.float32),
            "done": row(bool(next_state.done)),
        },
        (1,),
        device=device,
    )
    return states, row(action), ends
