"""Vanilla actor-critic (VAC) preset for Atari: one-step actor-critic over 16 environments with
the Nature CNN shared by the policy and value heads, and A3C's entropy bonus of 0.01."""

from __future__ import annotations

from typing import Any

from looprl.presets.atari.common import NatureActorCritic
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.vac import VACClassicControlPreset
from looprl.presets.classic_control.vac import default_hyperparameters as classic_defaults
from looprl.presets.common import derived

default_hyperparameters: dict[str, Any] = derived(
    classic_defaults, drop=("hidden",), discount_factor=0.99, lr_pi=1e-4, lr_v=5e-4,
    eps=1.5e-4, value_coef=0.25, entropy_coef=0.01, clip_grad=0.5, episodic_life=True,
    clip_rewards=True, features="nature",
)


class VACAtariPreset(NatureActorCritic, VACClassicControlPreset):
    """Builds online actor-critic agents over ``n_envs`` Atari environments."""


vac = PresetBuilder("vac", default_hyperparameters, VACAtariPreset)
