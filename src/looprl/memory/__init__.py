"""Memory: replay buffers and on-policy rollout storage (preallocated, O(1) add)."""

from looprl.memory.atari_replay import AtariReplayBuffer
from looprl.memory.replay import ExperienceReplayBuffer
from looprl.memory.rollout import RolloutBuffer, generalized_advantage_estimate

__all__ = [
    "AtariReplayBuffer",
    "ExperienceReplayBuffer",
    "RolloutBuffer",
    "generalized_advantage_estimate",
]
