"""Vanilla Policy Gradient: REINFORCE with a learned baseline.

Williams (1992, https://doi.org/10.1007/BF00992696) and Sutton et al. (2000,
https://papers.nips.cc/paper/1713-policy-gradient-methods-for-reinforcement-learning-with-function-approximation):
one gradient step of ``-mean(log pi(a|s) * (G - V(s)))`` per batch of complete episodes, ``G``
the Monte-Carlo return (bootstrapped after a time limit), while ``V`` regresses onto ``G``.
The trainer is ``A2CTrainer(gae_lambda=1)``: on whole episodes, GAE(1) is ``G - V(s)``.
"""

from __future__ import annotations

from looprl.agents.shell import SegmentAgent
from looprl.core import Agent, Logger, Policy, Trainer
from looprl.memory.segments import SegmentBuffer

__all__ = ["VPG"]


class VPG(SegmentAgent, Agent):
    """Local VPG agent: trains after the episode that brings the segment to ``min_batch_size``.

    Args:
        policy, trainer: the algorithm (``A2CTrainer(policy, gae_lambda=1.0)``).
        min_batch_size: steps of complete episodes per update.
        logger: receives the trainer's statistics.
    """

    def __init__(
        self,
        policy: Policy,
        trainer: Trainer,
        min_batch_size: int = 500,
        logger: Logger | None = None,
    ):
        # one stream of whole episodes, min_batch_size steps or more per segment
        super().__init__(policy, trainer, SegmentBuffer(min_batch_size, 1, whole_episodes=True),
                         logger)
