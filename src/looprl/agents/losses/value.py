"""Value-based losses: TD targets and Q-learning regression."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from looprl.approximation.q_dist import project_distribution
from looprl.memory.returns import n_step_bootstrap

__all__ = ["c51_loss", "categorical_cross_entropy", "categorical_kl_divergence",
           "categorical_projection", "clipped_double_q_target", "double_q_target", "dqn_loss",
           "n_step_bootstrap", "td_target"]


def td_target(rewards: torch.Tensor, next_values: torch.Tensor, masks: torch.Tensor, discount: float
              ) -> torch.Tensor:
    """One-step TD target ``r + discount * mask * V(s')`` (``mask`` is 0 at termination)."""
    return rewards + discount * masks * next_values


def dqn_loss(values: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor | None = None,
             huber: bool = True) -> torch.Tensor:
    """Q-learning regression of ``Q(s, a)`` onto fixed ``targets``: Huber (default, as the Nature
    DQN) or MSE, each sample scaled by ``weights`` (importance weights)."""
    loss = F.smooth_l1_loss if huber else F.mse_loss
    return _weighted_mean(loss(values, targets.detach(), reduction="none"), weights)


def _weighted_mean(losses: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """The mean of per-sample ``losses``, each scaled by its importance weight (if given)."""
    return (losses if weights is None else losses * weights).mean()


def _value_at(values: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``values[..., a]`` for the ``(..., 1)``-shaped ``actions``."""
    return values.gather(-1, actions).squeeze(-1)


def double_q_target(rewards: torch.Tensor, next_online_values: torch.Tensor,
                    next_target_values: torch.Tensor, masks: torch.Tensor,
                    discount: float | torch.Tensor) -> torch.Tensor:
    """Double Q-learning target (van Hasselt et al., 2016), ``discount`` a float or a tensor:
    ``r + discount * mask * Q_target(s', argmax_a Q_online(s', a))``."""
    best = next_online_values.argmax(dim=-1, keepdim=True)
    return rewards + discount * masks * _value_at(next_target_values, best)


def clipped_double_q_target(rewards: torch.Tensor, next_online_values: torch.Tensor,
                            next_target_values: torch.Tensor, masks: torch.Tensor,
                            discount: float | torch.Tensor) -> torch.Tensor:
    """Clipped double Q-learning target for discrete actions (Fujimoto et al., 2018; Mighty's
    ``ClippedDoubleQLearning``): ``r + discount * mask * min(Q_online(s', a*), Q_target(s', a*))``
    with ``a* = argmax_a Q_online(s', a)``."""
    best = next_online_values.argmax(dim=-1, keepdim=True)
    online, target = _value_at(next_online_values, best), _value_at(next_target_values, best)
    return rewards + discount * masks * torch.minimum(online, target)


def categorical_projection(rewards: torch.Tensor, masks: torch.Tensor,
                           discount: float | torch.Tensor, next_probs: torch.Tensor,
                           atoms: torch.Tensor) -> torch.Tensor:
    """C51's projection of ``r + discount * mask * Z(s')`` onto ``atoms`` (Bellemare et al., 2017,
    Algorithm 1): ``rewards``, ``masks`` and ``discount`` (or a float) ``(batch,)``, ``next_probs``
    ``(batch, n_atoms)``; returns ``(batch, n_atoms)`` target probabilities."""
    scale = (discount * masks).unsqueeze(-1)
    return project_distribution(next_probs, rewards.unsqueeze(-1) + scale * atoms, atoms)


def categorical_cross_entropy(probs: torch.Tensor, target_probs: torch.Tensor) -> torch.Tensor:
    """Per-sample ``-sum_i target_i * log(p_i)`` (C51's loss), ``probs`` clamped at ``1e-6``."""
    return -(target_probs.detach() * probs.clamp_min(1e-6).log()).sum(-1)


def categorical_kl_divergence(probs: torch.Tensor, target_probs: torch.Tensor) -> torch.Tensor:
    """Per-sample ``KL(target || p) = sum_i target_i * (log(target_i) - log(p_i))``, both clamped
    at ``1e-6`` (Rainbow's priorities, Hessel et al., 2018; ALL's ``C51._kl``): 0 where ``probs``
    matches the target, unlike the cross-entropy, which keeps the target's entropy."""
    target_probs = target_probs.detach()
    return categorical_cross_entropy(probs, target_probs) + (
        target_probs * target_probs.clamp_min(1e-6).log()).sum(-1)


def c51_loss(probs: torch.Tensor, target_probs: torch.Tensor,
             weights: torch.Tensor | None = None) -> torch.Tensor:
    """Mean (importance-weighted) cross-entropy of ``probs`` against projected targets."""
    return _weighted_mean(categorical_cross_entropy(probs, target_probs), weights)
