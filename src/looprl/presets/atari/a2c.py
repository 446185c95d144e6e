"""A2C preset for Atari (Mnih et al., 2016, https://arxiv.org/abs/1602.01783).

The Nature CNN shared by the policy and value heads (``nn.cnn.nature_actor_critic``),
16 environments x 5 steps per update (n-step advantages), Adam at 7e-4 (eps 1.5e-4),
entropy bonus 0.01, value loss weight 0.5 and gradients clipped to norm 0.1: the
autonomous-learning-library's Atari settings (which follow OpenAI Baselines' A2C, with Adam
in place of RMSprop).
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.nn import SharedActorCritic
from looprl.nn.cnn import nature_actor_critic
from looprl.policies.distributions import CategoricalHead
from looprl.presets.atari.common import DeepMindBody, require_frames
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.a2c import A2CClassicControlPreset
from looprl.presets.common import require_discrete_actions
from looprl.presets.on_policy import OnPolicyPreset

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lam": 1.0,
    "lr": 7e-4,
    "eps": 1.5e-4,
    "n_envs": 16,
    "n_steps": 5,
    "value_coef": 0.5,
    "entropy_coef": 0.01,
    "normalize_advantages": False,
    "clip_grad": 0.1,
    "episodic_life": True,
    "clip_rewards": True,
    "features": "nature",
}


def atari_actor_critic(
    env: Any, hyperparameters: dict[str, Any], algorithm: str
) -> tuple[SharedActorCritic, CategoricalHead]:
    """The shared Nature actor-critic for ``env`` (checked: stacked frames, discrete actions)."""
    num_actions = require_discrete_actions(env, algorithm)
    frames = require_frames(env, algorithm)
    model = nature_actor_critic(num_actions, frames, features=hyperparameters["features"])
    return model, CategoricalHead(num_actions)


class A2CAtariPreset(DeepMindBody, A2CClassicControlPreset):
    """Builds A2C agents over ``n_envs`` Atari environments (see the module docstring):
    the classic-control preset's trainer with the shared Nature actor-critic, one Adam."""

    positive = ("lr", "n_envs", "n_steps")

    def _build(self, env: Any) -> tuple[SharedActorCritic, CategoricalHead]:
        return atari_actor_critic(env, self.hyperparameters, self.algorithm)

    def _optimizer(self, model: SharedActorCritic) -> torch.optim.Optimizer:
        return OnPolicyPreset._optimizer(self, model)


a2c = PresetBuilder("a2c", default_hyperparameters, A2CAtariPreset)
