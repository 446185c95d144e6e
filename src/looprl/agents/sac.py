"""Soft Actor-Critic (Haarnoja et al., 2018, https://arxiv.org/abs/1812.05905): twin critics,
a tanh-Gaussian actor trained by reparameterization, and automatic tuning of ``alpha``."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from looprl.agents.ddpg import ContinuousPolicy, DDPGTrainer, TwinQ, frozen, one_step_replay
from looprl.agents.losses.continuous import sac_actor_loss, sac_target, sac_temperature_loss
from looprl.agents.shell import AllForm, ReplayAgent
from looprl.approximation import Approximation, JointApproximation
from looprl.core.suggest import check_positive
from looprl.policies.deterministic import SoftDeterministicPolicy


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
    """One critic, actor and temperature update per ``step``: ``q`` of a ``TwinQ``, ``temperature``
    of a ``Temperature`` (fixed without an optimizer) tuned towards ``target_entropy``."""

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


class SAC(AllForm, ReplayAgent):
    """The SAC agent (seed 003): ALL's ``SAC(policy, q1, q2, replay_buffer, discount_factor=0.99,
    entropy_backups=True, entropy_target=-2.0, lr_temperature=1e-4, minibatch_size=32,
    replay_start_size=5000, temperature_initial=0.1, update_frequency=1, logger=None)`` (the
    temperature's log by SGD), or looprl's ``ReplayAgent(policy, trainer, replay_buffer, ...)``."""

    def _from_all(self, policy: Any, q1: Any, q2: Any, replay_buffer: Any,
                  discount_factor: float = 0.99, entropy_backups: bool = True,
                  entropy_target: float = -2.0, lr_temperature: float = 1e-4,
                  minibatch_size: int = 32, replay_start_size: int = 5000,
                  temperature_initial: float = 0.1, update_frequency: int = 1,
                  logger: Any = None) -> None:
        name = type(self).__name__
        if not (isinstance(policy, SoftDeterministicPolicy) and isinstance(q1, Approximation)
                and isinstance(q2, Approximation)):
            raise TypeError(f"{name} takes ALL's (policy, q1, q2, replay_buffer, ...): a "
                            f"SoftDeterministicPolicy and two QContinuous, or looprl's (policy, "
                            f"trainer, ...), got {type(policy).__name__}, {type(q1).__name__} "
                            f"and {type(q2).__name__}")
        if q1 is q2 or q1.model is q2.model:
            raise ValueError(f"{name}'s q1 and q2 are one critic: give two QContinuous, each "
                             "of its own network")
        if not entropy_backups:
            raise ValueError(f"{name}'s targets always back up the entropy: entropy_backups="
                             "False is not ported (pass True, ALL's default)")
        buffer, gamma = one_step_replay(name, replay_buffer, discount_factor)
        check_positive(lr_temperature=lr_temperature)
        critic = JointApproximation(TwinQ(q1.model, q2.model), [q1, q2], "critic")
        temperature = Temperature(temperature_initial).to(policy.device)
        temperature = Approximation(temperature, torch.optim.SGD(temperature.parameters(),
                                                                 lr=lr_temperature),
                                    name="temperature")
        acting = SACPolicy(policy)
        self._units(acting, SACTrainer(acting, critic, temperature, gamma, entropy_target),
                    buffer, minibatch_size, replay_start_size, update_frequency, logger=logger)
        self.q1, self.q2, self.replay_buffer = q1, q2, replay_buffer  # (ALL's attributes)
