"""Phasic Policy Gradient (PPG) preset for Atari (Cobbe et al., 2021,
https://arxiv.org/abs/2009.04416): ``atari.ppo``'s policy phase, and an auxiliary phase every
``n_policy`` iterations over the phase's uint8 frames in minibatches of
``aux_minibatch_size``."""

from __future__ import annotations

from typing import Any

from looprl.nn import PPGNetwork
from looprl.nn.cnn import actor_critic_heads, nature_dqn, nature_features
from looprl.presets.atari.common import NatureActorCritic
from looprl.presets.atari.ppo import default_hyperparameters as ppo_defaults
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.ppg import PPGClassicControlPreset
from looprl.presets.common import derived
from looprl.presets.constructors import AC_NAMES

default_hyperparameters: dict[str, Any] = derived(
    ppo_defaults, drop=AC_NAMES, n_policy=32, aux_epochs=6, beta_clone=1.0,
    aux_minibatch_size=256, update="ppg")


def nature_ppg(num_actions: int, frames: int = 4, features: str = "nature") -> PPGNetwork:
    """A Nature CNN trunk with policy (gain 0.01) and auxiliary value (gain 1) heads, and a
    separate Nature value network."""
    trunk = nature_features(features, frames)
    return PPGNetwork(trunk, *actor_critic_heads(trunk.out_features, num_actions),
                      nature_dqn(1, frames, features))


class PPGAtariPreset(NatureActorCritic, PPGClassicControlPreset):
    """Builds PPG agents over ``n_envs`` Atari environments."""

    network = staticmethod(nature_ppg)


ppg = PresetBuilder("ppg", default_hyperparameters, PPGAtariPreset)
