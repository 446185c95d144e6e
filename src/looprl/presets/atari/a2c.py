"""A2C preset for Atari (Mnih et al., 2016, https://arxiv.org/abs/1602.01783).

The Nature CNN shared by the policy and value heads (``nn.cnn.nature_actor_critic``),
16 environments x 5 steps per update (n-step advantages), Adam at 7e-4 (eps 1.5e-4),
entropy bonus 0.01, value loss weight 0.5 and gradients clipped to norm 0.1: the
autonomous-learning-library's Atari settings (which follow OpenAI Baselines' A2C, with Adam
in place of RMSprop).
"""

from __future__ import annotations

from typing import Any

from torch import optim

from looprl.agents.a2c import A2CTrainer
from looprl.agents.actor_critic import ActorCriticPolicy, ActorCriticTestAgent
from looprl.agents.on_policy import OnPolicyAgent
from looprl.approximation import Approximation
from looprl.core import DummyLogger, ParallelPreset
from looprl.environments.bodies import deepmind_atari_body
from looprl.nn import SharedActorCritic
from looprl.nn.cnn import nature_actor_critic
from looprl.policies.distributions import CategoricalHead
from looprl.presets.atari.common import require_frames
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import ActorCriticTestAgents, require_discrete_actions, require_positive

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
    env: Any, hyperparameters: dict[str, Any], algorithm: str, device: Any
) -> tuple[SharedActorCritic, CategoricalHead]:
    """The shared Nature actor-critic for ``env`` (checked: stacked frames, discrete actions)."""
    num_actions = require_discrete_actions(env, algorithm)
    frames = require_frames(env, algorithm)
    model = nature_actor_critic(num_actions, frames, features=hyperparameters["features"])
    return model.to(device), CategoricalHead(num_actions)


class A2CAtariPreset(ActorCriticTestAgents, ParallelPreset):
    """Builds A2C agents over ``n_envs`` Atari environments (see the module docstring)."""

    policy_class = ActorCriticPolicy
    test_agent_class = ActorCriticTestAgent

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(hyperparameters, "lr", "n_envs", "n_steps")
        self.n_envs = hyperparameters["n_envs"]
        self.model, self.head = atari_actor_critic(env, hyperparameters, "A2C", device)

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Any:
        hp = self.hyperparameters
        logger = logger or DummyLogger()
        optimizer = optim.Adam(self.model.parameters(), lr=hp["lr"], eps=hp["eps"], fused=True)
        approximation = Approximation(
            self.model, optimizer, clip_grad=hp["clip_grad"], name="a2c", logger=logger
        )
        policy = ActorCriticPolicy(approximation, self.head)
        trainer = A2CTrainer(
            policy, hp["value_coef"], hp["entropy_coef"], hp["normalize_advantages"],
            discount_factor=hp["discount_factor"], gae_lambda=hp["lam"],
        )
        agent = OnPolicyAgent(
            policy, trainer, n_envs=hp["n_envs"], n_steps=hp["n_steps"], logger=logger
        )
        return deepmind_atari_body(agent, hp["episodic_life"], hp["clip_rewards"])


a2c = PresetBuilder("a2c", default_hyperparameters, A2CAtariPreset)
