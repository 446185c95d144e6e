"""Policy-gradient losses: PPO's clipped surrogate, value regression, normalization."""

from __future__ import annotations

import torch


def ppo_policy_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    clip: float,
) -> torch.Tensor:
    """PPO's clipped surrogate objective, negated to be minimized (Schulman et al., 2017).

    ``-mean(min(ratio * A, clip(ratio, 1 - clip, 1 + clip) * A))`` with
    ``ratio = exp(log_probs - old_log_probs)``.
    """
    ratio = torch.exp(log_probs - old_log_probs)
    surrogate = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * advantages
    return -torch.min(surrogate, clipped).mean()


def value_loss(
    values: torch.Tensor,
    returns: torch.Tensor,
    old_values: torch.Tensor | None = None,
    clip: float | None = None,
) -> torch.Tensor:
    """Mean squared error of value predictions; optionally clipped around ``old_values``.

    With ``clip``: ``mean(max((V - R)^2, (V_old + clamp(V - V_old, -clip, clip) - R)^2))``.
    """
    loss = (values - returns) ** 2
    if clip is not None and old_values is not None:
        clipped = old_values + torch.clamp(values - old_values, -clip, clip)
        loss = torch.max(loss, (clipped - returns) ** 2)
    return loss.mean()


def normalize(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``(x - mean) / (std + eps)`` (unbiased std, as SB3 and CleanRL normalize advantages)."""
    return (x - x.mean()) / (x.std() + eps)


def ppo_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    returns: torch.Tensor,
    entropy: torch.Tensor,
    clip: float,
    value_coef: float = 0.5,
    entropy_coef: float = 0.0,
    old_values: torch.Tensor | None = None,
    value_clip: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The full PPO loss: policy + ``value_coef`` * value - ``entropy_coef`` * entropy.

    Returns the total loss and its detached parts for logging.
    """
    policy = ppo_policy_loss(log_probs, old_log_probs, advantages, clip)
    value = value_loss(values, returns, old_values, value_clip)
    entropy_mean = entropy.mean()
    total = policy + value_coef * value
    if entropy_coef:  # leave the entropy out of the graph when its weight is zero
        total = total - entropy_coef * entropy_mean
    parts = {"policy": policy.detach(), "value": value.detach(), "entropy": entropy_mean.detach()}
    return total, parts
