"""Vanilla Actor-Critic, online over parallel environments.

The one-step actor-critic of Sutton & Barto (2018, section 13.5) and Konda & Tsitsiklis
(2000, https://papers.nips.cc/paper/1786-actor-critic-algorithms): after every step of
``n_envs`` environments, the TD error ``delta = r + gamma * mask' * V(s') - V(s)`` is the
advantage of the actor's update and the critic regresses ``V(s)`` onto
``r + gamma * mask' * V(s')``.

* ``VACPolicy`` -- PPO's stochastic actor-critic policy.
* ``VACTrainer`` -- ``A2CTrainer``: one gradient step of ``a2c_loss`` per batch.
* ``VAC`` -- the local ``ParallelAgent``: a one-step rollout, trained at every step.
* ``VACTestAgent`` -- the most likely action, no training.
"""

from __future__ import annotations

import torch

from looprl.agents.a2c import A2CTrainer
from looprl.agents.ppo import PPO, PPOPolicy, PPOTestAgent
from looprl.core import Logger, RolloutRequest, StateArray, Trainer
from looprl.core.namedarray import NamedArray


class VACPolicy(PPOPolicy):
    """Stochastic actor-critic policy; identical to ``PPOPolicy`` (see there)."""


class VACTrainer(A2CTrainer):
    """One gradient step of ``a2c_loss`` on the TD errors of one step of every env.

    The advantage is ``R - V(s)`` with ``R = r + gamma * mask' * V(s')`` from the batch and
    ``V(s)`` from the current critic, so both values come from the same parameters (the
    stored ``V(s)`` is one update older).
    """

    def _advantage(self, batch: NamedArray, value: torch.Tensor) -> torch.Tensor:
        return batch.returns - value.detach()


class VAC(PPO):
    """Local online actor-critic agent over ``n_envs`` parallel environments.

    Each ``act`` evaluates the new states once: their values bootstrap the TD targets of
    the previous step (which the trainer then learns from) and their actions are returned.
    Transitions out of ``done`` states (next-step autoreset) are skipped.

    Args:
        policy, trainer: the algorithm.
        n_envs: number of parallel environments.
        discount_factor: gamma.
        logger: receives the trainer's statistics.
    """

    def __init__(
        self,
        policy: PPOPolicy,
        trainer: Trainer,
        n_envs: int,
        discount_factor: float = 0.99,
        logger: Logger | None = None,
    ):
        super().__init__(policy, trainer, n_envs, 1, discount_factor, 0.0, logger)

    def act(self, state: StateArray) -> torch.Tensor:
        state = state.to(self.device)
        result = self.policy.rollout(RolloutRequest(obs=state.observation))
        if self._acting:
            self.buffer.store_outcome(state.reward, state.done, state.mask)
            self._update(result.value)
        self.buffer.store(
            state.done,
            observation=state.observation,
            action=result.action,
            log_prob=result.log_prob,
            value=result.value,
        )
        self._acting = True
        return result.action

    def _update(self, next_value: torch.Tensor) -> None:
        batch = self.buffer.compute(next_value, self.discount_factor, 0.0)
        self.buffer.clear()
        stats = self.trainer.step(batch)
        if self.logger.verbose:
            for name, value in stats.items():
                self.logger.add_loss(name, value)


class VACTestAgent(PPOTestAgent):
    """Evaluation agent: the most likely action under the policy (see ``PPOTestAgent``)."""
