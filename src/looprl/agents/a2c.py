"""Advantage Actor-Critic, A2C (Mnih et al., 2016, https://arxiv.org/abs/1602.01783).

The synchronous version of A3C: ``n_envs`` environments step together for ``n_steps``
steps, then one gradient step on ``a2c_loss`` with n-step advantages
``A_t = R_t - V(s_t)``, ``R_t`` the discounted rewards to the end of the rollout (or of
the episode) plus the bootstrapped value there, and an entropy bonus.

* ``A2CPolicy`` -- PPO's stochastic actor-critic policy (``rollout``/``analyze``).
* ``A2CTrainer`` -- ``step(batch)``: one gradient step of ``a2c_loss`` on the whole
  batch. VPG and VAC use it as well: the three differ only in how advantages are formed.
* ``A2C`` -- the local ``ParallelAgent``: PPO's rollout loop, with GAE's ``lam = 1``
  (which is exactly the n-step advantage; see ``losses.n_step_returns``).
* ``A2CTestAgent`` -- the most likely action, no training.
"""

from __future__ import annotations

import torch

from looprl.agents.losses import normalize
from looprl.agents.losses.policy_gradient import a2c_loss
from looprl.agents.ppo import PPO, PPOPolicy, PPOTestAgent
from looprl.core import Logger, Trainer
from looprl.core.namedarray import NamedArray


class A2CPolicy(PPOPolicy):
    """Stochastic actor-critic policy; identical to ``PPOPolicy`` (see there)."""


class A2CTrainer(Trainer):
    """One gradient step of the advantage actor-critic loss per batch.

    Args:
        policy: the policy to optimize (through its approximation's optimizer; separate
            actor and critic learning rates are optimizer parameter groups).
        value_coef, entropy_coef: loss weights.
        normalize_advantages: normalize the batch's advantages before the step.

    The batch needs ``observation``, ``action``, ``advantage`` and ``returns`` (the fields
    of ``RolloutBuffer.compute``). An empty batch (every row left a ``done`` state) is
    skipped. Subclasses change how advantages are formed by overriding ``_advantage``.
    """

    def __init__(
        self,
        policy: PPOPolicy,
        value_coef: float = 0.5,
        entropy_coef: float = 0.0,
        normalize_advantages: bool = False,
    ):
        self._policy = policy
        self.value_coef = value_coef
        self.entropy_coef = entropy_coef
        self.normalize_advantages = normalize_advantages
        self.updates = 0

    @property
    def policy(self) -> PPOPolicy:
        return self._policy

    def step(self, batch: NamedArray) -> dict[str, torch.Tensor]:
        """One update on ``batch``; returns the detached loss parts."""
        if batch.returns.shape[0] == 0:
            return {}
        log_prob, entropy, value = self._policy.analyze(batch)
        advantage = self._advantage(batch, value)
        if self.normalize_advantages and advantage.shape[0] > 1:
            advantage = normalize(advantage)
        loss, parts = a2c_loss(
            log_prob,
            advantage,
            value,
            batch.returns,
            entropy,
            self.value_coef,
            self.entropy_coef,
        )
        self._policy.approximation.reinforce(loss)
        self.updates += 1
        self._policy.version += 1
        return parts

    def _advantage(self, batch: NamedArray, value: torch.Tensor) -> torch.Tensor:
        """The advantages of the batch (those the buffer computed)."""
        return batch.advantage


class A2C(PPO):
    """Local A2C agent over ``n_envs`` parallel environments.

    PPO's rollout loop with an ``A2CTrainer``: one update per ``n_steps`` x ``n_envs``
    rollout. ``lam = 1`` (the default) gives the n-step advantage of A2C; smaller values
    give GAE.

    Args:
        policy, trainer: the algorithm.
        n_envs, n_steps: rollout shape.
        discount_factor: gamma.
        lam: GAE's lambda (``1``: n-step returns).
        logger: receives the trainer's statistics.
    """

    def __init__(
        self,
        policy: PPOPolicy,
        trainer: Trainer,
        n_envs: int,
        n_steps: int = 5,
        discount_factor: float = 0.99,
        lam: float = 1.0,
        logger: Logger | None = None,
    ):
        super().__init__(policy, trainer, n_envs, n_steps, discount_factor, lam, logger)


class A2CTestAgent(PPOTestAgent):
    """Evaluation agent: the most likely action under the policy (see ``PPOTestAgent``)."""
