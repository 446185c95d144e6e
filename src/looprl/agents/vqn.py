"""Vanilla Q-learning over parallel environments, without replay (Watkins, 1989; the
autonomous-learning-library's VQN, https://github.com/cpnota/autonomous-learning-library).

Each step of ``n_envs`` environments yields one batch of transitions that is learned from at
once with the TD target ``r + gamma * mask * max_a Q(s', a)``; the parallel environments
decorrelate the batch in place of a replay buffer.

* ``DQNPolicy`` (epsilon-greedy, one decision per row) acts;
* ``DQNTrainer`` takes one gradient step per batch: a ``[2, n_envs]`` ``SampleBatch`` of the
  previous and the current step (rows leaving a ``done`` state, next-step autoreset, weigh 0);
* ``VQN`` -- the local ``ParallelAgent``; ``OnlineAgent`` forms the batches.
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.dqn import DQNPolicy
from looprl.core import (
    Hyperparameter,
    ParallelAgent,
    SampleBatch,
    StateArray,
    Trainer,
    parts_hyperparameters,
)

__all__ = ["VQN", "OnlineAgent"]


class OnlineAgent(ParallelAgent):
    """Base of online parallel agents: learn from each step's batch, then act.

    Args:
        policy: an epsilon-greedy ``DQNPolicy``.
        trainer: steps on ``[2, n_envs]`` ``SampleBatch`` es (``DQNTrainer``).
    """

    def __init__(self, policy: DQNPolicy, trainer: Trainer):
        self.policy = policy
        self.trainer = trainer
        self.device = policy.q.device
        self._state: StateArray | None = None
        self._action: torch.Tensor | None = None

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """Its policy's and trainer's ``hp/*`` keys."""
        return parts_hyperparameters(self.policy, self.trainer)

    def _batch(self, state: StateArray, action: Any = None) -> SampleBatch:
        """The one-step segment from the previous step to ``state`` (``action``: the one
        taken at ``state``, for SARSA)."""
        previous = self._state
        rows = (previous, state)
        taken = self._action if action is None else action
        return SampleBatch(
            obs=torch.stack([s.observation for s in rows]),
            action=torch.stack([self._action, taken]),
            reward=torch.stack([previous.reward, state.reward]).float(),
            done=torch.stack([s.terminated for s in rows]),
            truncated=torch.stack([s.truncated for s in rows]),
        )


class VQN(OnlineAgent):
    """Local online Q-learning agent (see the module docstring)."""

    def act(self, state: StateArray) -> Any:
        state = state.to(self.device)
        if self._state is not None:
            self.trainer.step(self._batch(state))
        self._state = state
        self._action = self.policy.act(state)
        return self._action
