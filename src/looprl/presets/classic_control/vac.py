"""Vanilla actor-critic (VAC) preset for classic control.

Separate tanh actor and critic MLPs with their own learning rates (as in the
autonomous-learning-library's VAC), 16 environments, one update per step, no gradient
clipping. One-step actor-critic is the least stable of the family: with ``lr_pi = 1e-3``
CartPole-v1 peaked at 464 and collapsed (seed 0 of
``benchmarks/learning_classic_control.py``); ``lr_pi = 5e-4`` reaches 500 within 90,000 steps.
"""

from __future__ import annotations

import math
from typing import Any

from looprl.agents.vac import VACTrainer
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.a2c import SeparateMLPs
from looprl.presets.on_policy import OnPolicyPreset

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.98,
    "lr_pi": 5e-4,
    "lr_v": 1e-2,
    "eps": 1e-5,
    "n_envs": 16,
    "value_coef": 0.5,
    "entropy_coef": 0.0,
    "normalize_advantages": False,
    "clip_grad": 0.0,
    "hidden": 64,
}


class VACClassicControlPreset(SeparateMLPs, OnPolicyPreset):
    """Builds online actor-critic agents over ``n_envs`` environments (one-step segments)."""

    algorithm = "VAC"

    def trainer(self, policy: Any, train_steps: float = math.inf) -> VACTrainer:
        hp = self.hyperparameters
        return VACTrainer(
            policy, value_coef=hp["value_coef"], entropy_coef=hp["entropy_coef"],
            normalize_advantages=hp["normalize_advantages"], discount_factor=hp["discount_factor"],
        )


vac = PresetBuilder("vac", default_hyperparameters, VACClassicControlPreset)
