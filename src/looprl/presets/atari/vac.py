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

from looprl.agents.actor_critic import ActorCriticPolicy, ActorCriticTestAgent
from looprl.agents.on_policy import OnPolicyAgent
from looprl.agents.vac import VACTrainer
from looprl.approximation import Approximation
from looprl.core import DummyLogger, ParallelPreset
from looprl.environments.bodies import deepmind_atari_body
from looprl.nn import SharedActorCritic
from looprl.presets.atari.a2c import atari_actor_critic
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import ActorCriticTestAgents, require_positive

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


class VACAtariPreset(ActorCriticTestAgents, ParallelPreset):
    """Builds online actor-critic agents over ``n_envs`` Atari environments."""

    policy_class = ActorCriticPolicy
    test_agent_class = ActorCriticTestAgent

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(hyperparameters, "lr_pi", "lr_v", "n_envs")
        self.n_envs = hyperparameters["n_envs"]
        self.model, self.head = atari_actor_critic(env, hyperparameters, "VAC", device)

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Any:
        hp = self.hyperparameters
        logger = logger or DummyLogger()
        optimizer = shared_actor_critic_optimizer(self.model, hp["lr_pi"], hp["lr_v"], hp["eps"])
        approximation = Approximation(
            self.model, optimizer, clip_grad=hp["clip_grad"], name="vac", logger=logger
        )
        policy = ActorCriticPolicy(approximation, self.head)
        trainer = VACTrainer(
            policy, value_coef=hp["value_coef"], entropy_coef=hp["entropy_coef"],
            normalize_advantages=hp["normalize_advantages"], discount_factor=hp["discount_factor"],
        )
        agent = OnPolicyAgent(policy, trainer, hp["n_envs"], n_steps=1, logger=logger)
        return deepmind_atari_body(agent, hp["episodic_life"], hp["clip_rewards"])


vac = PresetBuilder("vac", default_hyperparameters, VACAtariPreset)
