"""Presets for continuous control (Pendulum, MuJoCo, ...): DDPG, TD3, SAC and PPO."""

from looprl.presets.continuous.ddpg import ddpg, sac, td3
from looprl.presets.continuous.ppo import ppo

__all__ = ["ddpg", "ppo", "sac", "td3"]
