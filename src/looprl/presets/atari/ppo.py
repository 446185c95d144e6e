"""PPO preset for Atari (Schulman et al., 2017, https://arxiv.org/abs/1707.06347).

The Nature CNN shared by the policy and value heads, 8 environments x 128 steps, 4 epochs
of 4 minibatches (256 samples), Adam at 2.5e-4 and a clip range of 0.1, both annealed
linearly to 0 over the training budget, entropy bonus 0.01: the PPO paper's Atari settings
(also those of CleanRL and rl-baselines3-zoo).
"""

from __future__ import annotations

import math
from typing import Any

from torch import optim

from looprl.agents.ppo import PPO, PPOPolicy, PPOTestAgent, PPOTrainer
from looprl.approximation import Approximation, LinearLR
from looprl.core import DummyLogger, ParallelPreset
from looprl.environments.bodies import deepmind_atari_body
from looprl.nn.cnn import nature_actor_critic
from looprl.policies.distributions import CategoricalHead
from looprl.presets.atari.common import require_frames
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import ActorCriticTestAgents, require_discrete_actions, require_positive

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lam": 0.95,
    "lr": 2.5e-4,
    "linear_lr": True,
    "eps": 1e-5,
    "n_envs": 8,
    "n_steps": 128,
    "epochs": 4,
    "minibatch_size": 256,
    "clip": 0.1,
    "linear_clip": True,
    "value_coef": 0.5,
    "entropy_coef": 0.01,
    "value_clip": None,
    "clip_grad": 0.5,
    "episodic_life": True,
    "clip_rewards": True,
    "features": "nature",
}


def _linear(initial: float):
    def schedule(progress: float) -> float:
        return initial * (1.0 - progress)

    return schedule


class PPOAtariPreset(ActorCriticTestAgents, ParallelPreset):
    """Builds PPO agents with a shared Nature CNN (see the module docstring)."""

    policy_class = PPOPolicy
    test_agent_class = PPOTestAgent

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(hyperparameters, "lr", "n_envs", "n_steps", "epochs", "minibatch_size")
        self.n_envs = hyperparameters["n_envs"]
        num_actions = require_discrete_actions(env, "PPO")
        frames = require_frames(env, "PPO")
        model = nature_actor_critic(num_actions, frames, features=hyperparameters["features"])
        self.model = model.to(device)
        self.head = CategoricalHead(num_actions)

    def _policy(self, logger: Any, train_steps: float) -> tuple[PPOPolicy, float]:
        hp = self.hyperparameters
        optimizer = optim.Adam(self.model.parameters(), lr=hp["lr"], eps=hp["eps"], fused=True)
        updates = train_steps / (hp["n_envs"] * hp["n_steps"])
        minibatches = math.ceil(hp["n_envs"] * hp["n_steps"] / hp["minibatch_size"])
        scheduler = None
        if hp["linear_lr"] and math.isfinite(updates):
            scheduler = LinearLR(optimizer, max(1, int(updates * hp["epochs"] * minibatches)))
        approximation = Approximation(
            self.model, optimizer, clip_grad=hp["clip_grad"], lr_scheduler=scheduler,
            name="ppo", logger=logger,
        )
        return PPOPolicy(approximation, self.head), updates

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Any:
        hp = self.hyperparameters
        logger = logger or DummyLogger()
        policy, updates = self._policy(logger, train_steps)
        linear = hp["linear_clip"] and math.isfinite(updates)
        trainer = PPOTrainer(
            policy,
            epochs=hp["epochs"],
            minibatch_size=hp["minibatch_size"],
            clip=_linear(hp["clip"]) if linear else hp["clip"],
            value_coef=hp["value_coef"],
            entropy_coef=hp["entropy_coef"],
            value_clip=hp["value_clip"],
            total_updates=updates,
        )
        agent = PPO(
            policy, trainer, n_envs=hp["n_envs"], n_steps=hp["n_steps"],
            discount_factor=hp["discount_factor"], lam=hp["lam"], logger=logger,
        )
        return deepmind_atari_body(agent, hp["episodic_life"], hp["clip_rewards"])


ppo = PresetBuilder("ppo", default_hyperparameters, PPOAtariPreset)
