"""Deep Q-Network (Mnih et al., 2015, https://www.nature.com/articles/nature14236).

* ``DQNPolicy`` -- epsilon-greedy action selection over a ``QNetwork``.
* ``DQNTrainer`` -- ``step(batch)``: one regression of ``Q(s, a)`` onto TD targets from
  the target network.
* ``DQN`` -- the local ``Agent``: stores transitions in a replay buffer and lets the
  trainer take ``gradient_steps`` steps every ``update_frequency`` steps.
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.losses import dqn_loss, td_target
from looprl.agents.replay import ReplayAgent
from looprl.core import (
    Agent,
    Policy,
    RolloutRequest,
    RolloutResult,
    State,
    StateArray,
    Trainer,
    deterministic_rows,
)
from looprl.policies import GreedyPolicy


def discount_of(next_states: Any, discount_factor: float) -> float | torch.Tensor:
    """``next_states['discount']`` (n-step replay's ``gamma^k``) if stored, else gamma."""
    return next_states["discount"] if "discount" in next_states else discount_factor


class DQNPolicy(Policy):
    """Epsilon-greedy policy over a ``QNetwork``.

    Args:
        q: the ``QNetwork``.
        num_actions: size of the discrete action space.
        epsilon: exploration rate, a float or a schedule with a ``value`` property.
        exploration: another exploration policy over ``q`` (``looprl.policies.exploration``:
            ez-greedy, Boltzmann); it replaces the epsilon-greedy one.
    """

    def __init__(self, q: Any, num_actions: int, epsilon: Any = 0.0, exploration: Any = None):
        self.q = q
        self.num_actions = num_actions
        self.greedy = exploration or GreedyPolicy(q, num_actions, epsilon=epsilon)
        self.version = 0

    @property
    def module(self) -> torch.nn.Module:
        return self.q.model

    def act(self, state: State) -> Any:
        """An epsilon-greedy action for one state or each row of a ``StateArray``."""
        return self.greedy.no_grad(state.to(self.q.device))

    def rollout(self, request: RolloutRequest, **kwargs: Any) -> RolloutResult:
        """Epsilon-greedy actions for ``request.obs``; greedy rows where ``is_evaluation``."""
        obs = torch.as_tensor(request.obs, device=self.q.device)
        state = StateArray({"observation": obs}, (obs.shape[0],), device=self.q.device)
        deterministic = deterministic_rows(request)
        if isinstance(deterministic, torch.Tensor):
            greedy = self.greedy.eval(state)
            explore = self.greedy.no_grad(state)
            return RolloutResult(action=torch.where(deterministic.to(obs.device), greedy, explore))
        if deterministic:
            return RolloutResult(action=self.greedy.eval(state))
        return RolloutResult(action=self.greedy.no_grad(state))

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> torch.Tensor:
        """``Q(s, a)`` of the stored ``(states, actions)``, with gradients."""
        states, actions = sample[0], sample[1]
        return self.q(states, actions)


class DQNTrainer(Trainer):
    """One gradient step of Q-learning per ``step`` call.

    Args:
        policy: the ``DQNPolicy`` whose ``QNetwork`` (and its target network) is trained.
        discount_factor: gamma (for transitions without a stored ``discount``).
        huber: Huber loss (default) or mean squared error.
    """

    def __init__(self, policy: DQNPolicy, discount_factor: float = 0.99, huber: bool = True):
        self._policy = policy
        self.discount_factor = discount_factor
        self.huber = huber

    @property
    def policy(self) -> DQNPolicy:
        return self._policy

    def step(self, batch: tuple) -> dict[str, torch.Tensor]:
        """``batch`` is ``(states, actions, rewards, next_states, weights)`` from replay."""
        states, actions, rewards, next_states, weights = batch
        q = self._policy.q
        values = q(states, actions)
        next_values = q.target(next_states).max(dim=-1).values
        discount = discount_of(next_states, self.discount_factor)
        targets = td_target(rewards, next_values, next_states.mask, discount)
        loss = dqn_loss(values, targets, weights, huber=self.huber)
        q.reinforce(loss)
        self.predictions = {"q_values": values.detach()}
        self._policy.version += 1
        return {"loss": loss.detach()}


class DQN(ReplayAgent):
    """Local DQN agent (single environment), as in seed 003.

    Takes ``ReplayAgent``'s arguments: the ``DQNPolicy`` and ``DQNTrainer``, a replay buffer,
    ``minibatch_size`` (32), ``replay_start_size`` (1000), ``update_frequency`` (1) and
    ``gradient_steps`` (1).
    """

    def act(self, state: State) -> Any:
        self.replay_buffer.store(self._state, self._action, state)
        self._train()
        self._state = state
        self._action = self.policy.act(state)
        return self._action

    def _train(self) -> None:
        if self._should_train():
            for _ in range(self.gradient_steps):
                self.trainer.step(self.replay_buffer.sample(self.minibatch_size))


class DQNTestAgent(Agent):
    """Evaluation agent: greedy actions of the network in eval mode (noise-free noisy layers),
    with a small ``epsilon`` on top; no training."""

    def __init__(self, policy: DQNPolicy, epsilon: float = 0.0):
        self.policy = policy
        self.greedy = GreedyPolicy(policy.q, policy.num_actions, epsilon=epsilon, evaluation=True)

    def act(self, state: State) -> Any:
        return self.greedy.no_grad(state.to(self.policy.q.device))
