"""Presets for continuous control (Pendulum, MuJoCo, ...): DDPG, TD3, SAC and PPO."""

from looprl.presets.continuous.ddpg import ddpg
from looprl.presets.continuous.ppo import ppo
from looprl.presets.continuous.sac import sac
from looprl.presets.continuous.td3 import td3

__all__ = ["ddpg", "ppo", "sac", "td3"]
