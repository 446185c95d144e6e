"""Vanilla actor-critic (VAC) preset for Atari: one-step actor-critic (Sutton & Barto, 2018,
section 13.5) over 16 parallel environments, one update per step.

The Nature CNN shared by the policy and value heads; Adam (eps 1.5e-4) with learning rate
1e-4 for the features and the policy head and 5e-4 for the value head, value loss weight
0.25 and gradients clipped to norm 0.5: the autonomous-learning-library's Atari settings,
plus A3C's entropy bonus of 0.01 (Mnih et al., 2016, https://arxiv.org/abs/1602.01783).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import optim

from looprl.nn import SharedActorCritic
from looprl.policies.distributions import CategoricalHead
from looprl.presets.atari.a2c import atari_actor_critic
from looprl.presets.atari.common import DeepMindBody
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.vac import VACClassicControlPreset

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lr_pi": 1e-4,
    "lr_v": 5e-4,
    "eps": 1.5e-4,
    "n_envs": 16,
    "value_coef": 0.25,
    "entropy_coef": 0.01,
    "normalize_advantages": False,
    "clip_grad": 0.5,
    "episodic_life": True,
    "clip_rewards": True,
    "features": "nature",
}


def shared_actor_critic_optimizer(
    model: SharedActorCritic, lr_pi: float, lr_v: float, eps: float
) -> torch.optim.Optimizer:
    """Adam with two parameter groups: the shared body and the policy head at ``lr_pi``
    (as the library's feature network), the value head at ``lr_v``."""
    groups = [
        {"params": [*model.body.parameters(), *model.policy_head.parameters()], "lr": lr_pi},
        {"params": model.value_head.parameters(), "lr": lr_v},
    ]
    return optim.Adam(groups, eps=eps, fused=True)


class VACAtariPreset(DeepMindBody, VACClassicControlPreset):
    """Builds online actor-critic agents over ``n_envs`` Atari environments: the
    classic-control preset's trainer with the shared Nature actor-critic."""

    positive = ("lr_pi", "lr_v", "n_envs")

    def _build(self, env: Any) -> tuple[SharedActorCritic, CategoricalHead]:
        return atari_actor_critic(env, self.hyperparameters, self.algorithm)

    def _optimizer(self, model: SharedActorCritic) -> torch.optim.Optimizer:
        hp = self.hyperparameters
        return shared_actor_critic_optimizer(model, hp["lr_pi"], hp["lr_v"], hp["eps"])


vac = PresetBuilder("vac", default_hyperparameters, VACAtariPreset)
