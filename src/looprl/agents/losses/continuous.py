"""Continuous-control losses of DDPG, TD3 and SAC. The trainers compute targets without
gradients; ``mask`` is 0 at termination."""

from __future__ import annotations

import torch

__all__ = ["critic_loss", "deterministic_actor_loss", "sac_actor_loss", "sac_target",
           "sac_temperature_loss", "smoothed_target_action", "td3_target", "twin_critic_loss"]


def critic_loss(values: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``mean((Q(s, a) - y)^2)`` onto fixed targets ``y``."""
    return (values - targets.detach()).pow(2).mean()


def twin_critic_loss(values1: torch.Tensor, values2: torch.Tensor, targets: torch.Tensor
                     ) -> torch.Tensor:
    """``mean((Q1 - y)^2) + mean((Q2 - y)^2)``: both critics regress onto the same target."""
    return critic_loss(values1, targets) + critic_loss(values2, targets)


def deterministic_actor_loss(values: torch.Tensor) -> torch.Tensor:
    """DDPG/TD3 actor loss ``-mean(Q(s, mu(s)))``."""
    return -values.mean()


def smoothed_target_action(target_actions: torch.Tensor, noise: torch.Tensor, sigma: float,
                           noise_clip: float, scale: torch.Tensor, low: torch.Tensor,
                           high: torch.Tensor) -> torch.Tensor:
    """TD3's target-policy smoothing: ``clip(a' + scale * clip(sigma * eps, -c, c), low, high)``,
    ``eps`` the standard normal ``noise``, ``c`` the ``noise_clip``; ``scale``, ``low``, ``high``:
    half-range and bounds of the action space."""
    smoothing = torch.clamp(sigma * noise, -noise_clip, noise_clip) * scale
    return torch.clamp(target_actions + smoothing, low, high)


def td3_target(rewards: torch.Tensor, next_values1: torch.Tensor, next_values2: torch.Tensor,
               masks: torch.Tensor, discount: float) -> torch.Tensor:
    """Clipped double-Q target ``r + discount * mask * min(Q1'(s', a'), Q2'(s', a'))``."""
    return rewards + discount * masks * torch.min(next_values1, next_values2)


def sac_target(rewards: torch.Tensor, next_values1: torch.Tensor, next_values2: torch.Tensor,
               next_log_probs: torch.Tensor, masks: torch.Tensor, discount: float,
               alpha: torch.Tensor | float) -> torch.Tensor:
    """Soft target ``r + discount * mask * (min(Q1', Q2') - alpha * log pi(a'|s'))``."""
    soft_values = torch.min(next_values1, next_values2) - alpha * next_log_probs
    return rewards + discount * masks * soft_values


def sac_actor_loss(values1: torch.Tensor, values2: torch.Tensor, log_probs: torch.Tensor,
                   alpha: torch.Tensor | float) -> torch.Tensor:
    """``mean(alpha * log pi(a|s) - min(Q1(s, a), Q2(s, a)))`` with ``a ~ pi(.|s)``."""
    return (alpha * log_probs - torch.min(values1, values2)).mean()


def sac_temperature_loss(log_alpha: torch.Tensor, log_probs: torch.Tensor,
                         target_entropy: float) -> torch.Tensor:
    """``-mean(log_alpha * (log pi(a|s) + target_entropy))`` (log-probs held fixed): raises
    ``alpha`` when the entropy falls below ``target_entropy``."""
    return -(log_alpha * (log_probs.detach() + target_entropy)).mean()
