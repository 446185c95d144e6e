"""Presets for Atari games (``AtariEnvironment``), with Nature-CNN models (Mnih et al., 2015).

The classic-control algorithms with the autonomous-learning-library's Atari settings; each
training agent wears ``deepmind_atari_body`` (a lost life ends the episode for learning,
clipped rewards), while the environment reports true game scores.
"""

from looprl.presets.atari.presets import (
    a2c,
    c51,
    ddqn,
    dqn,
    ppg,
    ppo,
    rainbow,
    vac,
    vpg,
    vqn,
    vsarsa,
)

__all__ = ["a2c", "c51", "ddqn", "dqn", "ppg", "ppo", "rainbow", "vac", "vpg", "vqn", "vsarsa"]
