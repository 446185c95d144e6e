"""Soft Actor-Critic (Haarnoja et al., 2018, https://arxiv.org/abs/1812.05905).

Twin critics with Polyak-averaged targets, a tanh-Gaussian actor trained through the
reparameterization trick, and automatic entropy tuning of the temperature ``alpha``
towards ``target_entropy`` (``-|A|`` by default).

* ``Temperature`` -- the learnable ``log_alpha`` as a module (saved with the preset).
* ``SACPolicy`` -- samples from the tanh-Gaussian; ``mode`` for evaluation.
* ``SACTrainer`` -- ``step(SampleBatch) -> TrainerStepResult``: critic, actor and
  temperature updates on one-step windows ``[2, B]``.
* ``SAC`` -- the local single-environment agent, ``SACTestAgent`` the deterministic one.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from looprl.agents.ddpg import (
    ContinuousPolicy,
    ContinuousTestAgent,
    OffPolicyAgent,
    frozen,
    one_step,
)
from looprl.agents.losses.continuous import (
    sac_actor_loss,
    sac_target,
    sac_temperature_loss,
    twin_critic_loss,
)
from looprl.approximation import Approximation
from looprl.core import Hyperparameter, SampleBatch, Trainer, TrainerStepResult
from looprl.policies.deterministic import SoftDeterministicPolicy


class Temperature(nn.Module):
    """SAC's entropy temperature, stored as ``log_alpha``; ``forward()`` returns it.

    Args:
        alpha: the initial temperature.
    """

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        if alpha <= 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        self.log_alpha = nn.Parameter(torch.tensor(math.log(alpha)))

    def forward(self) -> torch.Tensor:
        return self.log_alpha


class SACPolicy(ContinuousPolicy):
    """Tanh-Gaussian policy: samples while training, ``tanh(mean)`` in evaluation.

    Args:
        actor: a ``SoftDeterministicPolicy``.
        random_steps: see ``ContinuousPolicy``.
    """

    def __init__(self, actor: SoftDeterministicPolicy, random_steps: int = 0):
        super().__init__(actor, random_steps)

    def explore(self, observation: torch.Tensor) -> torch.Tensor:
        return self.actor.sample(observation)


class SACTrainer(Trainer):
    """One critic, actor and temperature update per ``step``.

    Args:
        policy: the ``SACPolicy`` whose actor is trained.
        q: an ``Approximation`` of a ``TwinQ`` with a ``PolyakTarget``.
        temperature: an ``Approximation`` of a ``Temperature``; without an optimizer the
            temperature stays fixed.
        discount_factor: gamma.
        target_entropy: the entropy the temperature is tuned towards (``-|A|`` in the paper).
    """

    def __init__(
        self,
        policy: SACPolicy,
        q: Approximation,
        temperature: Approximation,
        discount_factor: float = 0.99,
        target_entropy: float = -1.0,
    ):
        self._policy = policy
        self.q = q
        self.temperature = temperature
        self.discount_factor = discount_factor
        self.target_entropy = target_entropy
        self.steps = 0

    @property
    def policy(self) -> SACPolicy:
        return self._policy

    def approximations(self) -> dict[str, Approximation]:
        """The critics ``q`` and the ``temperature``, by name."""
        return {self.q.name: self.q, self.temperature.name: self.temperature}

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The keys of ``q`` and ``temperature`` (``hp/lr/<name>``, ``hp/tau``) and
        ``hp/discount``."""
        discount = Hyperparameter.attribute(self, "discount_factor", float)
        return {**super().hyperparameters(), "hp/discount": discount}

    @property
    def alpha(self) -> torch.Tensor:
        """The current temperature (no gradients)."""
        return self.temperature.model.log_alpha.detach().exp()

    def step(self, batch: SampleBatch) -> TrainerStepResult:
        """One update on one-step windows ``[2, B]`` (``sample_batch`` of a replay buffer)."""
        self.steps += 1
        obs, actions, rewards, next_obs, masks = one_step(batch)
        alpha = self.alpha
        targets = self._targets(rewards, next_obs, masks, alpha)
        q1, q2 = self.q(obs, actions)
        critic = twin_critic_loss(q1, q2, targets)
        self.q.reinforce(critic)
        self.predictions = {"q_values": q1.detach()}
        self.td_error = (targets - self.predictions["q_values"]).detach()  # of Q1
        actor, log_probs = self._actor_step(obs, alpha)
        stats = {"critic": critic.detach(), "actor": actor, "alpha": alpha}
        if self.temperature.optimizer is not None:
            stats["temperature"] = self._temperature_step(log_probs)
        self._policy.version += 1
        return TrainerStepResult(stats, self.steps)

    def _targets(
        self,
        rewards: torch.Tensor,
        next_obs: torch.Tensor,
        masks: torch.Tensor,
        alpha: torch.Tensor,
    ) -> torch.Tensor:
        """``r + gamma * mask * (min(Q1', Q2')(s', a') - alpha * log pi(a'|s'))``."""
        next_actions, next_log_probs = self._policy.actor.no_grad(next_obs)
        next_q1, next_q2 = self.q.target(next_obs, next_actions)
        return sac_target(
            rewards, next_q1, next_q2, next_log_probs, masks, self.discount_factor, alpha
        )

    def _actor_step(
        self, obs: torch.Tensor, alpha: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        actor = self._policy.actor
        with frozen(self.q.model):
            actions, log_probs = actor(obs)
            q1, q2 = self.q(obs, actions)
            loss = sac_actor_loss(q1, q2, log_probs, alpha)
            actor.reinforce(loss)
        return loss.detach(), log_probs.detach()

    def _temperature_step(self, log_probs: torch.Tensor) -> torch.Tensor:
        loss = sac_temperature_loss(self.temperature(), log_probs, self.target_entropy)
        self.temperature.reinforce(loss)
        return loss.detach()


class SAC(OffPolicyAgent):
    """Local SAC agent (single environment); see ``OffPolicyAgent`` for the arguments."""


class SACTestAgent(ContinuousTestAgent):
    """Evaluation agent of SAC: ``center + scale * tanh(mean)``."""
