"""Memory: replay buffers and on-policy segment storage (preallocated, O(1) add); ALL's
``NStepReplayBuffer`` wrapper and advantage buffers."""

from looprl.memory.atari_replay import AtariReplayBuffer, PrioritizedAtariReplayBuffer
from looprl.memory.n_step import NStepReplayBuffer
from looprl.memory.prioritized import PrioritizedReplayBuffer, SumTree, importance_weights
from looprl.memory.replay import ExperienceReplayBuffer, ReplayBuffer
from looprl.memory.samples import (
    GeneralizedAdvantageBuffer,
    NStepAdvantageBuffer,
    OnPolicyBuffer,
    make_sample_buffer,
)
from looprl.memory.segments import SegmentBuffer

__all__ = [
    "AtariReplayBuffer", "ExperienceReplayBuffer", "GeneralizedAdvantageBuffer",
    "NStepAdvantageBuffer", "NStepReplayBuffer", "OnPolicyBuffer",
    "PrioritizedAtariReplayBuffer", "PrioritizedReplayBuffer", "ReplayBuffer", "SegmentBuffer",
    "SumTree", "importance_weights", "make_sample_buffer",
]
