"""GAE and V-trace on time-major segments ``[T + 1, B]`` (``SampleBatch``'s rows): the
transition out of row ``t`` earns ``reward[t + 1]`` and ends the episode when ``done[t + 1]``
(no bootstrap) or ``truncated[t + 1]`` (bootstrap from ``value[t + 1]``). A ``done`` or
``truncated`` row is no training row (``mask`` is ``False``); nothing bootstraps across it."""

from __future__ import annotations

import torch

from looprl.memory.returns import discounted_sums, generalized_advantage_estimate

__all__ = ["generalized_advantage_estimate", "segment_gae", "segment_mask", "vtrace"]


def segment_mask(done: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
    """Training rows of a ``[T + 1, B]`` segment: ``[T, B]``, ``False`` at final observations."""
    return ~(done[:-1].bool() | truncated[:-1].bool())


def segment_gae(reward: torch.Tensor, value: torch.Tensor, done: torch.Tensor,
                truncated: torch.Tensor, gamma: float, lam: float
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GAE(gamma, lambda) (Schulman et al., 2016) on ``[T + 1, B]`` segments.

    ``delta_t = reward[t+1] + gamma * (1 - done[t+1]) * V[t+1] - V[t]`` and
    ``A_t = delta_t + gamma * lam * (1 - end[t+1]) * A_{t+1}`` with ``end = done | truncated``
    and ``A_T = 0``. Returns ``(advantages, returns, mask)``, each ``[T, B]``;
    ``returns = advantages + V``, both 0 on masked rows.
    """
    done, truncated = done.bool(), truncated.bool()
    value = value.float()
    end = done | truncated
    advantages = generalized_advantage_estimate(reward[1:].float(), value[:-1], value[1:],
                                                (~done[1:]).float(), end[1:], gamma, lam)
    mask = segment_mask(done, truncated)
    advantages = torch.where(mask, advantages, torch.zeros_like(advantages))
    returns = torch.where(mask, advantages + value[:-1], torch.zeros_like(advantages))
    return advantages, returns, mask


@torch.no_grad()
def vtrace(behaviour_log_prob: torch.Tensor, target_log_prob: torch.Tensor, reward: torch.Tensor,
           value: torch.Tensor, done: torch.Tensor, truncated: torch.Tensor, gamma: float,
           lam: float = 1.0, clip_rho: float = 1.0, clip_c: float = 1.0
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """V-trace targets (Espeholt et al., 2018, https://arxiv.org/abs/1802.01561, eq. 1).

    With ``rho_t = min(clip_rho, pi/mu)``, ``c_t = lam * min(clip_c, pi/mu)`` and
    ``delta_t = rho_t * (reward[t+1] + gamma * (1 - done[t+1]) * V[t+1] - V[t])``:
    ``v_t = V[t] + delta_t + gamma * c_t * (1 - end[t+1]) * (v_{t+1} - V[t+1])`` (``v_T = V[T]``);
    the policy-gradient advantage is
    ``rho_t * (reward[t+1] + gamma * (1 - done[t+1]) * v'_{t+1} - V[t])``, ``v'_{t+1}`` being
    ``v_{t+1}``, or ``V[t+1]`` where row ``t + 1`` ends the episode.
    ``behaviour_log_prob`` (``mu``) and ``target_log_prob`` (``pi``) are ``[T, B]``. Returns
    ``(vs, pg_advantages)``, each ``[T, B]``, without gradients; 0 on masked rows.
    """
    done, truncated = done.bool(), truncated.bool()
    value = value.float()
    end = done | truncated
    ratio = torch.exp(target_log_prob.float() - behaviour_log_prob.float())
    ratio = torch.where(end[:-1], torch.ones_like(ratio), ratio)  # never-executed actions
    rho = torch.clamp(ratio, max=clip_rho)
    c = lam * torch.clamp(ratio, max=clip_c)
    discount = gamma * (~done[1:]).float()
    td = reward[1:].float() + discount * value[1:] - value[:-1]
    deltas = torch.where(end[:-1], torch.zeros_like(td), rho * td)  # 0 at final observations
    decay = torch.where(end[1:], torch.zeros_like(c), gamma * c)
    vs = value[:-1] + discounted_sums(deltas, decay)  # the sums: v_t - V[t]
    next_vs = torch.cat((vs[1:], value[-1:]))
    next_vs = torch.where(end[1:], value[1:], next_vs)
    advantages = rho * (reward[1:].float() + discount * next_vs - value[:-1])
    mask = segment_mask(done, truncated)
    zero = torch.zeros_like(vs)
    return torch.where(mask, vs, zero), torch.where(mask, advantages, zero)
