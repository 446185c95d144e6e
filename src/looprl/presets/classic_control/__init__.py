"""Presets for classic-control environments (CartPole, Acrobot, ...)."""

from looprl.presets.classic_control.a2c import a2c
from looprl.presets.classic_control.c51 import c51
from looprl.presets.classic_control.dqn import ddqn, dqn
from looprl.presets.classic_control.ppg import ppg
from looprl.presets.classic_control.ppo import ppo
from looprl.presets.classic_control.rainbow import rainbow
from looprl.presets.classic_control.vac import vac
from looprl.presets.classic_control.vpg import vpg
from looprl.presets.classic_control.vqn import vqn
from looprl.presets.classic_control.vsarsa import vsarsa

__all__ = ["a2c", "c51", "ddqn", "dqn", "ppg", "ppo", "rainbow", "vac", "vpg", "vqn", "vsarsa"]
