"""The networks of the Atari presets: heads on the Nature CNN (Mnih et al., 2015,
https://www.nature.com/articles/nature14236) or another extractor of ``looprl.nn.features``.
They take stacked uint8 frames ``(batch, 4, 84, 84)`` and scale them by 1/255 inside, so
observations stay uint8 (4x smaller) in replay and rollout buffers.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.nn.actor_critic import SharedActorCritic
from looprl.nn.distributional import CategoricalDueling, CategoricalQHead
from looprl.nn.features import FEATURE_EXTRACTORS, NatureCNN, NatureConv, feature_extractor
from looprl.nn.layers import HIDDEN_GAIN, Dueling, orthogonal_init
from looprl.nn.noisy import NoisyFactorizedLinear

__all__ = ["FEATURE_EXTRACTORS", "NatureCNN", "NatureConv", "nature_actor_critic", "nature_c51",
           "nature_categorical_dqn", "nature_dqn", "nature_dueling_dqn", "nature_features",
           "nature_rainbow"]


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
    streams of ``hidden`` ReLU units each, combined as ``V + A - mean(A)`` (``nature_rainbow``
    without noise and atoms)."""
    return nature_rainbow(num_actions, frames=frames, hidden=hidden, noisy=False,
                          distributional=False)


def nature_rainbow(num_actions: int, atoms: int = 51, frames: int = 4, hidden: int = 512,
                   sigma: float = 0.5, dueling: bool = True, noisy: bool = True,
                   distributional: bool = True) -> nn.Sequential:
    """Rainbow's Q-network (Hessel et al., 2018, https://arxiv.org/abs/1710.02298): value and
    advantage streams of noisy layers, combined per atom by ``CategoricalDueling``; each part
    can be switched off for ablations. Probabilities ``(batch, num_actions, atoms)`` when
    ``distributional``, else Q-values ``(batch, num_actions)``.

    Args:
        num_actions: size of the action space.
        atoms: atoms of the return distribution.
        frames: stacked input frames.
        hidden: units of each stream's hidden layer.
        sigma: initial noise scale ``sigma_0`` of the noisy layers.
        dueling: separate value and advantage streams.
        noisy: noisy linear layers in the streams (else orthogonally initialized ones).
        distributional: ``atoms`` outputs per action, normalized by a softmax.
    """
    conv = NatureConv(frames)
    outputs = atoms if distributional else 1

    def linear(n_in: int, n_out: int, gain: float) -> nn.Module:
        if noisy:
            return NoisyFactorizedLinear(n_in, n_out, sigma_init=sigma)
        return orthogonal_init(nn.Linear(n_in, n_out), gain)

    def stream(n_out: int) -> nn.Sequential:
        return nn.Sequential(
            linear(conv.out_features, hidden, HIDDEN_GAIN), nn.ReLU(), linear(hidden, n_out, 1.0)
        )

    if dueling:
        combine = CategoricalDueling if distributional else Dueling
        head = combine(stream(outputs), stream(num_actions * outputs))
    else:
        head = stream(num_actions * outputs)
    net = nn.Sequential(conv, head)
    return nn.Sequential(CategoricalQHead(net, num_actions, atoms)) if distributional else net


def nature_categorical_dqn(
    num_actions: int, atoms: int = 51, frames: int = 4, features: str = "nature"
) -> nn.Sequential:
    """C51's network (Bellemare et al., 2017): ``num_actions * atoms`` logits per state,
    reshaped to ``(batch, num_actions, atoms)``."""
    dqn = nature_dqn(num_actions * atoms, frames, features)
    return nn.Sequential(*dqn, nn.Unflatten(-1, (num_actions, atoms)))


def nature_c51(
    num_actions: int, atoms: int = 51, frames: int = 4, features: str = "nature"
) -> CategoricalQHead:
    """C51: ``(batch, num_actions, atoms)`` probabilities (a softmax per action)."""
    logits = nature_categorical_dqn(num_actions, atoms, frames, features)
    return CategoricalQHead(logits, num_actions, atoms)


def nature_actor_critic(
    num_actions: int, frames: int = 4, features: str = "nature"
) -> SharedActorCritic:
    """The Nature CNN shared by a policy head (gain 0.01) and a value head (gain 1), as in
    the PPO and A2C Atari baselines."""
    body = nature_features(features, frames)
    policy = orthogonal_init(nn.Linear(body.out_features, num_actions), 0.01)
    value = orthogonal_init(nn.Linear(body.out_features, 1), 1.0)
    return SharedActorCritic(body, policy, value)
