"""A2C preset for Atari (Mnih et al., 2016, https://arxiv.org/abs/1602.01783): the Nature CNN
shared by the policy and value heads, 16 environments x 5 steps per update, Adam."""

from __future__ import annotations

from typing import Any

import torch

from looprl.nn import SharedActorCritic
from looprl.presets.atari.common import NatureActorCritic
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.a2c import A2CClassicControlPreset
from looprl.presets.classic_control.a2c import default_hyperparameters as classic_defaults
from looprl.presets.common import derived
from looprl.presets.on_policy import OnPolicyPreset

default_hyperparameters: dict[str, Any] = derived(
    classic_defaults, drop=("hidden",), lr=7e-4, eps=1e-3, n_envs=16, entropy_coef=0.01,
    clip_grad=0.5, episodic_life=True, clip_rewards=True, features="nature",
)


class A2CAtariPreset(NatureActorCritic, A2CClassicControlPreset):
    """Builds A2C agents over ``n_envs`` Atari environments (one Adam over the network)."""

    def _optimizer(self, model: SharedActorCritic) -> torch.optim.Optimizer:
        return OnPolicyPreset._optimizer(self, model)


a2c = PresetBuilder("a2c", default_hyperparameters, A2CAtariPreset)
