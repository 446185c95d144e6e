"""Proximal Policy Optimization (Schulman et al., 2017, https://arxiv.org/abs/1707.06347).

* ``PPOPolicy`` -- acts (``rollout``) and re-evaluates stored batches (``analyze``).
* ``PPOTrainer`` -- ``step(batch)``: epochs of shuffled minibatches of ``ppo_loss``.
* ``PPO`` -- the local ``ParallelAgent``: fills a ``RolloutBuffer`` from a vector
  environment and lets the trainer step whenever a rollout is complete.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from looprl.agents.losses import normalize, ppo_loss
from looprl.core import (
    DummyLogger,
    Logger,
    ParallelAgent,
    Policy,
    RolloutRequest,
    RolloutResult,
    State,
    StateArray,
    Trainer,
    deterministic_rows,
)
from looprl.core.namedarray import NamedArray
from looprl.memory import RolloutBuffer


class ActorCritic(nn.Module):
    """Separate actor and critic networks over the same observation (SB3's default)."""

    def __init__(self, actor: nn.Module, critic: nn.Module):
        super().__init__()
        self.actor = actor
        self.critic = critic

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action logits (or distribution parameters) and state values ``V(s)``."""
        return self.actor(observation), self.critic(observation).squeeze(-1)


class PPOPolicy(Policy):
    """Stochastic actor-critic policy.

    Args:
        approximation: an ``Approximation`` over an ``ActorCritic``-like module mapping
            observations to ``(distribution parameters, values)``; its optimizer is the one
            the trainer uses.
        head: the action distribution (``CategoricalHead`` for discrete actions,
            ``GaussianHead`` for continuous ones).
    """

    def __init__(self, approximation: Any, head: Any):
        self.approximation = approximation
        self.head = head
        self.device = approximation.device
        self.version = 0

    @property
    def module(self) -> nn.Module:
        return self.approximation.model

    def rollout(self, request: RolloutRequest, **kwargs: Any) -> RolloutResult:
        """Actions, their log-probabilities and values for ``request.obs`` (no gradients).

        ``request.obs`` may be a numpy array or a tensor on any device; results are on the
        policy's device. Rows marked by ``request.is_evaluation`` take the most likely
        action, the others sample.
        """
        obs = torch.as_tensor(request.obs, device=self.device)
        deterministic = deterministic_rows(request)
        with torch.no_grad():
            params, value = self.approximation.model(obs)
            if isinstance(deterministic, torch.Tensor):
                mode = self.head.mode(params)
                rows = deterministic.to(self.device).view(-1, *([1] * (mode.dim() - 1)))
                action = torch.where(rows, mode, self.head.sample(params))
            elif deterministic:
                action = self.head.mode(params)
            else:
                action = self.head.sample(params)
            log_prob = self.head.log_prob(params, action)
        return RolloutResult(action=action, log_prob=log_prob, value=value)

    def value(self, observation: torch.Tensor) -> torch.Tensor:
        """``V(s)`` without gradients."""
        with torch.no_grad():
            return self.approximation.model(observation)[1]

    def analyze(self, sample: NamedArray, target: str | None = None, **kwargs: Any):
        """``(log_prob, entropy, value)`` of the stored actions under the current parameters."""
        params, value = self.approximation(sample.observation)
        log_prob, entropy = self.head.log_prob_and_entropy(params, sample.action)
        return log_prob, entropy, value


class PPOTrainer(Trainer):
    """Runs ``epochs`` passes of shuffled minibatches of the PPO loss over a rollout.

    Args:
        policy: the ``PPOPolicy`` to optimize (through its approximation's optimizer).
        epochs: passes over each rollout.
        minibatch_size: samples per gradient step.
        clip: clipping range of the probability ratio, or a function of training
            progress in ``[0, 1]`` returning it (``linear(0.2)`` anneals it to 0).
        value_coef, entropy_coef: loss weights.
        value_clip: clip value predictions around the old values (``None``: off).
        normalize_advantages: normalize advantages per minibatch.
        total_updates: number of ``step`` calls over which schedules anneal.
        generator: RNG for minibatch shuffling.
        lr: ``None`` leaves the learning rate to the optimizer; a function of training
            progress in ``[0, 1]`` (``linear(3e-4)``) sets it before every optimizer step,
            progress counting each update's optimizer steps as fractions of that update, so
            it reaches ``lr(1)`` after the last update of the budget however many
            minibatches each update has.
    """

    def __init__(
        self,
        policy: PPOPolicy,
        epochs: int = 10,
        minibatch_size: int = 64,
        clip: float | Callable[[float], float] = 0.2,
        value_coef: float = 0.5,
        entropy_coef: float = 0.0,
        value_clip: float | None = None,
        normalize_advantages: bool = True,
        total_updates: float = float("inf"),
        generator: torch.Generator | None = None,
        lr: Callable[[float], float] | None = None,
    ):
        self._policy = policy
        self.epochs = epochs
        self.minibatch_size = minibatch_size
        self.clip = clip
        self.value_coef = value_coef
        self.entropy_coef = entropy_coef
        self.value_clip = value_clip
        self.normalize_advantages = normalize_advantages
        self.total_updates = total_updates
        self.generator = generator
        self.lr = lr
        self.updates = 0
        self._steps_in_update = 1  # optimizer steps of the current update (lr schedule)
        self._step_in_update = 0

    @property
    def policy(self) -> PPOPolicy:
        return self._policy

    @property
    def progress(self) -> float:
        """Fraction of ``total_updates`` done, in ``[0, 1]``."""
        return min(self.updates / self.total_updates, 1.0)

    def _clip(self) -> float:
        return self.clip(self.progress) if callable(self.clip) else self.clip

    def step(self, batch: NamedArray) -> dict[str, torch.Tensor]:
        """Optimize on a rollout ``batch`` (fields of ``RolloutBuffer.compute``)."""
        clip = self._clip()
        self._begin_update(self._policy_steps(batch.advantage.shape[0]))
        return self._end_update({**self._policy_phase(batch, clip), "clip": clip})

    def _policy_steps(self, n: int) -> int:
        """Optimizer steps of the policy phase on a rollout of ``n`` samples."""
        return self.epochs * (1 if self.minibatch_size >= n else math.ceil(n / self.minibatch_size))

    def _policy_phase(self, batch: NamedArray, clip: float) -> dict[str, torch.Tensor]:
        """``epochs`` passes of shuffled minibatches over ``batch``."""
        n = batch.advantage.shape[0]
        parts: dict[str, torch.Tensor] = {}
        for _ in range(self.epochs):
            if self.minibatch_size >= n:  # one minibatch, the whole rollout: order is moot
                parts = self._minibatch_step(batch, clip)
                continue
            order = torch.randperm(n, generator=self.generator)
            for index in order.split(self.minibatch_size):
                parts = self._minibatch_step(batch[index], clip)
        return parts

    def _begin_update(self, optimizer_steps: int) -> None:
        self._steps_in_update, self._step_in_update = max(optimizer_steps, 1), 0

    def _schedule_lr(self) -> None:
        """Before an optimizer step: the learning rate at the progress reached so far."""
        if self.lr is not None:
            fraction = self._step_in_update / self._steps_in_update
            self._set_lr(min((self.updates + fraction) / self.total_updates, 1.0))
            self._step_in_update += 1

    def _set_lr(self, progress: float) -> None:
        for group in self._policy.approximation.optimizer.param_groups:
            group["lr"] = self.lr(progress)

    def _end_update(self, stats: dict[str, Any]) -> dict[str, Any]:
        self.updates += 1
        self._policy.version += 1
        if self.lr is not None:
            self._set_lr(self.progress)
        return stats

    def _minibatch_step(self, minibatch: NamedArray, clip: float) -> dict[str, torch.Tensor]:
        log_prob, entropy, value = self._policy.analyze(minibatch)
        advantage = minibatch.advantage
        if self.normalize_advantages and advantage.shape[0] > 1:
            advantage = normalize(advantage)
        loss, parts = ppo_loss(
            log_prob,
            minibatch.log_prob,
            advantage,
            value,
            minibatch.returns,
            entropy,
            clip,
            self.value_coef,
            self.entropy_coef,
            old_values=minibatch.value,
            value_clip=self.value_clip,
        )
        self._schedule_lr()
        self._policy.approximation.reinforce(loss)
        self.predictions = {"values": value.detach(), "log_probs": log_prob.detach()}
        return parts


class PPO(ParallelAgent):
    """Local PPO agent over ``n_envs`` parallel environments.

    Each ``act`` records the outcome of the previous step, trains when ``n_steps`` steps
    are stored, and samples new actions.

    Args:
        policy, trainer: the algorithm.
        n_envs, n_steps: rollout shape (``n_envs * n_steps`` transitions per update).
        discount_factor, lam: GAE's gamma and lambda.
        logger: receives the trainer's statistics.
    """

    def __init__(
        self,
        policy: PPOPolicy,
        trainer: PPOTrainer,
        n_envs: int,
        n_steps: int = 128,
        discount_factor: float = 0.99,
        lam: float = 0.95,
        logger: Logger | None = None,
    ):
        self.policy = policy
        self.trainer = trainer
        self.device = policy.device
        self.buffer = RolloutBuffer(n_steps, n_envs, device=policy.device)
        self.discount_factor = discount_factor
        self.lam = lam
        self.logger = logger or DummyLogger()
        self._acting = False

    def act(self, state: StateArray) -> torch.Tensor:
        state = state.to(self.device)
        if self._acting:
            self.buffer.store_outcome(state.reward, state.done, state.mask)
        if self.buffer.full:
            self._train(state)
        result = self.policy.rollout(RolloutRequest(obs=state.observation))
        self.buffer.store(
            state.done,
            observation=state.observation,
            action=result.action,
            log_prob=result.log_prob,
            value=result.value,
        )
        self._acting = True
        return result.action

    def _train(self, state: StateArray) -> None:
        last_value = self.policy.value(state.observation)
        batch = self.buffer.compute(last_value, self.discount_factor, self.lam)
        self.buffer.clear()
        stats = self.trainer.step(batch)
        if self.logger.verbose:
            for name, value in stats.items():
                self.logger.add_loss(name, value)


class PPOTestAgent(ParallelAgent):
    """Evaluation agent: the most likely action under the policy, no training.

    Accepts a ``StateArray`` (returns one action per row) or a single ``State``.
    """

    def __init__(self, policy: PPOPolicy):
        self.policy = policy

    def act(self, state: State) -> torch.Tensor:
        if isinstance(state, StateArray):
            request = RolloutRequest(obs=state.observation, is_evaluation=True)
            return self.policy.rollout(request).action
        request = RolloutRequest(obs=state.observation.unsqueeze(0), is_evaluation=True)
        return self.policy.rollout(request).action[0]
