"""ALL 0.9's Atari model constructors (``all.presets.atari.models``), with their names,
signatures and layers: ``from looprl.presets.atari.models import nature_ddqn``. They take
``frames`` stacked 84x84 uint8 frames (scaled by 1/255 inside); the presets call them as ALL's
did when given as ``model_constructor`` (``atari.dqn.hyperparameters(model_constructor=
nature_dqn)``; C51 adds ``atoms=``, Rainbow ``atoms=`` and ``sigma=``).

These are ALL's networks, which the Atari presets' defaults are not (``looprl.nn.cnn``'s,
with orthogonal initialization)."""

from __future__ import annotations

from typing import Any

from looprl import nn

__all__ = ["nature_c51", "nature_ddqn", "nature_dqn", "nature_features", "nature_policy_head",
           "nature_rainbow", "nature_value_head"]

#: the outputs of the Nature convolutions over 84x84 frames (64 x 7 x 7)
CONV_FEATURES = 3136


def _conv(frames: int) -> list[nn.Module]:
    """The Nature convolutions (Mnih et al., 2015) over ``frames`` frames, flattened."""
    return [nn.Scale(1 / 255), nn.Conv2d(frames, 32, 8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(), nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
            nn.Flatten()]


def nature_dqn(env: Any, frames: int = 4) -> nn.Sequential:
    """The Nature DQN: Q-values of ``env``'s actions."""
    return nn.Sequential(*_conv(frames), nn.Linear(CONV_FEATURES, 512), nn.ReLU(),
                         nn.Linear0(512, env.action_space.n))


def nature_ddqn(env: Any, frames: int = 4) -> nn.Sequential:
    """The dueling Nature network (ALL's DDQN, VQN and VSarsa)."""
    return nn.Sequential(*_conv(frames), nn.Dueling(
        nn.Sequential(nn.Linear(CONV_FEATURES, 512), nn.ReLU(), nn.Linear0(512, 1)),
        nn.Sequential(nn.Linear(CONV_FEATURES, 512), nn.ReLU(),
                      nn.Linear0(512, env.action_space.n))))


def nature_features(frames: int = 4) -> nn.Sequential:
    """The actor-critic presets' shared features: 512 ReLU units over the convolutions."""
    return nn.Sequential(*_conv(frames), nn.Linear(CONV_FEATURES, 512), nn.ReLU())


def nature_value_head() -> nn.Linear:
    """The state value over ``nature_features``."""
    return nn.Linear(512, 1)


def nature_policy_head(env: Any) -> nn.Linear0:
    """Action logits over ``nature_features`` (starting at zero)."""
    return nn.Linear0(512, env.action_space.n)


def nature_c51(env: Any, frames: int = 4, atoms: int = 51) -> nn.Sequential:
    """C51's logits ``(batch, actions * atoms)``."""
    return nn.Sequential(*_conv(frames), nn.Linear(CONV_FEATURES, 512), nn.ReLU(),
                         nn.Linear0(512, env.action_space.n * atoms))


def nature_rainbow(env: Any, frames: int = 4, hidden: int = 512, atoms: int = 51,
                   sigma: float = 0.5) -> nn.Sequential:
    """Rainbow's logits ``(batch, actions * atoms)``: noisy value and advantage streams of
    ``hidden`` units (initial noise ``sigma``), combined per atom."""
    def stream(outputs: int) -> nn.Sequential:
        return nn.Sequential(
            nn.NoisyFactorizedLinear(CONV_FEATURES, hidden, sigma_init=sigma, init_scale=3),
            nn.ReLU(), nn.NoisyFactorizedLinear(hidden, outputs, sigma_init=sigma, init_scale=0))

    return nn.Sequential(*_conv(frames),
                         nn.CategoricalDueling(stream(atoms), stream(env.action_space.n * atoms)))
