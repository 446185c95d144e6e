"""Further Atari networks over the Nature CNN (``looprl.nn.cnn``), for the Atari presets.

* ``nature_c51`` -- C51's network (Bellemare et al., 2017, https://arxiv.org/abs/1707.06887):
  ``nature_categorical_dqn``'s logits with a softmax over the atoms of each action, the
  probabilities ``QDist`` expects.
* ``nature_rainbow`` -- Rainbow's network (Hessel et al., 2018,
  https://arxiv.org/abs/1710.02298): the Nature convolutions, then value and advantage
  streams of ``hidden`` units whose layers are noisy (``NoisyFactorizedLinear``), combined
  per atom by ``CategoricalDueling``; each part can be switched off (``dueling``, ``noisy``,
  ``distributional``) for ablations.
* ``nature_value`` -- a Nature CNN with one linear value output (PPG's separate critic).

Every model takes stacked uint8 frames ``(batch, frames, 84, 84)`` and scales them inside.
"""

from __future__ import annotations

from torch import nn

from looprl.nn.cnn import NatureConv, nature_categorical_dqn, nature_features
from looprl.nn.distributional import CategoricalDueling, CategoricalQHead
from looprl.nn.layers import HIDDEN_GAIN, Dueling, orthogonal_init
from looprl.nn.noisy import NoisyFactorizedLinear

__all__ = ["nature_c51", "nature_rainbow", "nature_value"]


def nature_c51(
    num_actions: int, atoms: int = 51, frames: int = 4, features: str = "nature"
) -> CategoricalQHead:
    """C51: ``(batch, num_actions, atoms)`` probabilities (a softmax per action)."""
    logits = nature_categorical_dqn(num_actions, atoms, frames, features)
    return CategoricalQHead(logits, num_actions, atoms)


def nature_rainbow(
    num_actions: int,
    atoms: int = 51,
    frames: int = 4,
    hidden: int = 512,
    sigma: float = 0.5,
    dueling: bool = True,
    noisy: bool = True,
    distributional: bool = True,
) -> nn.Sequential:
    """Rainbow's Q-network: probabilities ``(batch, num_actions, atoms)`` when
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
        value, advantage = stream(outputs), stream(num_actions * outputs)
        if distributional:
            return nn.Sequential(conv, CategoricalDueling(value, advantage, num_actions, atoms))
        return nn.Sequential(conv, Dueling(value, advantage))
    head = nn.Sequential(conv, stream(num_actions * outputs))
    if distributional:
        return nn.Sequential(CategoricalQHead(head, num_actions, atoms))
    return head


def nature_value(frames: int = 4, features: str = "nature") -> nn.Sequential:
    """A state-value network: features and one linear output (gain 1), ``(batch, 1)``."""
    body = nature_features(features, frames)
    return nn.Sequential(body, orthogonal_init(nn.Linear(body.out_features, 1), 1.0))
