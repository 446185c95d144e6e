"""DDPG preset for continuous control, and the parts the TD3 and SAC presets share.

Defaults (256x256 ReLU networks, lr 1e-3, 1,000 random warm-up steps, tau 0.005,
Gaussian exploration noise 0.1) learn Pendulum-v1 within 15,000 steps.
"""

from __future__ import annotations

import copy
import math
from abc import abstractmethod
from typing import Any

import gymnasium as gym
import numpy as np
from torch import nn, optim

from looprl.agents.ddpg import (
    DDPG,
    ContinuousQ,
    DDPGPolicy,
    DDPGTestAgent,
    DDPGTrainer,
)
from looprl.approximation import Approximation, PolyakTarget
from looprl.core import DummyLogger, Preset
from looprl.memory import ExperienceReplayBuffer
from looprl.nn import MLP
from looprl.policies.deterministic import DeterministicActor, DeterministicPolicy
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import require_flat_observations, require_positive


def require_box_actions(env: Any, algorithm: str, bounded: bool = True) -> gym.spaces.Box:
    """``env``'s flat ``Box`` action space; ``ValueError`` if it is not one (or unbounded)."""
    space = env.action_space
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise ValueError(
            f"{algorithm} needs a continuous (flat Box) action space, but {env.name} has "
            f"{space}; choose an algorithm for discrete actions"
        )
    if bounded and not (np.isfinite(space.low).all() and np.isfinite(space.high).all()):
        raise ValueError(f"{algorithm} needs finite action bounds, but {env.name} has {space}")
    return space


def mlp(in_dim: int, out_dim: int, hidden: int) -> MLP:
    """A two-hidden-layer ReLU MLP."""
    return MLP(in_dim, out_dim, hidden=(hidden, hidden), activation=nn.ReLU)


def adam(module: nn.Module, lr: float) -> optim.Adam:
    return optim.Adam(module.parameters(), lr=lr, fused=True)


OFF_POLICY_POSITIVE = (
    "lr_actor",
    "lr_critic",
    "minibatch_size",
    "update_frequency",
    "gradient_steps",
    "replay_buffer_size",
    "hidden",
    "polyak_rate",
)


class OffPolicyContinuousPreset(Preset):
    """Shared setup of the DDPG, TD3 and SAC presets: checks, sizes, replay and agents.

    Subclasses build ``self.actor`` and ``self.critic`` and implement ``_policy_and_trainer``.
    """

    algorithm = "DDPG"

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(hyperparameters, *OFF_POLICY_POSITIVE)
        if hyperparameters["replay_start_size"] < 0:
            raise ValueError("Hyperparameter 'replay_start_size' must be >= 0")
        self.action_space = require_box_actions(env, self.algorithm)
        self.obs_dim = require_flat_observations(env, self.algorithm, "continuous")
        self.action_dim = int(self.action_space.shape[0])

    def _critic_model(self) -> ContinuousQ:
        hp = self.hyperparameters
        return ContinuousQ(mlp(self.obs_dim + self.action_dim, 1, hp["hidden"]))

    @abstractmethod
    def _policy_and_trainer(self, logger: Any) -> tuple[Any, Any]:
        """The algorithm's policy and trainer, logging to ``logger``."""

    def _agent_class(self) -> type:
        return DDPG

    def agent(self, logger: Any = None, train_steps: float = math.inf) -> Any:
        hp = self.hyperparameters
        logger = logger or DummyLogger()
        policy, trainer = self._policy_and_trainer(logger)
        return self._agent_class()(
            policy,
            trainer,
            ExperienceReplayBuffer(hp["replay_buffer_size"], device=self.device),
            minibatch_size=hp["minibatch_size"],
            replay_start_size=hp["replay_start_size"],
            update_frequency=hp["update_frequency"],
            gradient_steps=hp["gradient_steps"],
            logger=logger,
        )


default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lr_actor": 1e-3,
    "lr_critic": 1e-3,
    "minibatch_size": 256,
    "replay_start_size": 1000,
    "replay_buffer_size": 1_000_000,
    "update_frequency": 1,
    "gradient_steps": 1,
    "polyak_rate": 0.005,
    "noise": 0.1,
    "hidden": 256,
}


class DDPGContinuousPreset(OffPolicyContinuousPreset):
    """Builds DDPG agents: a tanh actor and a critic over ``cat(s, a)``, both 2 x ``hidden``."""

    algorithm = "DDPG"

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(env, name, device, hyperparameters)
        actor = mlp(self.obs_dim, self.action_dim, hyperparameters["hidden"])
        self.actor = DeterministicActor(actor, self.action_space).to(device)
        self.critic = self._critic_model().to(device)

    def _actor(self, logger: Any) -> DeterministicPolicy:
        hp = self.hyperparameters
        return DeterministicPolicy(
            self.actor,
            adam(self.actor, hp["lr_actor"]),
            noise=hp["noise"],
            target=PolyakTarget(hp["polyak_rate"]),
            name="actor",
            logger=logger,
        )

    def _q(self, logger: Any, target: Any = None) -> Approximation:
        hp = self.hyperparameters
        return Approximation(
            self.critic,
            adam(self.critic, hp["lr_critic"]),
            target=target or PolyakTarget(hp["polyak_rate"]),
            name="critic",
            logger=logger,
        )

    def _policy_and_trainer(self, logger: Any) -> tuple[DDPGPolicy, DDPGTrainer]:
        policy = DDPGPolicy(self._actor(logger))
        trainer = DDPGTrainer(policy, self._q(logger), self.hyperparameters["discount_factor"])
        return policy, trainer

    def test_agent(self) -> DDPGTestAgent:
        return DDPGTestAgent(DDPGPolicy(DeterministicPolicy(copy.deepcopy(self.actor))))


ddpg = PresetBuilder("ddpg", default_hyperparameters, DDPGContinuousPreset)
