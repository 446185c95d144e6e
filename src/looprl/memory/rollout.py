"""On-policy rollout storage with generalized advantage estimation (GAE).

A ``RolloutBuffer`` holds ``n_steps`` x ``n_envs`` steps in preallocated tensors. At each
step the agent ``store``s what it saw and did (observation, action, log-prob, value, and
whether the observed state was ``done``) and, one step later, ``store_outcome`` records
what followed (reward, and ``done``/``mask`` of the next state).

With next-step autoreset, the step out of a ``done`` state is not a real transition;
``compute`` marks it invalid so that losses skip it, and truncated episodes bootstrap from
the value of their final observation, which is the next stored observation.
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.core.namedarray import NamedArray


def generalized_advantage_estimate(
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    next_masks: torch.Tensor,
    next_dones: torch.Tensor,
    gamma: float,
    lam: float,
) -> torch.Tensor:
    """GAE(gamma, lambda) advantages (Schulman et al., 2016), time along dimension 0.

    ``delta_t = r_t + gamma * mask_{t+1} * V(s_{t+1}) - V(s_t)`` and
    ``A_t = delta_t + gamma * lam * (1 - done_{t+1}) * A_{t+1}``: ``mask`` stops
    bootstrapping at terminal states, ``done`` stops the recursion at any episode end.
    """
    deltas = rewards + gamma * next_masks * next_values - values
    decay = gamma * lam * (1.0 - next_dones.float())
    advantages = torch.empty_like(deltas)
    last = torch.zeros_like(deltas[0])
    for t in range(deltas.shape[0] - 1, -1, -1):
        last = deltas[t] + decay[t] * last
        advantages[t] = last
    return advantages


class RolloutBuffer:
    """Preallocated ``(n_steps, n_envs)`` storage for one on-policy rollout.

    Args:
        n_steps: steps per environment per rollout.
        n_envs: number of parallel environments.
        device: where tensors live.
    """

    #: the run's metrics dictionary when meta components are attached (``looprl.meta``)
    metrics: dict[str, Any] | None = None

    FIELDS = ("observation", "action", "log_prob", "value")

    def __init__(self, n_steps: int, n_envs: int, device: str | torch.device = "cpu"):
        self.n_steps = n_steps
        self.n_envs = n_envs
        self.device = device
        self._t = 0
        self._data: dict[str, torch.Tensor] | None = None
        shape = (n_steps, n_envs)
        self.rewards = torch.zeros(shape, device=device)
        self.dones = torch.zeros(shape, dtype=torch.bool, device=device)
        self.next_dones = torch.zeros(shape, dtype=torch.bool, device=device)
        self.next_masks = torch.ones(shape, device=device)

    @property
    def full(self) -> bool:
        """Whether all ``n_steps`` steps are stored (and their outcomes recorded)."""
        return self._t == self.n_steps

    def __len__(self) -> int:
        return self._t * self.n_envs

    def store(self, done: torch.Tensor, **fields: torch.Tensor) -> None:
        """Record step ``t``: ``done`` of the observed state plus ``FIELDS`` (one row per env)."""
        if self._data is None:
            self._data = {
                key: torch.zeros((self.n_steps, *v.shape), dtype=v.dtype, device=self.device)
                for key, v in fields.items()
            }
        t = self._t
        for key, value in fields.items():
            self._data[key][t] = value
        self.dones[t] = done

    def store_outcome(self, reward: torch.Tensor, done: torch.Tensor, mask: torch.Tensor) -> None:
        """Record what followed the last stored step, and advance to the next step."""
        t = self._t
        self.rewards[t] = reward
        self.next_dones[t] = done
        self.next_masks[t] = mask
        self._t = t + 1

    def compute(self, last_value: torch.Tensor, gamma: float, lam: float) -> NamedArray:
        """Advantages and returns for the stored rollout, flattened to valid steps only.

        Args:
            last_value: ``V`` of the observations that follow the last stored step.

        Returns:
            A ``NamedArray`` with ``FIELDS`` plus ``advantage`` and ``returns``, one row per
            valid transition (rows leaving a ``done`` state are dropped).
        """
        if not self.full:
            raise RuntimeError(f"Rollout has {self._t} of {self.n_steps} steps; cannot compute")
        values = self._data["value"]
        next_values = torch.cat((values[1:], last_value.unsqueeze(0)))
        advantages = generalized_advantage_estimate(
            self.rewards, values, next_values, self.next_masks, self.next_dones, gamma, lam
        )
        valid = ~self.dones.flatten()
        flat = {k: v.flatten(0, 1)[valid] for k, v in self._data.items()}
        advantage = advantages.flatten()[valid]
        return NamedArray(**flat, advantage=advantage, returns=advantage + flat["value"])

    def clear(self) -> None:
        """Start a new rollout (storage is reused)."""
        self._t = 0
