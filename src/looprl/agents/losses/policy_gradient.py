"""Policy-gradient losses: REINFORCE/A2C, PPO's clipped surrogate, PPG's auxiliary loss,
value regression and advantage normalization."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

__all__ = ["a2c_loss", "categorical_kl", "normalize", "policy_gradient_loss", "ppg_aux_loss",
           "ppo_clip_bounds", "ppo_loss", "ppo_policy_loss", "value_loss"]


def ppo_policy_loss(log_probs: torch.Tensor, old_log_probs: torch.Tensor,
                    advantages: torch.Tensor, clip: float,
                    bounds: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
                    ) -> torch.Tensor:
    """PPO's clipped surrogate objective, negated (Schulman et al., 2017):
    ``-mean(min(ratio * A, clip(ratio, 1 - clip, 1 + clip) * A))``. Only ``1 + clip`` binds where
    ``A >= 0`` and ``1 - clip`` where ``A < 0``, so this is ``dot(clamp(ratio, low, high), -A / n)``
    (half the autograd nodes). ``bounds``: ``ppo_clip_bounds(advantages, clip)``, if precomputed."""
    low, high, weights = bounds if bounds is not None else ppo_clip_bounds(advantages, clip)
    clamped = torch.exp(log_probs - old_log_probs).flatten().clamp(low, high)
    return torch.dot(clamped, weights.to(clamped.dtype))


def ppo_clip_bounds(advantages: torch.Tensor, clip: float
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(low, high, weights)`` of ``ppo_policy_loss``, flattened: each ratio's bounds (the
    non-binding one infinite) and the weights ``-A / n``."""
    positive = advantages.flatten() >= 0
    low = torch.where(positive, -math.inf, 1.0 - clip)
    high = torch.where(positive, 1.0 + clip, math.inf)
    return low, high, advantages.flatten() / -advantages.numel()


def value_loss(values: torch.Tensor, returns: torch.Tensor, old_values: torch.Tensor | None = None,
               clip: float | None = None) -> torch.Tensor:
    """Mean squared error of value predictions; with ``clip`` and ``old_values``:
    ``mean(max((V - R)^2, (V_old + clamp(V - V_old, -clip, clip) - R)^2))``."""
    if clip is None or old_values is None:
        return F.mse_loss(values, returns)
    clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    return torch.max((values - returns) ** 2, (clipped - returns) ** 2).mean()


def normalize(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``(x - mean) / (std + eps)`` (unbiased std, as SB3 and CleanRL)."""
    std, mean = torch.std_mean(x)
    return (x - mean) / (std + eps)


def ppo_loss(log_probs: torch.Tensor, old_log_probs: torch.Tensor, advantages: torch.Tensor,
             values: torch.Tensor, returns: torch.Tensor, entropy: torch.Tensor | None, clip: float,
             value_coef: float = 0.5, entropy_coef: float = 0.0,
             old_values: torch.Tensor | None = None, value_clip: float | None = None,
             bounds: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
             ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The PPO loss, policy + ``value_coef`` * value - ``entropy_coef`` * entropy, and its detached
    parts (no ``entropy`` part when it is ``None``: then ``ValueError`` if ``entropy_coef``)."""
    policy = ppo_policy_loss(log_probs, old_log_probs, advantages, clip, bounds)
    value = value_loss(values, returns, old_values, value_clip)
    total = torch.add(policy, value, alpha=value_coef)
    parts = {"policy": policy.detach(), "value": value.detach()}
    if entropy is None:
        if entropy_coef:
            raise ValueError(f"entropy_coef is {entropy_coef} but no entropy was given: "
                             "analyze the minibatch with its entropy")
        return total, parts
    entropy_mean = entropy.mean()
    if entropy_coef:  # leave the entropy out of the graph when its weight is zero
        total = torch.sub(total, entropy_mean, alpha=entropy_coef)
    parts["entropy"] = entropy_mean.detach()
    return total, parts


def policy_gradient_loss(log_probs: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """The REINFORCE policy loss ``-mean(log pi(a | s) * A)``, ``A`` constant."""
    return -(log_probs * advantages.detach()).mean()


def a2c_loss(log_probs: torch.Tensor, advantages: torch.Tensor, values: torch.Tensor,
             returns: torch.Tensor, entropy: torch.Tensor, value_coef: float = 0.5,
             entropy_coef: float = 0.0) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Advantage actor-critic loss (VPG, VAC, A2C), policy + ``value_coef`` * value -
    ``entropy_coef`` * entropy (``returns`` constant), and its detached parts."""
    policy = policy_gradient_loss(log_probs, advantages)
    value = value_loss(values, returns.detach())
    entropy_mean = entropy.mean()
    total = policy + value_coef * value
    if entropy_coef:
        total = total - entropy_coef * entropy_mean
    parts = {"policy": policy.detach(), "value": value.detach(), "entropy": entropy_mean.detach()}
    return total, parts


def categorical_kl(old_logits: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """``KL(pi_old || pi)`` per row of categorical logits: ``sum_a p_old (log p_old - log p)``."""
    old_log_p = torch.log_softmax(old_logits, dim=-1)
    log_p = torch.log_softmax(logits, dim=-1)
    return (old_log_p.exp() * (old_log_p - log_p)).sum(-1)


def ppg_aux_loss(aux_values: torch.Tensor, returns: torch.Tensor, old_logits: torch.Tensor,
                 logits: torch.Tensor, beta_clone: float = 1.0
                 ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPG's auxiliary-phase loss (Cobbe et al., 2021, eq. 2) and its detached parts:
    ``0.5 * mean((V_aux - R)^2) + beta_clone * mean(KL(pi_old || pi))``, ``old_logits`` constant."""
    aux = 0.5 * ((aux_values - returns.detach()) ** 2).mean()
    kl = categorical_kl(old_logits.detach(), logits).mean()
    total = aux + beta_clone * kl
    return total, {"aux_value": aux.detach(), "kl": kl.detach()}
