"""Presets for Atari games (``AtariEnvironment``), with Nature-CNN models (Mnih et al., 2015).

Each training agent is wrapped in ``deepmind_atari_body`` (a lost life ends the episode for
learning, rewards clipped to their sign); the environment reports true game scores.
Further Atari presets plug their networks in from ``looprl.nn.cnn``
(``nature_dqn``, ``nature_dueling_dqn``, ``nature_categorical_dqn``, ``nature_actor_critic``).
"""

from looprl.presets.atari.dqn import dqn
from looprl.presets.atari.ppo import ppo

__all__ = ["dqn", "ppo"]
