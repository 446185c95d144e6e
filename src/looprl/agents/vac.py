"""Vanilla Actor-Critic, online over parallel environments.

The one-step actor-critic of Sutton & Barto (2018, section 13.5) and Konda & Tsitsiklis
(2000, https://papers.nips.cc/paper/1786-actor-critic-algorithms): after every step of
``n_envs`` environments, the TD error ``delta = r + gamma * mask' * V(s') - V(s)`` is the
advantage of the actor's update and the critic regresses ``V(s)`` onto
``r + gamma * mask' * V(s')``.

``VACTrainer`` is ``A2CTrainer`` on one-step segments (``T = 1``, ``lam = 0``), with the
advantage taken from the current critic. The policy is ``ActorCriticPolicy`` and the local
agent ``OnPolicyAgent`` with ``n_steps=1``.
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.a2c import A2CTrainer
from looprl.core import Policy
from looprl.core.namedarray import NamedArray

__all__ = ["VACTrainer"]


class VACTrainer(A2CTrainer):
    """One gradient step of ``a2c_loss`` on the TD errors of one step of every env: the
    advantage is ``R - V(s)`` with ``R = r + gamma * mask' * V(s')`` from the segment and
    ``V(s)`` from the current critic (the stored one is one update older). ``**kwargs``:
    ``A2CTrainer``'s (``gae_lambda`` is 0).
    """

    def __init__(self, policy: Policy, **kwargs: Any):
        super().__init__(policy, **{"gae_lambda": 0.0, **kwargs})

    def _loss(self, analysis: NamedArray, rows: NamedArray, advantage: torch.Tensor
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        advantage = self._advantage(rows.returns - analysis.value.detach())
        return super()._loss(analysis, rows, advantage)
