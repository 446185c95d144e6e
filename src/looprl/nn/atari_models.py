"""Further Atari networks over the Nature CNN (``looprl.nn.cnn``), for the Atari presets.

* ``nature_c51`` -- C51's network (Bellemare et al., 2017, https://arxiv.org/abs/1707.06887):
  ``nature_categorical_dqn``'s logits with a softmax over the atoms of each action, the
  probabilities ``QDist`` expects.
* ``nature_rainbow`` -- Rainbow's network (``looprl.nn.cnn``).
* ``nature_value`` -- a Nature CNN with one linear value output (PPG's separate critic).

Every model takes stacked uint8 frames ``(batch, frames, 84, 84)`` and scales them inside.
"""

from __future__ import annotations

from torch import nn

from looprl.nn.cnn import nature_categorical_dqn, nature_features, nature_rainbow
from looprl.nn.distributional import CategoricalQHead
from looprl.nn.layers import orthogonal_init

__all__ = ["nature_c51", "nature_rainbow", "nature_value"]


def nature_c51(
    num_actions: int, atoms: int = 51, frames: int = 4, features: str = "nature"
) -> CategoricalQHead:
    """C51: ``(batch, num_actions, atoms)`` probabilities (a softmax per action)."""
    logits = nature_categorical_dqn(num_actions, atoms, frames, features)
    return CategoricalQHead(logits, num_actions, atoms)


def nature_value(frames: int = 4, features: str = "nature") -> nn.Sequential:
    """A state-value network: features and one linear output (gain 1), ``(batch, 1)``."""
    body = nature_features(features, frames)
    return nn.Sequential(body, orthogonal_init(nn.Linear(body.out_features, 1), 1.0))
