"""ALL's on-policy advantage buffers: ``store(states, actions, rewards)`` ``n_steps`` times, then
``advantages(next_states)`` returns flat ``(states, actions, advantages)`` and empties them."""

from __future__ import annotations

from typing import Any

import torch

from looprl.core import StateArray
from looprl.core.ranges import check_ranges
from looprl.core.suggest import check_count
from looprl.memory.returns import generalized_advantage_estimate
from looprl.memory.store import check_action

__all__ = ["GeneralizedAdvantageBuffer", "NStepAdvantageBuffer"]


def _stacked(steps: list[StateArray]) -> StateArray:
    """The ``StateArray`` ``(len(steps), n_envs)`` of the tensor entries of ``steps``."""
    first = steps[0]
    x = {key: torch.stack([torch.as_tensor(step[key]) for step in steps])
         for key, value in first.items() if isinstance(value, torch.Tensor)}
    return StateArray(x, (len(steps), *first.shape), device=first.device)


class _AdvantageBuffer:
    """The steps of ``n_envs`` environments, up to ``n_steps`` of them."""

    def __init__(self, v: Any, features: Any, n_steps: int, n_envs: int,
                 discount_factor: float = 1):
        check_count(n_steps=n_steps, n_envs=n_envs)
        check_ranges({"discount_factor": discount_factor}, type(self).__name__)
        self.v, self.features = v, features
        self.n_steps, self.n_envs, self.gamma = int(n_steps), int(n_envs), discount_factor
        self._steps: list[tuple[StateArray, torch.Tensor, torch.Tensor]] = []

    def __len__(self) -> int:
        return len(self._steps) * self.n_envs

    def store(self, states: StateArray | None, actions: torch.Tensor, rewards: Any) -> None:
        """One step of every environment (``states`` ``None``: nothing, as ALL's)."""
        if states is None:
            return
        self._check_states("store(states, actions, rewards)", states)
        check_action(f"{type(self).__name__}.store(states, actions, rewards)", states, actions)
        if len(self._steps) >= self.n_steps:
            raise RuntimeError(f"{type(self).__name__} holds n_steps={self.n_steps} steps "
                               "already: call advantages(next_states) before storing more")
        self._steps.append((states, torch.as_tensor(actions),
                            torch.as_tensor(rewards, dtype=torch.float32)))

    def _take(self, next_states: StateArray) -> tuple[StateArray, torch.Tensor, torch.Tensor]:
        """``(states [n_steps + 1, n_envs], actions, rewards [n_steps, n_envs])``; empties."""
        self._check_states("advantages(next_states)", next_states)
        if len(self._steps) < self.n_steps:
            raise RuntimeError(f"{type(self).__name__} holds {len(self._steps)} of its "
                               f"n_steps={self.n_steps} steps: store more before advantages()")
        states, actions, rewards = zip(*self._steps)
        self._steps = []
        states = _stacked([*states, next_states])
        actions = torch.stack(actions)
        rewards = torch.stack(rewards).to(states.observation.device)
        return states, actions.reshape(-1, *actions.shape[2:]), rewards

    def _check_states(self, call: str, states: Any) -> None:
        if not isinstance(states, StateArray):  # (a single State too: one row of no batch)
            raise TypeError(f"{type(self).__name__}.{call} takes a StateArray of the "
                            f"n_envs={self.n_envs} environments' states, got "
                            f"{type(states).__name__}: pass env.state_array")

    def _gae(self, states: StateArray, rewards: torch.Tensor, values: torch.Tensor,
             lam: float) -> torch.Tensor:
        """GAE(gamma, ``lam``) of the steps of ``states``, cut at every episode end."""
        masks = states.mask[1:].float().to(rewards.device)
        ends = torch.as_tensor(states.done[1:], device=rewards.device).bool() | (masks == 0)
        return generalized_advantage_estimate(rewards, values[:-1], values[1:], masks, ends,
                                              self.gamma, lam)

    def _transitions(self, states: StateArray, advantages: torch.Tensor) -> torch.Tensor:
        """``advantages`` at 0 where the stored state ended its episode (its action ignored)."""
        ended = torch.as_tensor(states.done[: self.n_steps], device=advantages.device).bool()
        return advantages.masked_fill(ended, 0.0)

    def _values(self, states: StateArray, mode: str = "target") -> torch.Tensor:
        """``v(features(states))`` through ``mode`` (``target`` or ``eval``)."""
        return getattr(self.v, mode)(getattr(self.features, mode)(states)).view(states.shape)


class NStepAdvantageBuffer(_AdvantageBuffer):
    """n-step advantages ``R_t + gamma^k V(s_{t+k}) - V(s_t)`` (A2C) up to the last step or an
    episode's end: GAE with ``lambda = 1``, the target network's ``V(s_{t+k})``."""

    def advantages(self, states: StateArray) -> tuple[StateArray, torch.Tensor, torch.Tensor]:
        """``(states, actions, advantages)`` of the stored steps, ``states`` the next ones."""
        states, actions, rewards = self._take(states)
        values = self._values(states)
        now = states[: self.n_steps]
        advantages = self._gae(states, rewards, values, 1.0)
        advantages = advantages + values[:-1] - self._values(now, "eval")
        return now.flatten(), actions, self._transitions(states, advantages).view(-1)


class GeneralizedAdvantageBuffer(_AdvantageBuffer):
    """GAE(gamma, lambda) advantages (https://arxiv.org/abs/1506.02438) over the target
    network's values; ``compute_batch_size``: states per forward pass."""

    def __init__(self, v: Any, features: Any, n_steps: int, n_envs: int,
                 discount_factor: float = 1, lam: float = 1, compute_batch_size: int = 256):
        super().__init__(v, features, n_steps, n_envs, discount_factor)
        check_count(compute_batch_size=compute_batch_size)
        check_ranges({"lam": lam}, type(self).__name__)
        self.lam, self.compute_batch_size = lam, int(compute_batch_size)

    def advantages(self, next_states: StateArray
                   ) -> tuple[StateArray, torch.Tensor, torch.Tensor]:
        """``(states, actions, advantages)`` of the stored steps."""
        states, actions, rewards = self._take(next_states)
        flat = states.flatten()
        size = self.compute_batch_size
        values = torch.cat([self._values(flat[i : i + size])
                            for i in range(0, len(flat), size)]).view(states.shape)
        advantages = self._transitions(states, self._gae(states, rewards, values, self.lam))
        return states[: self.n_steps].flatten(), actions, advantages.view(-1)
