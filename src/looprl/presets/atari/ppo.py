"""PPO preset for Atari (Schulman et al., 2017, https://arxiv.org/abs/1707.06347): the Nature
CNN shared by the policy and value heads, with the PPO paper's Atari settings."""

from __future__ import annotations

from typing import Any

from looprl.presets.atari.common import NatureActorCritic
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.ppo import PPOClassicControlPreset
from looprl.presets.classic_control.ppo import default_hyperparameters as classic_defaults
from looprl.presets.common import derived

default_hyperparameters: dict[str, Any] = derived(
    classic_defaults, drop=("hidden",), discount_factor=0.99, lam=0.95, lr=2.5e-4, n_steps=128,
    epochs=4, clip=0.1, entropy_coef=0.01, features="nature", episodic_life=True,
    clip_rewards=True,
)


class PPOAtariPreset(NatureActorCritic, PPOClassicControlPreset):
    """Builds PPO agents with a shared Nature CNN."""


ppo = PresetBuilder("ppo", default_hyperparameters, PPOAtariPreset)
