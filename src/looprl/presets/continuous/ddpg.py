"""DDPG preset for continuous control (Pendulum-v1 within 15,000 steps), and the parts the
TD3 and SAC presets share."""

from __future__ import annotations

import copy
import math
from abc import abstractmethod
from typing import Any

import torch
from torch import nn, optim

from looprl.agents.actor import Actor
from looprl.agents.ddpg import DDPG, ContinuousQ, DDPGPolicy, DDPGTrainer, TwinQ
from looprl.approximation import Approximation, PolyakTarget
from looprl.core import DummyLogger
from looprl.nn import MLP
from looprl.policies.deterministic import DeterministicActor, DeterministicPolicy
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import policy_network, require_box_actions, require_flat_observations
from looprl.presets.constructors import (
    DDPG_MODELS,
    call_constructor,
    constructors,
    run_checked,
    space_sample,
    unset,
)
from looprl.presets.off_policy import ReplayPreset


def mlp(in_dim: int, out_dim: int, hidden: int) -> MLP:
    """A two-hidden-layer ReLU MLP."""
    return MLP(in_dim, out_dim, hidden=(hidden, hidden), activation=nn.ReLU)


def adam(module: nn.Module, lr: float, wanted: bool = True) -> optim.Adam | None:
    """A fused Adam over ``module``'s parameters (``None`` unless ``wanted``)."""
    return optim.Adam(module.parameters(), lr=lr, fused=True) if wanted else None


class OffPolicyContinuousPreset(ReplayPreset):
    """Shared setup of the DDPG, TD3 and SAC presets: checks, sizes, the critic (twin with
    ``twin``) and the local agent (``agent_class``); subclasses give ``_actor``, ``policy``
    and ``trainer``."""

    algorithm = "DDPG"
    agent_class = DDPG
    twin = False
    #: ALL's model constructors -> ALL's defaults (``looprl.presets.continuous.models``)
    models = DDPG_MODELS

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        self.action_space = require_box_actions(env, self.algorithm)
        self.obs_dim = require_flat_observations(env, self.algorithm, "continuous")
        self.check_replay_memory(env)
        self.action_dim = int(self.action_space.shape[0])
        built = constructors(hyperparameters, self.models)
        self.actor = (self._actor() if built is None else self._custom_actor(built, env)
                      ).to(device)
        in_dim, hidden = self.obs_dim + self.action_dim, hyperparameters["hidden"]
        q = [mlp(in_dim, 1, hidden) for _ in range(1 + self.twin)] if built is None else [
            self._custom_q(built, name, env) for name in self.q_names()]
        if self.twin and q[0] is q[1]:  # (one network: the twins' minimum would be idle)
            names = " and ".join(dict.fromkeys(self.q_names()))
            raise ValueError(f"{self.algorithm}: {names} returned the same module object for "
                             "both critics; the twin critics must be two networks: build a new "
                             "module on each call")
        self.critic = (TwinQ(*q) if self.twin else ContinuousQ(*q)).to(device)

    def q_names(self) -> list[str]:
        """The constructor of each critic (ALL's DDPG: one ``q_model_constructor``)."""
        return ["q_model_constructor"] * (1 + self.twin)

    def _custom_q(self, built: dict[str, Any], name: str, env: Any) -> nn.Module:
        """ALL's ``q_model_constructor(env)``, checked on ``cat(observation, action)``."""
        model = call_constructor(self.algorithm, name, built[name], env)
        x = torch.cat((space_sample(env.observation_space), space_sample(self.action_space)), -1)
        run_checked(self.algorithm, name, built[name], model, [x], [(1, 1)],
                    "one value of cat(observation, action)")
        return model

    def _custom_actor(self, built: dict[str, Any], env: Any) -> nn.Module:
        """ALL's ``policy_model_constructor(env)``: an action's pre-activations, squashed
        into the bounds."""
        return DeterministicActor(self._policy_model(built, env, self.action_dim,
                                                     "an action's pre-activations"),
                                  self.action_space)

    def _policy_model(self, built: dict[str, Any], env: Any, outputs: int, what: str
                      ) -> nn.Module:
        """ALL's ``policy_model_constructor(env)``, checked to give ``outputs`` numbers."""
        name = "policy_model_constructor"
        model = call_constructor(self.algorithm, name, built[name], env)
        run_checked(self.algorithm, name, built[name], model, [space_sample(env.observation_space)],
                    [(1, outputs)], what)
        return model

    @abstractmethod
    def _actor(self) -> nn.Module:
        """The actor network."""

    def _own(self, policy: Any, model: nn.Module) -> nn.Module:
        """``model`` for a policy over the preset's actor, else a copy on the policy's device."""
        return model if policy.module is self.actor else policy_network(
            self, policy.device, True, model)

    def _q(self, policy: Any, target: Any = None) -> Approximation:
        """The critic of ``policy``'s trainer: Adam at ``lr_critic``, a Polyak target."""
        hp = self.hyperparameters
        critic = self._own(policy, self.critic)
        return Approximation(critic, adam(critic, hp["lr_critic"]), name="critic",
                             target=target or PolyakTarget(hp["polyak_rate"]),
                             logger=policy.actor.logger)


default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99, "lr_actor": 1e-3, "lr_critic": 1e-3, "minibatch_size": 256,
    "replay_start_size": 1000, "replay_buffer_size": 1_000_000, "update_frequency": 1,
    "gradient_steps": 1, "polyak_rate": 0.005, "noise": 0.1, "hidden": 256,
    # ALL's model constructors (looprl.presets.continuous.models): None, the MLPs of `hidden`
    **unset(DDPG_MODELS),
}


class DDPGContinuousPreset(OffPolicyContinuousPreset):
    """Builds DDPG agents: a tanh actor and a critic over ``cat(s, a)``, both 2 x ``hidden``."""

    def _actor(self) -> DeterministicActor:
        actor = mlp(self.obs_dim, self.action_dim, self.hyperparameters["hidden"])
        return DeterministicActor(actor, self.action_space)

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False,
               optimizer: bool = True) -> DDPGPolicy:
        hp = self.hyperparameters
        actor = policy_network(self, device, copy_model, self.actor)
        return DDPGPolicy(DeterministicPolicy(
            actor, adam(actor, hp["lr_actor"], optimizer), noise=hp["noise"], name="actor",
            target=PolyakTarget(hp["polyak_rate"]), logger=logger or DummyLogger(),
        ), hp["replay_start_size"])

    def trainer(self, policy: DDPGPolicy, train_steps: float = math.inf) -> DDPGTrainer:
        return DDPGTrainer(policy, self._q(policy), self.hyperparameters["discount_factor"])

    def test_agent(self) -> Actor:
        """An evaluation ``Actor`` over a copy of the actor (``mu(s)``, no noise)."""
        return Actor(DDPGPolicy(DeterministicPolicy(copy.deepcopy(self.actor))), evaluation=True)


ddpg = PresetBuilder("ddpg", default_hyperparameters, DDPGContinuousPreset)
