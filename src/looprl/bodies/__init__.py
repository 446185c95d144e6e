"""ALL's ``all.bodies`` import path: the bodies of ``looprl.environments.bodies``, with ALL's
names ``ClipRewards`` (``RewardClipping``) and ``DeepmindAtariBody`` (``deepmind_atari_body``:
episodic lives and clipped rewards; looprl's Atari environments stack the frames)."""

from looprl.environments.bodies import (
    Body,
    EpisodicLife,
    FrameStack,
    ObservationNormalization,
    RewardClipping,
    TimeFeature,
    deepmind_atari_body,
)

ClipRewards = RewardClipping
DeepmindAtariBody = deepmind_atari_body

__all__ = ["Body", "ClipRewards", "DeepmindAtariBody", "EpisodicLife", "FrameStack",
           "ObservationNormalization", "RewardClipping", "TimeFeature"]
