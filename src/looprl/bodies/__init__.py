"""ALL's ``all.bodies`` import path: the bodies of ``looprl.environments.bodies``, with ALL's
names ``ClipRewards`` (``RewardClipping``) and ``DeepmindAtariBody`` (ALL's arguments over
``deepmind_atari_body``: episodic lives and clipped rewards; looprl's Atari environments stack
the frames)."""

from typing import Any

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


def DeepmindAtariBody(agent: Any, lazy_frames: bool = False, episodic_lives: bool = True,
                      frame_stack: int = 4, clip_rewards: bool = True) -> Any:
    """ALL's ``DeepmindAtariBody(agent, lazy_frames, episodic_lives, frame_stack,
    clip_rewards)``: ``deepmind_atari_body(agent, episodic_lives, clip_rewards)``. The frames
    are stacked by looprl's Atari environments (``AtariEnvironment(name, frame_stack=k)``), so
    ``frame_stack`` other than their 4 is one line. ``lazy_frames=True`` (ALL's Atari presets'):
    a replay agent's empty ``ExperienceReplayBuffer`` or ``PrioritizedReplayBuffer`` stores each
    frame once, as the frame ring (``ReplayAgent.store_frames_once``)."""
    if frame_stack != 4:
        raise ValueError(f"DeepmindAtariBody(frame_stack={frame_stack!r}): looprl's Atari "
                         f"environments stack the frames themselves; give "
                         f"AtariEnvironment(name, frame_stack={frame_stack!r}) and leave "
                         "frame_stack out here")
    if lazy_frames and hasattr(agent, "store_frames_once"):  # (a replay agent: bodies sit above
        agent.store_frames_once()  # the agents' layer, so found by name)
    return deepmind_atari_body(agent, episodic_lives, clip_rewards)

__all__ = ["Body", "ClipRewards", "DeepmindAtariBody", "EpisodicLife", "FrameStack",
           "ObservationNormalization", "RewardClipping", "TimeFeature"]
