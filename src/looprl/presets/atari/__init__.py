"""Presets for Atari games (``AtariEnvironment``), with Nature-CNN models (Mnih et al., 2015).

The classic-control algorithms with the autonomous-learning-library's Atari settings; each
training agent wears ``deepmind_atari_body`` (a lost life ends the episode for learning,
clipped rewards), while the environment reports true game scores.
"""

from looprl.presets.atari.a2c import a2c
from looprl.presets.atari.c51 import c51
from looprl.presets.atari.ddqn import ddqn
from looprl.presets.atari.dqn import dqn
from looprl.presets.atari.ppg import ppg
from looprl.presets.atari.ppo import ppo
from looprl.presets.atari.rainbow import rainbow
from looprl.presets.atari.vac import vac
from looprl.presets.atari.vpg import vpg
from looprl.presets.atari.vqn import vqn
from looprl.presets.atari.vsarsa import vsarsa

__all__ = ["a2c", "c51", "ddqn", "dqn", "ppg", "ppo", "rainbow", "vac", "vpg", "vqn", "vsarsa"]
