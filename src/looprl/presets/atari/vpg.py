"""Vanilla policy gradient (REINFORCE with a learned baseline) preset for Atari (Williams,
1992, https://doi.org/10.1007/BF00992696).

One environment; an update after the episode that brings the batch to 1,000 steps of
complete episodes (with the ``EpisodicLife`` body a lost life ends an episode). The Nature
CNN shared by the policy and value heads; Adam (eps 1.5e-4) at 1e-4 for the features and the
policy head and 5e-4 for the value head, value loss weight 0.25, gradients clipped to norm
0.5: the autonomous-learning-library's Atari settings, plus A3C's entropy bonus of 0.01.
"""

from __future__ import annotations

import copy
from typing import Any

from looprl.agents.a2c import A2CTrainer
from looprl.agents.actor_critic import ActorCriticPolicy, ActorCriticTestAgent
from looprl.agents.vpg import VPG
from looprl.approximation import Approximation
from looprl.core import DummyLogger, Preset
from looprl.environments.bodies import deepmind_atari_body
from looprl.presets.atari.a2c import atari_actor_critic
from looprl.presets.atari.vac import shared_actor_critic_optimizer
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import require_positive

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lr_pi": 1e-4,
    "lr_v": 5e-4,
    "eps": 1.5e-4,
    "min_batch_size": 1000,
    "value_coef": 0.25,
    "entropy_coef": 0.01,
    "normalize_advantages": False,
    "clip_grad": 0.5,
    "episodic_life": True,
    "clip_rewards": True,
    "features": "nature",
}


class VPGAtariPreset(Preset):
    """Builds VPG agents for a single Atari environment."""

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(hyperparameters, "lr_pi", "lr_v", "min_batch_size")
        self.model, self.head = atari_actor_critic(env, hyperparameters, "VPG", device)

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Any:
        hp = self.hyperparameters
        logger = logger or DummyLogger()
        optimizer = shared_actor_critic_optimizer(self.model, hp["lr_pi"], hp["lr_v"], hp["eps"])
        approximation = Approximation(
            self.model, optimizer, clip_grad=hp["clip_grad"], name="vpg", logger=logger
        )
        policy = ActorCriticPolicy(approximation, self.head)
        trainer = A2CTrainer(
            policy, hp["value_coef"], hp["entropy_coef"], hp["normalize_advantages"],
            discount_factor=hp["discount_factor"], gae_lambda=1.0,
        )
        agent = VPG(policy, trainer, min_batch_size=hp["min_batch_size"], logger=logger)
        return deepmind_atari_body(agent, hp["episodic_life"], hp["clip_rewards"])

    def test_agent(self) -> ActorCriticTestAgent:
        policy = ActorCriticPolicy(Approximation(copy.deepcopy(self.model)), self.head)
        return ActorCriticTestAgent(policy)


vpg = PresetBuilder("vpg", default_hyperparameters, VPGAtariPreset)
