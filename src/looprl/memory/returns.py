"""Discounted sums along time, the recursions behind the targets of the buffers and the
trainers (``looprl.agents.losses`` re-exports them)."""

from __future__ import annotations

import torch

__all__ = ["discounted_sums", "generalized_advantage_estimate", "n_step_bootstrap"]


def generalized_advantage_estimate(rewards: torch.Tensor, values: torch.Tensor,
                                   next_values: torch.Tensor, next_masks: torch.Tensor,
                                   next_dones: torch.Tensor, gamma: float, lam: float
                                   ) -> torch.Tensor:
    """GAE(gamma, lambda) advantages along dimension 0: ``delta_t = r_t + gamma * mask_{t+1}
    * V(s_{t+1}) - V(s_t)``, ``A_t = delta_t + gamma * lam * (1 - done_{t+1}) * A_{t+1}``."""
    deltas = rewards + gamma * next_masks * next_values - values
    return discounted_sums(deltas, gamma * lam * (1.0 - next_dones.float()))


def discounted_sums(deltas: torch.Tensor, decay: torch.Tensor) -> torch.Tensor:
    """``x_t = deltas_t + decay_t * x_{t+1}`` backwards along dimension 0 (0 past the end)."""
    if deltas.shape[0] == 0:
        return torch.empty_like(deltas)
    steps = zip(reversed(deltas.unbind(0)), reversed(decay.unbind(0)), strict=True)
    last, sums = torch.zeros_like(deltas[0]), []
    for delta, step_decay in steps:  # rows as views: one kernel per step, no indexing
        last = torch.addcmul(delta, step_decay, last)
        sums.append(last)
    return torch.stack(sums[::-1])


def n_step_bootstrap(reward: torch.Tensor, done: torch.Tensor, truncated: torch.Tensor,
                     gamma: float, n_step: int, rows: int | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(returns, bootstrap_row, discount)`` ``[rows, B]`` of ``[T + 1, B]`` segments: ``sum_{k<K}
    gamma^k reward[t + 1 + k]``, ``t + K`` and ``gamma^K`` (0 if terminal), ``K`` the steps up
    to ``n_step``, the first episode end or row ``T``."""
    last = reward.shape[0] - 1
    rows = last if rows is None else min(rows, last)
    streams = reward.shape[1]
    end = done.bool() | truncated.bool()
    t = torch.arange(rows, device=reward.device).unsqueeze(1).expand(rows, streams)
    returns = torch.zeros(rows, streams, device=reward.device)
    boot = t.clone()
    active = torch.ones(rows, streams, dtype=torch.bool, device=reward.device)
    for k in range(1, n_step + 1):
        reach = min(rows, last - k + 1)  # rows t < reach have t + k <= T
        if reach <= 0:
            break
        step = active[:reach]  # (reach only shrinks: rows past it are never read again)
        returns[:reach] += torch.where(step, gamma ** (k - 1) * reward[k : k + reach].float(), 0.0)
        boot[:reach] = torch.where(step, t[:reach] + k, boot[:reach])
        active[:reach] = step & ~end[k : k + reach]
    discount = torch.where(done.bool().gather(0, boot), 0.0, gamma ** (boot - t).float())
    return returns, boot, discount
