"""Vanilla SARSA over parallel environments, without replay (Rummery & Niranjan, 1994;
the autonomous-learning-library's VSarsa, https://github.com/cpnota/autonomous-learning-library).

On-policy TD control: the target bootstraps from the action the policy actually takes next,
``r + gamma * mask * Q(s', a')``, so the agent picks ``a'`` before it learns.

* ``SarsaTrainer`` -- ``DQNTrainer`` with the SARSA target; batches are
  ``(states, actions, rewards, next_states, weights, next_actions)``.
* ``VSarsa`` -- the local ``ParallelAgent``.
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.dqn import DQNTrainer
from looprl.agents.losses import dqn_loss, td_target
from looprl.agents.vqn import OnlineAgent
from looprl.core import StateArray

__all__ = ["SarsaTrainer", "VSarsa"]


class SarsaTrainer(DQNTrainer):
    """One gradient step of SARSA per ``step`` call (same arguments as ``DQNTrainer``)."""

    def step(self, batch: tuple) -> dict[str, torch.Tensor]:
        """``batch`` is ``(states, actions, rewards, next_states, weights, next_actions)``."""
        states, actions, rewards, next_states, weights, next_actions = batch
        q = self._policy.q
        values = q(states, actions)
        next_values = q.target(next_states, next_actions)
        targets = td_target(rewards, next_values, next_states.mask, self.discount_factor)
        loss = dqn_loss(values, targets, weights, huber=self.huber)
        q.reinforce(loss)
        self._policy.version += 1
        return {"loss": loss.detach()}


class VSarsa(OnlineAgent):
    """Local online SARSA agent (see the module docstring)."""

    def act(self, state: StateArray) -> Any:
        state = state.to(self.device)
        action = self.policy.act(state)
        if self._state is not None:
            self.trainer.step((*self._batch(state), action))
        self._state = state
        self._action = action
        return action
