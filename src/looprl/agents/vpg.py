"""Vanilla Policy Gradient: REINFORCE with a learned baseline.

Williams (1992, https://doi.org/10.1007/BF00992696) and Sutton et al. (2000,
https://papers.nips.cc/paper/1713-policy-gradient-methods-for-reinforcement-learning-with-function-approximation):
complete episodes are collected in one environment until at least ``min_batch_size``
steps are stored; then one gradient step follows ``-mean(log pi(a|s) * (G - V(s)))`` with
``G`` the Monte-Carlo return, while the baseline ``V`` regresses onto ``G``. Episodes cut
off by a time limit bootstrap ``G`` from the value of their final observation.

* ``VPGPolicy`` -- PPO's stochastic actor-critic policy.
* ``VPGTrainer`` -- ``A2CTrainer``: one gradient step of ``a2c_loss`` per batch.
* ``EpisodeBuffer`` -- preallocated, growing storage of whole episodes.
* ``VPG`` -- the local ``Agent`` (single environment).
* ``VPGTestAgent`` -- the most likely action, no training.
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.a2c import A2CTrainer
from looprl.agents.losses.policy_gradient import n_step_returns
from looprl.agents.ppo import PPOPolicy, PPOTestAgent
from looprl.core import Agent, DummyLogger, Logger, RolloutRequest, State, Trainer
from looprl.core.namedarray import NamedArray


class VPGPolicy(PPOPolicy):
    """Stochastic actor-critic policy; identical to ``PPOPolicy`` (see there)."""


class VPGTrainer(A2CTrainer):
    """One gradient step of ``a2c_loss`` on Monte-Carlo advantages ``G - V(s)``."""


class EpisodeBuffer:
    """Steps of whole episodes of one environment, in preallocated tensors that double
    in size when full.

    ``store`` records a step (observation, action, value of the observation);
    ``store_outcome`` the reward that followed and whether the next state ended the
    episode (``done``, ``mask``, and the value of the final observation, used only where
    an episode was truncated).

    Args:
        capacity: initial number of steps.
        device: where tensors live.
    """

    def __init__(self, capacity: int = 1024, device: str | torch.device = "cpu"):
        self.device = device
        self.capacity = capacity
        self._t = 0
        self._data: dict[str, torch.Tensor] | None = None

    def __len__(self) -> int:
        return self._t

    def _allocate(self, fields: dict[str, torch.Tensor]) -> None:
        device, n = self.device, self.capacity
        self._data = {
            k: torch.zeros((n, *v.shape), dtype=v.dtype, device=device) for k, v in fields.items()
        }
        self._data["reward"] = torch.zeros(n, device=device)
        self._data["next_value"] = torch.zeros(n, device=device)
        self._data["next_mask"] = torch.ones(n, device=device)
        self._data["next_done"] = torch.zeros(n, dtype=torch.bool, device=device)

    def _grow(self) -> None:
        self.capacity *= 2
        old = self._data
        self._data = {k: torch.cat((v, torch.zeros_like(v))) for k, v in old.items()}

    def store(self, **fields: torch.Tensor) -> None:
        """Record the fields of the current step (``observation``, ``action``, ``value``)."""
        if self._data is None:
            self._allocate(fields)
        elif self._t == self.capacity:
            self._grow()
        for key, value in fields.items():
            self._data[key][self._t] = value

    def store_outcome(self, reward: Any, done: Any, mask: Any, next_value: Any) -> None:
        """Record what followed the current step and advance to the next one."""
        t = self._t
        data = self._data
        data["reward"][t] = reward
        data["next_done"][t] = done
        data["next_mask"][t] = mask
        data["next_value"][t] = next_value
        self._t = t + 1

    def compute(self, gamma: float) -> NamedArray:
        """Returns ``G`` and advantages ``G - V(s)`` of the stored (complete) episodes.

        Every stored episode must have ended (its last step's ``done`` is set).
        """
        n = self._t
        data = {k: v[:n] for k, v in self._data.items()}
        if not bool(data["next_done"][-1]):
            raise RuntimeError("EpisodeBuffer.compute needs the last episode to have ended")
        returns = n_step_returns(
            data["reward"], data["next_value"], data["next_mask"], data["next_done"], gamma
        )
        advantage = returns - data["value"]
        fields = ("observation", "action", "value")
        stored = {k: data[k].clone() for k in fields}  # the storage is reused after clear()
        return NamedArray(**stored, advantage=advantage, returns=returns)

    def clear(self) -> None:
        """Start a new batch (storage is reused)."""
        self._t = 0


class VPG(Agent):
    """Local VPG agent: trains after the episode that brings the batch to ``min_batch_size``.

    Args:
        policy, trainer: the algorithm.
        discount_factor: gamma.
        min_batch_size: steps of complete episodes per update.
        logger: receives the trainer's statistics.
    """

    def __init__(
        self,
        policy: PPOPolicy,
        trainer: Trainer,
        discount_factor: float = 0.99,
        min_batch_size: int = 500,
        logger: Logger | None = None,
    ):
        self.policy = policy
        self.trainer = trainer
        self.device = policy.device
        self.discount_factor = discount_factor
        self.min_batch_size = min_batch_size
        self.buffer = EpisodeBuffer(max(2 * min_batch_size, 1024), device=policy.device)
        self.logger = logger or DummyLogger()
        self._pending = False  # a stored step awaits its outcome

    def act(self, state: State) -> Any:
        state = state.to(self.device)
        result = self.policy.rollout(RolloutRequest(obs=state.observation.unsqueeze(0)))
        if self._pending:
            self.buffer.store_outcome(state.reward, state.done, state.mask, result.value[0])
        if state.done:  # the episode ended here; the next state starts a new one
            self._pending = False
            if len(self.buffer) >= self.min_batch_size:
                self._train()
            return result.action[0]
        self.buffer.store(
            observation=state.observation, action=result.action[0], value=result.value[0]
        )
        self._pending = True
        return result.action[0]

    def _train(self) -> None:
        batch = self.buffer.compute(self.discount_factor)
        self.buffer.clear()
        stats = self.trainer.step(batch)
        if self.logger.verbose:
            for name, value in stats.items():
                self.logger.add_loss(name, value)


class VPGTestAgent(PPOTestAgent):
    """Evaluation agent: the most likely action under the policy (see ``PPOTestAgent``)."""
