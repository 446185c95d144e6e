"""Vanilla SARSA over parallel environments, without replay (Rummery & Niranjan, 1994;
the autonomous-learning-library's VSarsa, https://github.com/cpnota/autonomous-learning-library).

On-policy TD control: the target bootstraps from the action the policy actually takes next,
``r + gamma * mask * Q(s', a')``, so the agent picks ``a'`` before it learns. The trainer is
``DQNTrainer(update="sarsa")``, which reads ``a'`` from row 1 of the ``[2, n_envs]`` batch.

* ``VSarsa`` -- the local ``ParallelAgent``.
"""

from __future__ import annotations

from typing import Any

from looprl.agents.vqn import OnlineAgent
from looprl.core import StateArray

__all__ = ["VSarsa"]


class VSarsa(OnlineAgent):
    """Local online SARSA agent (see the module docstring)."""

    def act(self, state: StateArray) -> Any:
        state = state.to(self.device)
        action = self.policy.act(state)
        if self._state is not None:
            self.trainer.step(self._batch(state, action))
        self._state = state
        self._action = action
        return action
