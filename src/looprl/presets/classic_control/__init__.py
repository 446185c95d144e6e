"""Presets for classic-control environments (CartPole, Acrobot, ...)."""

from looprl.presets.classic_control.a2c import a2c, vac, vpg
from looprl.presets.classic_control.dqn import c51, ddqn, dqn, rainbow
from looprl.presets.classic_control.ppo import ppg, ppo
from looprl.presets.classic_control.vqn import vqn, vsarsa

__all__ = ["a2c", "c51", "ddqn", "dqn", "ppg", "ppo", "rainbow", "vac", "vpg", "vqn", "vsarsa"]
