"""Memory: replay buffers and on-policy rollout storage (preallocated, O(1) add)."""

from looprl.memory.atari_replay import AtariReplayBuffer, PrioritizedAtariReplayBuffer
from looprl.memory.nstep import NStepReplayBuffer
from looprl.memory.prioritized import PrioritizedReplayBuffer, SumTree, importance_weights
from looprl.memory.replay import ExperienceReplayBuffer
from looprl.memory.rollout import RolloutBuffer, generalized_advantage_estimate

__all__ = [
    "AtariReplayBuffer",
    "ExperienceReplayBuffer",
    "NStepReplayBuffer",
    "PrioritizedAtariReplayBuffer",
    "PrioritizedReplayBuffer",
    "RolloutBuffer",
    "SumTree",
    "generalized_advantage_estimate",
    "importance_weights",
]
