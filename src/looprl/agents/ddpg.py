"""Deep Deterministic Policy Gradient (Lillicrap et al., 2016), and the parts TD3 and SAC
extend: ``ContinuousPolicy``, ``DDPGTrainer`` and the critics."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from looprl.agents.losses.continuous import critic_loss, deterministic_actor_loss, twin_critic_loss
from looprl.agents.losses.value import td_target
from looprl.agents.segments import ApproximationPolicy, PolicyTrainer, on_device
from looprl.agents.shell import AllForm, ReplayAgent, all_replay
from looprl.approximation import Approximation
from looprl.approximation.q_continuous import ContinuousQ
from looprl.core import (
    Hyperparameter,
    RolloutRequest,
    RolloutResult,
    SampleBatch,
    TrainerStepResult,
    deterministic_rows,
)
from looprl.core.ranges import check_ranges
from looprl.nn.fields import observation_tensor, single_field
from looprl.policies.deterministic import DeterministicPolicy


class TwinQ(nn.Module):
    """Two independent critics (TD3, SAC): ``forward`` returns ``(Q1(s, a), Q2(s, a))``."""

    def __init__(self, model1: nn.Module, model2: nn.Module):
        super().__init__()
        self.q1, self.q2 = (model if isinstance(model, ContinuousQ) else ContinuousQ(model)
                            for model in (model1, model2))

    def forward(self, observation: torch.Tensor, action: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.q1(observation, action), self.q2(observation, action)


@contextmanager
def frozen(module: nn.Module) -> Iterator[None]:
    """No gradients into ``module``'s parameters (the critic under the actor's loss)."""
    params = [p for p in module.parameters() if p.requires_grad]
    for param in params:
        param.requires_grad_(False)
    try:
        yield
    finally:
        for param in params:
            param.requires_grad_(True)


class ContinuousPolicy(ApproximationPolicy):
    """Acting half of DDPG, TD3 and SAC for ``actor``: evaluation rows get its ``mode``, the first
    ``random_steps`` other rows uniform random actions, the others its ``explore``."""

    def __init__(self, actor: Any, random_steps: int = 0):
        self.actor = actor
        self.device = actor.device
        self.random_steps = random_steps
        self.rows = 0  # rows ``rollout`` acted on, evaluation excluded

    @property
    def approximation(self) -> Approximation:  # type: ignore[override]
        return self.actor

    def rollout(self, request: RolloutRequest, **kwargs: Any) -> RolloutResult:
        obs = observation_tensor(request.obs, self.device)
        deterministic = deterministic_rows(request, len(obs))
        if deterministic is True:
            return RolloutResult(action=self.actor.mode(obs))
        warm = self.rows < self.random_steps
        self.rows += len(obs)
        action = self.actor.uniform(len(obs)) if warm else self.actor.explore(obs)
        if isinstance(deterministic, torch.Tensor):
            rows = deterministic.to(self.device).unsqueeze(-1)
            action = torch.where(rows, self.actor.mode(obs), action)
        return RolloutResult(action=action)

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> Any:
        """The actor's output on ``sample.obs`` (a tensor or one field), with gradients."""
        return self.actor(observation_tensor(sample["obs"], self.device))


class DDPGPolicy(ContinuousPolicy):
    """Deterministic actor ``mu(s)`` (a ``DeterministicPolicy``) with Gaussian exploration noise."""


def one_step(batch: SampleBatch) -> tuple[torch.Tensor, ...]:
    """``(s, a, r, s', mask)`` of one-step windows ``[2, B]``; ``mask``: ``s'`` is not terminal."""
    if batch.reward.shape[0] != 2:
        raise ValueError(f"DDPG, TD3 and SAC learn from one-step windows [2, B], got "
                         f"{batch.reward.shape[0] - 1}-step ones")
    obs = single_field(batch.obs)
    return obs[0], batch.action[0], batch.reward[1], obs[1], ~batch.done[1]


class DDPGTrainer(PolicyTrainer):
    """One critic and one actor update per ``step`` of ``policy``'s actor and the critic ``q``
    (an ``Approximation`` of a ``ContinuousQ`` or a ``TwinQ``), both with target networks."""

    def __init__(self, policy: DDPGPolicy, q: Approximation, discount_factor: float = 0.99):
        self._policy = policy
        self.q = q
        self.discount_factor = discount_factor
        self.steps = 0

    def approximations(self) -> dict[str, Approximation]:
        return {self.q.name: self.q}

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The critic's keys (``hp/lr/<name>``, ``hp/tau``) and ``hp/discount``."""
        discount = Hyperparameter.attribute(self, "discount_factor", float)
        return {**super().hyperparameters(), "hp/discount": discount}

    def step(self, batch: SampleBatch) -> TrainerStepResult:
        """One update on one-step windows ``[2, B]``."""
        self.steps += 1
        obs, actions, rewards, next_obs, masks = one_step(on_device(batch, self._policy.device))
        targets = self._targets(rewards, next_obs, masks)
        stats = {"critic": self._critic_step(obs, actions, targets)}
        if self._should_update_actor():
            stats.update(self._actor_step(obs))
        self._policy.version += 1
        return TrainerStepResult(stats, self.steps)

    def _targets(self, rewards: torch.Tensor, next_obs: torch.Tensor, masks: torch.Tensor
                 ) -> torch.Tensor:
        """``r + gamma * mask * Q'(s', mu'(s'))``."""
        next_values = self.q.target(next_obs, self._policy.actor.target(next_obs))
        return td_target(rewards, next_values, masks, self.discount_factor)

    def _critic_step(self, obs: torch.Tensor, actions: torch.Tensor, targets: torch.Tensor
                     ) -> torch.Tensor:
        """One critic update; twin critics regress both, their TD error is Q1's."""
        values = self.q(obs, actions)
        if isinstance(values, tuple):
            loss = twin_critic_loss(*values, targets)
            values = values[0]
        else:
            loss = critic_loss(values, targets)
        self.q.reinforce(loss)
        self.predictions = {"q_values": values.detach()}
        self.td_error = (targets - self.predictions["q_values"]).detach()
        return loss.detach()

    def _should_update_actor(self) -> bool:
        return True

    def _actor_values(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The critic's values of the actor's actions (``Q1`` for twin critics)."""
        return self.q(obs, actions)

    def _actor_step(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        """One actor update through the frozen critic; its statistics."""
        actor = self._policy.actor
        with frozen(self.q.model):
            loss = deterministic_actor_loss(self._actor_values(obs, actor(obs)))
            actor.reinforce(loss)
        return {"actor": loss.detach()}


class DDPG(AllForm, ReplayAgent):
    """The DDPG agent (seed 003): ALL's ``DDPG(q, policy, replay_buffer, action_space,
    discount_factor=0.99, minibatch_size=32, noise=0.1, replay_start_size=5000,
    update_frequency=1)``, or looprl's ``ReplayAgent(policy, trainer, replay_buffer, ...)``."""

    def _from_all(self, q: Any, policy: Any, replay_buffer: Any, action_space: Any,
                  discount_factor: float = 0.99, minibatch_size: int = 32, noise: float = 0.1,
                  replay_start_size: int = 5000, update_frequency: int = 1) -> None:
        name = type(self).__name__
        if not (isinstance(q, Approximation) and isinstance(policy, DeterministicPolicy)):
            raise TypeError(f"{name} takes ALL's (q, policy, replay_buffer, action_space, ...): a "
                            f"QContinuous and a DeterministicPolicy, or looprl's (policy, "
                            f"trainer, ...), got {type(q).__name__} and {type(policy).__name__}")
        low, high = (torch.as_tensor(getattr(action_space, key, math.nan), dtype=torch.float32)
                     for key in ("low", "high"))
        if not (torch.equal(low.flatten(), policy.bounds.low)
                and torch.equal(high.flatten(), policy.bounds.high)):
            raise ValueError(f"{name}'s action_space ({action_space}) is not its policy's (Box "
                             f"{policy.bounds.low.tolist()}..{policy.bounds.high.tolist()}): "
                             "give the DeterministicPolicy the same space")
        buffer, gamma = one_step_replay(name, replay_buffer, discount_factor)
        check_ranges({"noise": noise}, name)
        policy.noise = noise
        acting = DDPGPolicy(policy)
        self._units(acting, DDPGTrainer(acting, q, gamma), buffer, minibatch_size,
                    replay_start_size, update_frequency)
        self.q, self.replay_buffer = q, replay_buffer  # (ALL's attributes)


def one_step_replay(agent: str, replay_buffer: Any, discount_factor: float) -> tuple[Any, float]:
    """``all_replay``'s buffer and discount for ALL's DDPG and SAC, of one-step transitions."""
    buffer, n_step, gamma = all_replay(agent, replay_buffer, discount_factor)
    if n_step != 1:
        raise ValueError(f"{agent} learns from one-step transitions, got a {n_step}-step "
                         "replay: pass the replay buffer without NStepReplayBuffer")
    return buffer, gamma
