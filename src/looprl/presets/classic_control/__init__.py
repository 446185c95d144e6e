"""Presets for classic-control environments (CartPole, Acrobot, ...)."""

from looprl.presets.classic_control.dqn import dqn
from looprl.presets.classic_control.ppo import ppo

__all__ = ["dqn", "ppo"]
