"""The Nature CNN (Mnih et al., 2015, https://www.nature.com/articles/nature14236) and heads.

Models take stacked uint8 frames ``(batch, 4, 84, 84)`` and scale them by 1/255 inside, so
observations stay uint8 (4x smaller) in replay and rollout buffers until the forward pass.

* ``NatureConv``, ``NatureCNN`` -- the convolutions and the feature extractor
  (``looprl.nn.features``).
* ``nature_features(kind)`` -- a feature extractor of ``looprl.nn.features`` over stacked
  84x84 frames (``"nature"``, ``"resnet"``, ``"cnn"`` or a combination).
* ``nature_dqn`` / ``nature_dueling_dqn`` / ``nature_categorical_dqn`` -- Q-networks:
  features + a linear head (dueling: separate value and advantage streams; categorical:
  ``num_actions * atoms`` logits).
* ``nature_actor_critic`` -- the Nature CNN shared by a policy head and a value head
  (a ``looprl.nn.actor_critic.SharedActorCritic``).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.nn.actor_critic import SharedActorCritic
from looprl.nn.features import FEATURE_EXTRACTORS, NatureCNN, NatureConv, feature_extractor
from looprl.nn.layers import HIDDEN_GAIN, Dueling, orthogonal_init

__all__ = [
    "FEATURE_EXTRACTORS",
    "NatureCNN",
    "NatureConv",
    "nature_actor_critic",
    "nature_categorical_dqn",
    "nature_dqn",
    "nature_dueling_dqn",
    "nature_features",
]


def nature_features(kind: Any = "nature", frames: int = 4) -> nn.Module:
    """The feature extractor ``kind`` (a spec of ``looprl.nn.features.feature_extractor``)
    over ``frames`` stacked 84x84 frames."""
    return feature_extractor(kind, (frames, 84, 84))


def nature_dqn(num_actions: int, frames: int = 4, features: str = "nature") -> nn.Sequential:
    """The Nature DQN: features and a linear layer of one value per action."""
    body = nature_features(features, frames)
    return nn.Sequential(body, orthogonal_init(nn.Linear(body.out_features, num_actions), 1.0))


def nature_dueling_dqn(num_actions: int, frames: int = 4, hidden: int = 512) -> nn.Sequential:
    """Dueling DQN (Wang et al., 2016): the Nature convolutions, then value and advantage
    streams of ``hidden`` ReLU units each, combined as ``V + A - mean(A)``."""
    conv = NatureConv(frames)

    def stream(out: int) -> nn.Sequential:
        return nn.Sequential(
            orthogonal_init(nn.Linear(conv.out_features, hidden), HIDDEN_GAIN),
            nn.ReLU(),
            orthogonal_init(nn.Linear(hidden, out), 1.0),
        )

    return nn.Sequential(conv, Dueling(stream(1), stream(num_actions)))


def nature_categorical_dqn(
    num_actions: int, atoms: int = 51, frames: int = 4, features: str = "nature"
) -> nn.Sequential:
    """C51's network (Bellemare et al., 2017): ``num_actions * atoms`` logits per state,
    reshaped to ``(batch, num_actions, atoms)``."""
    body = nature_features(features, frames)
    head = orthogonal_init(nn.Linear(body.out_features, num_actions * atoms), 1.0)
    return nn.Sequential(body, head, nn.Unflatten(-1, (num_actions, atoms)))


def nature_actor_critic(
    num_actions: int, frames: int = 4, features: str = "nature"
) -> SharedActorCritic:
    """The Nature CNN shared by a policy head (gain 0.01) and a value head (gain 1), as in
    the PPO and A2C Atari baselines."""
    body = nature_features(features, frames)
    policy = orthogonal_init(nn.Linear(body.out_features, num_actions), 0.01)
    value = orthogonal_init(nn.Linear(body.out_features, 1), 1.0)
    return SharedActorCritic(body, policy, value)
