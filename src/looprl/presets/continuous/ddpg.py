"""DDPG preset for continuous control, and the parts the TD3 and SAC presets share.

Defaults (256x256 ReLU networks, lr 1e-3, 1,000 random warm-up steps, tau 0.005,
Gaussian exploration noise 0.1) learn Pendulum-v1 within 15,000 steps.
"""

from __future__ import annotations

import copy
import math
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
from looprl.core import DummyLogger
from looprl.nn import MLP
from looprl.policies.deterministic import DeterministicActor, DeterministicPolicy
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import require_flat_observations, require_positive
from looprl.presets.off_policy import ReplayPreset


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


class OffPolicyContinuousPreset(ReplayPreset):
    """Shared setup of the DDPG, TD3 and SAC presets: checks, sizes, and the local agent.

    Subclasses build ``self.actor`` and ``self.critic`` and implement ``policy`` and
    ``trainer``; the policy acts at random for the first ``replay_start_size`` rows of its
    ``rollout`` (each Ray actor's warm-up; the local agent warms up by itself).
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

    def _model(self, model: nn.Module, copy_model: bool, device: Any) -> nn.Module:
        """``model`` (a copy with ``copy_model``) on ``device`` (default: the preset's)."""
        return (copy.deepcopy(model) if copy_model else model).to(
            device if device is not None else self.device)

    def _own(self, policy: Any, model: nn.Module) -> nn.Module:
        """The preset's ``model`` for the policy over the preset's actor, else a copy on the
        policy's device (a trainer of a copied policy trains its own critics)."""
        return model if policy.module is self.actor else self._model(model, True, policy.device)

    def _agent(self, policy: Any, trainer: Any, buffer: Any, logger: Any,
               **schedule: Any) -> Any:
        return self._agent_class()(policy, trainer, buffer, logger=logger, **schedule)

    def _agent_class(self) -> type:
        return DDPG


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

    def _actor(self, logger: Any, device: Any = None, copy_model: bool = False
               ) -> DeterministicPolicy:
        hp = self.hyperparameters
        actor = self._model(self.actor, copy_model, device)
        return DeterministicPolicy(
            actor,
            adam(actor, hp["lr_actor"]),
            noise=hp["noise"],
            target=PolyakTarget(hp["polyak_rate"]),
            name="actor",
            logger=logger or DummyLogger(),
        )

    def _q(self, policy: Any, target: Any = None) -> Approximation:
        hp = self.hyperparameters
        critic = self._own(policy, self.critic)
        return Approximation(
            critic,
            adam(critic, hp["lr_critic"]),
            target=target or PolyakTarget(hp["polyak_rate"]),
            name="critic",
            logger=policy.actor.logger,
        )

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False
               ) -> DDPGPolicy:
        return DDPGPolicy(self._actor(logger, device, copy_model),
                          self.hyperparameters["replay_start_size"])

    def trainer(self, policy: DDPGPolicy, train_steps: float = math.inf) -> DDPGTrainer:
        return DDPGTrainer(policy, self._q(policy), self.hyperparameters["discount_factor"])

    def test_agent(self) -> DDPGTestAgent:
        return DDPGTestAgent(DDPGPolicy(DeterministicPolicy(copy.deepcopy(self.actor))))


ddpg = PresetBuilder("ddpg", default_hyperparameters, DDPGContinuousPreset)
