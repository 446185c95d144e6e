"""PPO preset for classic control, with the rl-baselines3-zoo CartPole-v1 defaults.

The defaults (8 envs, 32 steps, 20 epochs, linear learning-rate and clip annealing)
solve CartPole-v1 (mean return >= 475) within 100,000 steps.
"""

from __future__ import annotations

import math
from typing import Any

from torch import optim

from looprl.agents.ppo import PPO, ActorCritic, PPOPolicy, PPOTestAgent, PPOTrainer
from looprl.approximation import Approximation, LinearLR
from looprl.core import DummyLogger, ParallelPreset
from looprl.nn import MLP
from looprl.policies.distributions import CategoricalHead
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import (
    ActorCriticTestAgents,
    require_discrete_actions,
    require_flat_observations,
    require_positive,
)

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.98,
    "lam": 0.8,
    "lr": 1e-3,
    "linear_lr": True,
    "eps": 1e-5,
    "n_envs": 8,
    "n_steps": 32,
    "epochs": 20,
    "minibatch_size": 256,
    "clip": 0.2,
    "linear_clip": True,
    "value_coef": 0.5,
    "entropy_coef": 0.0,
    "value_clip": None,
    "clip_grad": 0.5,
    "hidden": 64,
}


def linear(initial: float):
    """A schedule of training progress ``p`` in ``[0, 1]``: ``initial * (1 - p)``."""

    def schedule(progress: float) -> float:
        return initial * (1.0 - progress)

    return schedule


class PPOClassicControlPreset(ActorCriticTestAgents, ParallelPreset):
    """Builds PPO agents with separate tanh actor and critic MLPs (SB3's architecture)."""

    policy_class = PPOPolicy
    test_agent_class = PPOTestAgent

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(
            hyperparameters, "lr", "n_envs", "n_steps", "epochs", "minibatch_size", "hidden"
        )
        self.n_envs = hyperparameters["n_envs"]
        num_actions = require_discrete_actions(env, "PPO")
        obs_dim = require_flat_observations(env, "PPO")
        hidden = (hyperparameters["hidden"],) * 2
        actor = MLP(obs_dim, num_actions, hidden=hidden, output_gain=0.01)
        critic = MLP(obs_dim, 1, hidden=hidden, output_gain=1.0)
        self.model = ActorCritic(actor, critic).to(device)
        self.head = CategoricalHead(num_actions)

    def _policy(self, logger: Any, train_steps: float) -> tuple[PPOPolicy, float]:
        hp = self.hyperparameters
        optimizer = optim.Adam(self.model.parameters(), lr=hp["lr"], eps=hp["eps"], fused=True)
        updates = train_steps / (hp["n_envs"] * hp["n_steps"])
        minibatches = math.ceil(hp["n_envs"] * hp["n_steps"] / hp["minibatch_size"])
        scheduler = None
        if hp["linear_lr"] and math.isfinite(updates):
            scheduler = LinearLR(optimizer, int(updates * hp["epochs"] * minibatches))
        approximation = Approximation(
            self.model,
            optimizer,
            clip_grad=hp["clip_grad"],
            lr_scheduler=scheduler,
            name="ppo",
            logger=logger,
        )
        return PPOPolicy(approximation, self.head), updates

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> PPO:
        hp = self.hyperparameters
        logger = logger or DummyLogger()
        policy, updates = self._policy(logger, train_steps)
        clip = linear(hp["clip"]) if hp["linear_clip"] and math.isfinite(updates) else hp["clip"]
        trainer = PPOTrainer(
            policy,
            epochs=hp["epochs"],
            minibatch_size=hp["minibatch_size"],
            clip=clip,
            value_coef=hp["value_coef"],
            entropy_coef=hp["entropy_coef"],
            value_clip=hp["value_clip"],
            total_updates=updates,
        )
        return PPO(
            policy,
            trainer,
            n_envs=hp["n_envs"],
            n_steps=hp["n_steps"],
            discount_factor=hp["discount_factor"],
            lam=hp["lam"],
            logger=logger,
        )


ppo = PresetBuilder("ppo", default_hyperparameters, PPOClassicControlPreset)
