"""Vanilla Q-learning over parallel environments, without replay (Watkins, 1989; the
autonomous-learning-library's VQN, https://github.com/cpnota/autonomous-learning-library).

Each step of ``n_envs`` environments yields one batch of transitions that is learned from at
once with the TD target ``r + gamma * mask * max_a Q(s', a)``; the parallel environments
decorrelate the batch in place of a replay buffer.

* ``DQNPolicy`` (epsilon-greedy, one decision per row) acts;
* ``DQNTrainer`` (reused unchanged) takes one gradient step per batch;
* ``VQN`` -- the local ``ParallelAgent`` that forms the batch from consecutive
  ``StateArray`` s. Rows leaving a ``done`` state (next-step autoreset) get weight 0.
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.dqn import DQNPolicy
from looprl.core import ParallelAgent, StateArray, Trainer

__all__ = ["VQN", "OnlineAgent"]


class OnlineAgent(ParallelAgent):
    """Base of online parallel agents: learn from each step's batch, then act.

    Args:
        policy: an epsilon-greedy ``DQNPolicy``.
        trainer: steps on ``(states, actions, rewards, next_states, weights)`` batches.
    """

    def __init__(self, policy: DQNPolicy, trainer: Trainer):
        self.policy = policy
        self.trainer = trainer
        self.device = policy.q.device
        self._state: StateArray | None = None
        self._action: torch.Tensor | None = None

    def _batch(self, state: StateArray) -> tuple:
        """The transitions from the previous step to ``state``; invalid rows weigh 0."""
        weights = (~self._state.done).float()
        return self._state, self._action, state.reward, state, weights


class VQN(OnlineAgent):
    """Local online Q-learning agent (see the module docstring)."""

    def act(self, state: StateArray) -> Any:
        state = state.to(self.device)
        if self._state is not None:
            self.trainer.step(self._batch(state))
        self._state = state
        self._action = self.policy.act(state)
        return self._action
