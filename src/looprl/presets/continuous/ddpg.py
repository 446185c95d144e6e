"""The off-policy presets for continuous control: DDPG, TD3 and SAC (with automatic entropy
tuning), each learning Pendulum-v1 within 15,000 steps (TD3 and SAC above -400)."""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from torch import nn, optim

from looprl.agents.actor import Actor
from looprl.agents.ddpg import DDPG, ContinuousQ, DDPGPolicy, DDPGTrainer, TwinQ
from looprl.agents.sac import SAC, SACPolicy, SACTrainer, Temperature
from looprl.agents.td3 import TD3, DelayedPolyakTarget, TD3Trainer
from looprl.approximation import Approximation, PolyakTarget
from looprl.core import DummyLogger
from looprl.nn import MLP
from looprl.policies.deterministic import (
    DeterministicActor,
    DeterministicPolicy,
    SoftDeterministicActor,
    SoftDeterministicPolicy,
)
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import (
    derived,
    policy_network,
    require_box_actions,
    require_flat_observations,
)
from looprl.presets.constructors import (
    DDPG_MODELS,
    SAC_MODELS,
    LogVarianceToLogStd,
    call_constructor,
    constructors,
    run_checked,
    space_sample,
)
from looprl.presets.off_policy import ReplayPreset
from looprl.presets.parts import replay_updates


def mlp(in_dim: int, out_dim: int, hidden: int) -> MLP:
    """A two-hidden-layer ReLU MLP."""
    return MLP(in_dim, out_dim, hidden=(hidden, hidden), activation=nn.ReLU)


def adam(module: nn.Module, lr: float, wanted: bool = True) -> optim.Adam | None:
    """A fused Adam over ``module``'s parameters (``None`` unless ``wanted``)."""
    return optim.Adam(module.parameters(), lr=lr, fused=True) if wanted else None


class OffPolicyContinuousPreset(ReplayPreset):
    """Shared setup of the DDPG, TD3 and SAC presets: checks, sizes, the actor
    (``actor_class`` over ``actor_outputs`` numbers per action dimension), the critic (twin
    with ``twin``) and the local agent (``agent_class``); subclasses give ``policy`` and
    ``trainer``."""

    algorithm = "DDPG"
    agent_class = DDPG
    twin = False
    #: ALL's model constructors -> ALL's defaults (``looprl.presets.continuous.models``)
    models = DDPG_MODELS
    actor_class: type[nn.Module] = DeterministicActor
    actor_outputs = 1
    #: what ALL's ``policy_model_constructor(env)`` returns, squashed into the bounds
    custom_policy = "an action's pre-activations"

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        self.action_space = require_box_actions(env, self.algorithm)
        self.obs_dim = require_flat_observations(env, self.algorithm, "continuous")
        self.check_replay_memory(env)
        self.action_dim = int(self.action_space.shape[0])
        built = constructors(hyperparameters, self.models)
        in_dim, hidden = self.obs_dim + self.action_dim, hyperparameters["hidden"]
        outputs = self.actor_outputs * self.action_dim
        actor = (mlp(self.obs_dim, outputs, hidden) if built is None
                 else self._policy_model(built, env, outputs))
        self.actor = self.actor_class(actor, self.action_space).to(device)
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

    def _policy_model(self, built: dict[str, Any], env: Any, outputs: int) -> nn.Module:
        """ALL's ``policy_model_constructor(env)``, checked to give ``outputs`` numbers (SAC's
        ``cat(mean, log variance)``, its log variance halved into the actor's log std)."""
        name = "policy_model_constructor"
        model = call_constructor(self.algorithm, name, built[name], env)
        run_checked(self.algorithm, name, built[name], model, [space_sample(env.observation_space)],
                    [(1, outputs)], self.custom_policy)
        return LogVarianceToLogStd(model) if self.actor_outputs == 2 else model

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
    # the learning rates over the budget's updates: constant, linear or cosine (ALL's)
    "lr_schedule": "constant",
    # ALL's model constructors (looprl.presets.continuous.models): None, the MLPs of `hidden`
    **dict.fromkeys(DDPG_MODELS),
}


class DDPGContinuousPreset(OffPolicyContinuousPreset):
    """Builds DDPG agents: a tanh actor and a critic over ``cat(s, a)``, both 2 x ``hidden``."""

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False,
               optimizer: bool = True) -> DDPGPolicy:
        hp = self.hyperparameters
        actor = policy_network(self, device, copy_model, self.actor)
        return DDPGPolicy(DeterministicPolicy(
            actor, adam(actor, hp["lr_actor"], optimizer), noise=hp["noise"], name="actor",
            target=PolyakTarget(hp["polyak_rate"]), logger=logger or DummyLogger(),
        ), hp["replay_start_size"])

    def trainer(self, policy: DDPGPolicy, train_steps: float = math.inf) -> DDPGTrainer:
        hp = self.hyperparameters
        return self.anneal_rates(policy, DDPGTrainer(policy, self._q(policy),
                                                     hp["discount_factor"]),
                                 replay_updates(hp, train_steps))

    def test_agent(self) -> Actor:
        """An evaluation ``Actor`` over a copy of the actor (``mu(s)``, no noise)."""
        return Actor(DDPGPolicy(DeterministicPolicy(copy.deepcopy(self.actor))), evaluation=True)


ddpg = PresetBuilder("ddpg", default_hyperparameters, DDPGContinuousPreset)


class TD3ContinuousPreset(DDPGContinuousPreset):
    """Builds TD3 agents: DDPG's actor with twin critics (2 x ``hidden`` each)."""

    algorithm = "TD3"
    agent_class = TD3
    twin = True

    def trainer(self, policy: DDPGPolicy, train_steps: float = math.inf) -> TD3Trainer:
        hp = self.hyperparameters
        target = DelayedPolyakTarget(hp["polyak_rate"], hp["policy_delay"])
        trainer = TD3Trainer(policy, self._q(policy, target), hp["discount_factor"],
                             policy_delay=hp["policy_delay"], target_noise=hp["target_noise"],
                             noise_clip=hp["noise_clip"])
        return self.anneal_rates(policy, trainer, replay_updates(hp, train_steps))


td3 = PresetBuilder("td3", derived(default_hyperparameters, policy_delay=2, target_noise=0.2,
                                   noise_clip=0.5), TD3ContinuousPreset)


class SACContinuousPreset(OffPolicyContinuousPreset):
    """Builds SAC agents: a tanh-Gaussian actor and twin critics, all 2 x ``hidden``
    (``target_entropy=None``: ``-|A|``; ``entropy_tuning=False`` keeps ``alpha`` fixed)."""

    algorithm = "SAC"
    agent_class = SAC
    twin = True
    models = SAC_MODELS
    actor_class = SoftDeterministicActor
    actor_outputs = 2
    custom_policy = "cat(mean, log variance)"
    parts = {"exploration": ("stochastic",), "buffer": ("uniform",), "update": ("sac",)}

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(env, name, device, hyperparameters)
        self.temperature = Temperature(hyperparameters["alpha"]).to(device)

    def q_names(self) -> list[str]:
        return ["q1_model_constructor", "q2_model_constructor"]

    def idle(self) -> dict[str, str]:
        """``FamilyPreset.idle``; the temperature's tuning settings, where ``alpha`` stays
        fixed."""
        tuned = self.hyperparameters["entropy_tuning"]
        return {**super().idle(), **dict.fromkeys(
            () if tuned else ("lr_temperature", "target_entropy"), "entropy_tuning=True")}

    @property
    def target_entropy(self) -> float:
        target = self.hyperparameters["target_entropy"]
        return -float(self.action_dim) if target is None else float(target)

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False,
               optimizer: bool = True) -> SACPolicy:
        hp = self.hyperparameters
        actor = policy_network(self, device, copy_model, self.actor)
        approximation = SoftDeterministicPolicy(actor, adam(actor, hp["lr_actor"], optimizer),
                                                name="actor", logger=logger or DummyLogger())
        return SACPolicy(approximation, hp["replay_start_size"])

    def trainer(self, policy: SACPolicy, train_steps: float = math.inf) -> SACTrainer:
        hp = self.hyperparameters
        temperature = self._own(policy, self.temperature)
        optimizer = adam(temperature, hp["lr_temperature"]) if hp["entropy_tuning"] else None
        temperature = Approximation(temperature, optimizer, name="temperature",
                                    logger=policy.actor.logger)
        trainer = SACTrainer(policy, self._q(policy), temperature, hp["discount_factor"],
                             target_entropy=self.target_entropy)
        # (the networks' rates, as ALL's; the temperature's stays)
        return self.anneal_rates(policy, trainer, replay_updates(hp, train_steps),
                                 skip=("temperature",))

    def test_agent(self) -> Actor:
        """An evaluation ``Actor`` over a copy of the actor (``center + scale * tanh(mean)``)."""
        return Actor(SACPolicy(SoftDeterministicPolicy(copy.deepcopy(self.actor))),
                     evaluation=True)


sac = PresetBuilder("sac", derived(
    default_hyperparameters, drop=("noise", *DDPG_MODELS), lr_temperature=1e-3, alpha=1.0,
    entropy_tuning=True, target_entropy=None, exploration="stochastic", buffer="uniform",
    update="sac", **dict.fromkeys(SAC_MODELS),
), SACContinuousPreset)
