"""PPO preset for classic control, with the rl-baselines3-zoo CartPole-v1 defaults.

The defaults (8 envs, 32 steps, 20 epochs, linear learning-rate and clip annealing)
solve CartPole-v1 (mean return >= 475) within 100,000 steps.
"""

from __future__ import annotations

import math
from typing import Any

from torch import nn, optim

from looprl.agents.actor_critic import ActorCriticPolicy, ActorCriticTestAgent
from looprl.agents.on_policy import OnPolicyAgent
from looprl.agents.ppo import PPOTrainer
from looprl.approximation import Approximation
from looprl.core import DummyLogger, ParallelPreset
from looprl.nn import MLP, ActorCritic, SharedActorCritic, feature_extractor, orthogonal_init
from looprl.policies.distributions import CategoricalHead
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import (
    ActorCriticTestAgents,
    require_discrete_actions,
    require_flat_observations,
    require_positive,
)
from looprl.presets.parts import check_parts

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
    # None: separate tanh actor and critic MLPs of 2 x `hidden`; else a spec of
    # looprl.nn.feature_extractor for one body shared by a policy and a value head
    "features": None,
    # the parts of looprl.presets.parts this preset takes (PPO's own, named for configs)
    "exploration": "stochastic",
    "buffer": "rollout",
    "update": "ppo",
}



class linear:  # noqa: N801 -- used like a function: linear(3e-4)
    """A schedule of training progress ``p`` in ``[0, 1]``: ``initial * (1 - p)`` (a class,
    not a closure, so that checkpoints can pickle it)."""

    def __init__(self, initial: float):
        self.initial = initial

    def __call__(self, progress: float) -> float:
        return self.initial * (1.0 - progress)


class PPOClassicControlPreset(ActorCriticTestAgents, ParallelPreset):
    """Builds PPO agents with separate tanh actor and critic MLPs (SB3's architecture).

    The base of every PPO-family preset: subclasses for other networks or environment
    families override ``_build`` (the network and action head), ``_wrap`` (bodies around the
    agent) and, for other trainers, ``_trainer``.
    """

    algorithm = "PPO"
    policy_class: Any = ActorCriticPolicy
    test_agent_class: Any = ActorCriticTestAgent
    #: hyperparameters that must be positive
    positive: tuple[str, ...] = ("lr", "n_envs", "n_steps", "epochs", "minibatch_size", "hidden")
    #: the part names (``looprl.presets.parts``) it takes
    parts: dict[str, tuple[str, ...]] = {
        "exploration": ("stochastic",), "buffer": ("rollout",), "update": ("ppo",),
    }

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(hyperparameters, *self.positive)
        check_parts(hyperparameters, name, self.parts)
        self.n_envs = hyperparameters["n_envs"]
        model, self.head = self._build(env)
        self.model = model.to(device)

    def _build(self, env: Any) -> tuple[nn.Module, Any]:
        """The network (outputs ``(action parameters, values)``) and the action head."""
        num_actions = require_discrete_actions(env, self.algorithm)
        features = self.hyperparameters.get("features")
        if features is not None:  # one shared body, a policy head and a value head
            body = feature_extractor(features, env.observation_space.shape)
            policy = orthogonal_init(nn.Linear(body.out_features, num_actions), 0.01)
            value = orthogonal_init(nn.Linear(body.out_features, 1), 1.0)
            return SharedActorCritic(body, policy, value), CategoricalHead(num_actions)
        obs_dim = require_flat_observations(env, self.algorithm)
        hidden = (self.hyperparameters["hidden"],) * 2
        actor = MLP(obs_dim, num_actions, hidden=hidden, output_gain=0.01)
        critic = MLP(obs_dim, 1, hidden=hidden, output_gain=1.0)
        return ActorCritic(actor, critic), CategoricalHead(num_actions)

    def _policy(self, logger: Any) -> Any:
        hp = self.hyperparameters
        optimizer = optim.Adam(self.model.parameters(), lr=hp["lr"], eps=hp["eps"], fused=True)
        approximation = Approximation(
            self.model, optimizer, clip_grad=hp["clip_grad"], name=self.algorithm.lower(),
            logger=logger,
        )
        return self.policy_class(approximation, self.head)

    def _trainer(self, policy: Any, updates: float) -> PPOTrainer:
        return PPOTrainer(policy, **self._ppo_arguments(updates))

    def _ppo_arguments(self, updates: float) -> dict[str, Any]:
        """``PPOTrainer``'s arguments; the clip range and the learning rate anneal to 0 over
        the budget when it is known (and ``linear_clip`` / ``linear_lr`` say so)."""
        hp = self.hyperparameters
        known = math.isfinite(updates)
        return dict(
            epochs=hp["epochs"], minibatch_size=hp["minibatch_size"],
            clip=linear(hp["clip"]) if hp["linear_clip"] and known else hp["clip"],
            lr=linear(hp["lr"]) if hp["linear_lr"] and known else None,
            value_coef=hp["value_coef"], entropy_coef=hp["entropy_coef"],
            value_clip=hp["value_clip"], total_updates=updates,
            discount_factor=hp["discount_factor"], gae_lambda=hp["lam"],
        )

    def _wrap(self, agent: Any) -> Any:
        """Bodies around the agent (none for classic control)."""
        return agent

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Any:
        hp = self.hyperparameters
        logger = logger or DummyLogger()
        updates = train_steps / (hp["n_envs"] * hp["n_steps"])
        policy = self._policy(logger)
        agent = OnPolicyAgent(
            policy, self._trainer(policy, updates), n_envs=hp["n_envs"], n_steps=hp["n_steps"],
            logger=logger,
        )
        return self._wrap(agent)


ppo = PresetBuilder("ppo", default_hyperparameters, PPOClassicControlPreset)
