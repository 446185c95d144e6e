"""Presets for classic-control environments (CartPole, Acrobot, ...)."""

from looprl.presets.classic_control.a2c import a2c
from looprl.presets.classic_control.dqn import dqn
from looprl.presets.classic_control.ppg import ppg
from looprl.presets.classic_control.ppo import ppo
from looprl.presets.classic_control.vac import vac
from looprl.presets.classic_control.vpg import vpg

__all__ = ["a2c", "dqn", "ppg", "ppo", "vac", "vpg"]
