"""Soft Actor-Critic (Haarnoja et al., 2018, https://arxiv.org/abs/1812.05905): twin critics,
a tanh-Gaussian actor trained by reparameterization, and automatic tuning of ``alpha``."""

from __future__ import annotations

import math

import torch
from torch import nn

from looprl.agents.ddpg import ContinuousPolicy, DDPGTrainer, frozen
from looprl.agents.losses.continuous import sac_actor_loss, sac_target, sac_temperature_loss
from looprl.agents.shell import ReplayAgent
from looprl.approximation import Approximation
from looprl.core.suggest import check_positive


class Temperature(nn.Module):
    """SAC's entropy temperature, stored as ``log_alpha`` (``forward()`` returns it)."""

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        check_positive(alpha=alpha)
        self.log_alpha = nn.Parameter(torch.tensor(math.log(alpha)))

    def forward(self) -> torch.Tensor:
        return self.log_alpha


class SACPolicy(ContinuousPolicy):
    """Tanh-Gaussian policy: samples while training, ``tanh(mean)`` in evaluation."""


class SACTrainer(DDPGTrainer):
    """One critic, actor and temperature update per ``step``: ``q`` is an ``Approximation`` of a
    ``TwinQ`` with a ``PolyakTarget``, ``temperature`` one of a ``Temperature`` (fixed without an
    optimizer), tuned towards ``target_entropy`` (``-|A|`` in the paper)."""

    def __init__(self, policy: SACPolicy, q: Approximation, temperature: Approximation,
                 discount_factor: float = 0.99, target_entropy: float = -1.0):
        super().__init__(policy, q, discount_factor)
        self.temperature = temperature
        self.target_entropy = target_entropy

    def approximations(self) -> dict[str, Approximation]:
        return {self.q.name: self.q, self.temperature.name: self.temperature}

    @property
    def alpha(self) -> torch.Tensor:
        """The current temperature (no gradients)."""
        return self.temperature.model.log_alpha.detach().exp()

    def _targets(self, rewards: torch.Tensor, next_obs: torch.Tensor, masks: torch.Tensor
                 ) -> torch.Tensor:
        """``r + gamma * mask * (min(Q1', Q2')(s', a') - alpha * log pi(a'|s'))``."""
        next_actions, next_log_probs = self._policy.actor.no_grad(next_obs)
        next_q1, next_q2 = self.q.target(next_obs, next_actions)
        return sac_target(rewards, next_q1, next_q2, next_log_probs, masks, self.discount_factor,
                          self.alpha)

    def _actor_step(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        """The actor's update, then the temperature's (when it has an optimizer)."""
        actor, alpha = self._policy.actor, self.alpha
        with frozen(self.q.model):
            actions, log_probs = actor(obs)
            q1, q2 = self.q(obs, actions)
            loss = sac_actor_loss(q1, q2, log_probs, alpha)
            actor.reinforce(loss)
        stats = {"actor": loss.detach(), "alpha": alpha}
        if self.temperature.optimizer is not None:
            temperature = sac_temperature_loss(self.temperature(), log_probs.detach(),
                                               self.target_entropy)
            self.temperature.reinforce(temperature)
            stats["temperature"] = temperature.detach()
        return stats


class SAC(ReplayAgent):
    """Local SAC agent (single environment; ``ReplayAgent``'s arguments)."""
