"""Vanilla actor-critic (VAC) preset for classic control.

Separate tanh actor and critic MLPs with their own learning rates (as in the
autonomous-learning-library's VAC), 16 environments, one update per step, no gradient
clipping. One-step actor-critic is the least stable of the family: with ``lr_pi = 1e-3``
CartPole-v1 peaked at 464 and collapsed (seed 0 of
``benchmarks/learning_classic_control.py``); ``lr_pi = 5e-4`` reaches 500 within 90,000 steps.
"""

from __future__ import annotations

from typing import Any

from looprl.agents.actor_critic import ActorCriticPolicy, ActorCriticTestAgent
from looprl.agents.on_policy import OnPolicyAgent
from looprl.agents.vac import VACTrainer
from looprl.approximation import Approximation
from looprl.core import DummyLogger, ParallelPreset
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.a2c import actor_critic_model, actor_critic_optimizer
from looprl.presets.common import ActorCriticTestAgents, require_positive

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


class VACClassicControlPreset(ActorCriticTestAgents, ParallelPreset):
    """Builds online actor-critic agents over ``n_envs`` environments."""

    policy_class = ActorCriticPolicy
    test_agent_class = ActorCriticTestAgent

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(hyperparameters, "lr_pi", "lr_v", "n_envs", "hidden")
        self.n_envs = hyperparameters["n_envs"]
        self.model, self.head = actor_critic_model(env, hyperparameters, "VAC", device)

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> OnPolicyAgent:
        hp = self.hyperparameters
        logger = logger or DummyLogger()
        optimizer = actor_critic_optimizer(self.model, hp["lr_pi"], hp["lr_v"], hp["eps"])
        approximation = Approximation(
            self.model, optimizer, clip_grad=hp["clip_grad"], name="vac", logger=logger
        )
        policy = ActorCriticPolicy(approximation, self.head)
        trainer = VACTrainer(
            policy, value_coef=hp["value_coef"], entropy_coef=hp["entropy_coef"],
            normalize_advantages=hp["normalize_advantages"], discount_factor=hp["discount_factor"],
        )
        return OnPolicyAgent(policy, trainer, hp["n_envs"], n_steps=1, logger=logger)


vac = PresetBuilder("vac", default_hyperparameters, VACClassicControlPreset)
