"""Vanilla Policy Gradient, REINFORCE with a learned baseline (Williams, 1992): one step of
``-mean(log pi(a|s) * (G - V(s)))`` per batch of complete episodes while ``V`` regresses
onto the Monte-Carlo return ``G``, i.e. ``A2CTrainer(gae_lambda=1)``."""

from __future__ import annotations

from looprl.agents.shell import SegmentAgent
from looprl.core import Agent, Logger, Policy, Trainer
from looprl.memory.segments import SegmentBuffer

__all__ = ["VPG"]


class VPG(SegmentAgent, Agent):
    """Local VPG agent: trains after the episode that brings the segment to ``min_batch_size``
    steps (``trainer``: ``A2CTrainer(policy, gae_lambda=1.0)``)."""

    def __init__(self, policy: Policy, trainer: Trainer, min_batch_size: int = 500,
                 logger: Logger | None = None):
        super().__init__(policy, trainer, SegmentBuffer(min_batch_size, 1, whole_episodes=True),
                         logger)
