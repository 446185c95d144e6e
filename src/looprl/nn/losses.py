"""The loss helpers of ``all.nn``: ``weighted_mse_loss``, ``weighted_smooth_l1_loss`` (per-sample
weights, e.g. prioritized replay's importance weights) and ``td_loss``."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.nn import functional as F

__all__ = ["td_loss", "weighted_mse_loss", "weighted_smooth_l1_loss"]


def _reduce(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    return loss.mean() if reduction == "mean" else loss.sum()


def weighted_mse_loss(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor,
                      reduction: str = "mean") -> torch.Tensor:
    """``weight * (target - input)^2``, averaged (``"mean"``) or summed (``"sum"``)."""
    return _reduce(weight * F.mse_loss(input, target, reduction="none"), reduction)


def weighted_smooth_l1_loss(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor,
                            reduction: str = "mean") -> torch.Tensor:
    """``weight`` times the Huber loss (``beta = 1``) of ``input`` against ``target``,
    averaged (``"mean"``) or summed (``"sum"``)."""
    return _reduce(weight * F.smooth_l1_loss(input, target, reduction="none"), reduction)


def td_loss(loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
            ) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``loss(estimates, targets)`` turned into a loss of ``(estimates, td_errors)``: the target
    is ``td_errors + estimates.detach()``."""

    def _loss(estimates: torch.Tensor, errors: torch.Tensor) -> torch.Tensor:
        return loss(estimates, errors + estimates.detach())

    return _loss
