"""Vanilla Policy Gradient, REINFORCE with a learned baseline (Williams, 1992,
https://doi.org/10.1007/BF00992696): one step of
``-mean(log pi(a|s) * (G - V(s)))`` per batch of complete episodes while ``V`` regresses
onto the Monte-Carlo return ``G``, i.e. ``A2CTrainer(gae_lambda=1)``."""

from __future__ import annotations

from typing import Any

from looprl.agents.a2c import A2CTrainer
from looprl.agents.all_agents import all_actor_critic
from looprl.agents.shell import AllForm, SegmentAgent
from looprl.core import Agent, Logger, Policy, Trainer
from looprl.memory.segments import SegmentBuffer

__all__ = ["VPG"]


class VPG(AllForm, SegmentAgent, Agent):
    """The VPG agent: trains after the episode that brings the segment to ``min_batch_size``
    steps. ALL's ``VPG(features, v, policy, discount_factor=0.99, min_batch_size=1)``, or
    looprl's ``VPG(policy, trainer, min_batch_size=500, logger=None)`` (the presets')."""

    def _units(self, policy: Policy, trainer: Trainer, min_batch_size: int = 500,
               logger: Logger | None = None) -> None:
        SegmentAgent.__init__(self, policy, trainer,  # (past AllForm's dispatch)
                              SegmentBuffer(min_batch_size, 1, whole_episodes=True), logger)

    def _from_all(self, features: Any, v: Any, policy: Any, discount_factor: float = 0.99,
                  min_batch_size: int = 1) -> None:
        acting = all_actor_critic(self, features, v, policy)
        self._units(acting, A2CTrainer(acting, value_coef=1.0, discount_factor=discount_factor),
                    min_batch_size)
