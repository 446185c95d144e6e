"""Vanilla Actor-Critic (Sutton & Barto, 2018, section 13.5,
http://incompleteideas.net/book/the-book-2nd.html), online over parallel environments: the TD
error of every step is the actor's advantage and the critic's error."""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.a2c import A2CTrainer
from looprl.core import Policy
from looprl.core.namedarray import NamedArray

__all__ = ["VACTrainer"]


class VACTrainer(A2CTrainer):
    """One gradient step of ``a2c_loss`` on one step of every env: the advantage is ``R - V(s)``,
    ``R = r + gamma * mask' * V(s')`` from the segment and ``V(s)`` from the current critic."""

    def __init__(self, policy: Policy, **kwargs: Any):
        super().__init__(policy, **{"gae_lambda": 0.0, **kwargs})

    def _loss(self, analysis: NamedArray, rows: NamedArray, advantage: torch.Tensor
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        advantage = self._advantage(rows.returns - analysis.value.detach())
        return super()._loss(analysis, rows, advantage)
