"""Value-based losses: TD targets and Q-learning regression."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def td_target(
    rewards: torch.Tensor, next_values: torch.Tensor, masks: torch.Tensor, discount: float
) -> torch.Tensor:
    """One-step TD target ``r + discount * mask * V(s')`` (``mask`` is 0 at termination)."""
    return rewards + discount * masks * next_values


def dqn_loss(
    values: torch.Tensor,
    targets: torch.Tensor,
    weights: torch.Tensor | None = None,
    huber: bool = True,
) -> torch.Tensor:
    """Q-learning regression of ``Q(s, a)`` onto fixed ``targets`` (Mnih et al., 2015).

    Huber (smooth L1) loss by default, as in the Nature DQN; ``weights`` scale each
    sample (importance weights of prioritized replay).
    """
    targets = targets.detach()
    if huber:
        elementwise = F.smooth_l1_loss(values, targets, reduction="none")
    else:
        elementwise = F.mse_loss(values, targets, reduction="none")
    if weights is not None:
        elementwise = elementwise * weights
    return elementwise.mean()
