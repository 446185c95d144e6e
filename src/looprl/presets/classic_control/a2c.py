"""The classic-control presets of separate tanh actor and critic MLPs: A2C (8 environments x 5
steps per update, n-step advantages; CartPole-v1 passes 195 within 10,000 steps), VAC (one
update per step; ``lr_pi = 1e-3`` collapses on CartPole-v1, ``5e-4`` reaches 500 within 90,000
steps) and VPG (REINFORCE with a baseline: one environment, an update per ``min_batch_size``
steps of complete episodes)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import optim

from looprl.agents.a2c import A2CTrainer
from looprl.agents.vac import VACTrainer
from looprl.agents.vpg import VPG
from looprl.core.preset import check_train_steps
from looprl.nn import MLP, ActorCritic, SharedActorCritic
from looprl.policies.distributions import CategoricalHead
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import (
    check_memory,
    require_discrete_actions,
    require_flat_observations,
)
from looprl.presets.constructors import AC_NAMES, CLASSIC_AC, custom_actor_critic
from looprl.presets.on_policy import EVALUATION, ActorCriticPreset, OnPolicyPreset

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99, "lam": 1.0, "lr": 1e-3, "eps": 1e-5, "n_envs": 8, "n_steps": 5,
    "value_coef": 0.5, "entropy_coef": 0.0, "normalize_advantages": False, "clip_grad": 0.5,
    "hidden": 64, "lr_schedule": "constant", **EVALUATION,
    # ALL's model constructors (looprl.presets.constructors): None, the MLPs of `hidden`
    **dict.fromkeys(AC_NAMES),
}


def separate_mlps(env: Any, hidden: int, algorithm: str) -> tuple[ActorCritic, CategoricalHead]:
    """Two-layer tanh actor and critic MLPs of ``hidden`` units for ``env`` (checked: flat
    observations, discrete actions) and the categorical action head."""
    num_actions = require_discrete_actions(env, algorithm)
    obs_dim = require_flat_observations(env, algorithm)
    actor = MLP(obs_dim, num_actions, hidden=(hidden, hidden), output_gain=0.01)
    critic = MLP(obs_dim, 1, hidden=(hidden, hidden), output_gain=1.0)
    return ActorCritic(actor, critic), CategoricalHead(num_actions)


def custom_classic(hp: Any, env: Any, algorithm: str
                   ) -> tuple[SharedActorCritic, CategoricalHead] | None:
    """The network of ALL's feature, value and policy model constructors (ALL's classic-control
    calls) and the categorical head, ``None`` where ``hp`` gives none."""
    num_actions = require_discrete_actions(env, algorithm)
    model = custom_actor_critic(algorithm, hp, env, CLASSIC_AC, num_actions)
    return None if model is None else (model, CategoricalHead(num_actions))


class SeparateMLPs:
    """``_build``, ``_optimizer`` and ``trainer`` of the A2C, VAC and VPG presets:
    ``separate_mlps``; Adam with the actor's and critic's learning rates (``lr_keys``) as
    two parameter groups; ``trainer_class`` with ``gae_lambda`` = ``lam``."""

    algorithm: str
    hyperparameters: dict[str, Any]
    lr_keys: tuple[str, str] = ("lr_pi", "lr_v")
    trainer_class: type[A2CTrainer] = A2CTrainer
    #: ``gae_lambda`` without a ``lam`` hyperparameter (1: Monte-Carlo advantages)
    gae_lambda = 1.0

    def trainer(self, policy: Any, train_steps: float = math.inf) -> A2CTrainer:
        """``trainer_class``; its rates (the actor's, the critic's in proportion) anneal as
        ``lr_schedule`` says over the budget's ``updates``."""
        hp = self.hyperparameters
        updates = self.updates(train_steps)
        return self.trainer_class(
            policy, value_coef=hp["value_coef"], entropy_coef=hp["entropy_coef"],
            normalize_advantages=hp["normalize_advantages"],
            discount_factor=hp["discount_factor"], gae_lambda=hp.get("lam", self.gae_lambda),
            total_updates=updates, lr=self.lr_anneal(hp[self.lr_keys[0]], updates))

    def _build(self, env: Any) -> tuple[ActorCritic | SharedActorCritic, CategoricalHead]:
        return (custom_classic(self.hyperparameters, env, self.algorithm)
                or separate_mlps(env, self.hyperparameters["hidden"], self.algorithm))

    def _optimizer(self, model: ActorCritic | SharedActorCritic) -> torch.optim.Optimizer:
        hp = self.hyperparameters
        if isinstance(model, SharedActorCritic):
            policy = [*model.body.parameters(), *model.policy_head.parameters()]
            value = model.value_head.parameters()
        else:
            policy, value = model.actor.parameters(), model.critic.parameters()
        groups = [{"params": policy, "lr": hp[self.lr_keys[0]]},
                  {"params": value, "lr": hp[self.lr_keys[1]]}]
        return optim.Adam(groups, eps=hp["eps"], fused=True)


class A2CClassicControlPreset(SeparateMLPs, OnPolicyPreset):
    """Builds A2C agents over ``n_envs`` environments."""

    algorithm = "A2C"
    lr_keys = ("lr", "lr")


a2c = PresetBuilder("a2c", default_hyperparameters, A2CClassicControlPreset)


class VACClassicControlPreset(SeparateMLPs, OnPolicyPreset):
    """Builds online actor-critic agents over ``n_envs`` environments (one-step segments)."""

    algorithm = "VAC"
    trainer_class = VACTrainer
    gae_lambda = 0.0


vac = PresetBuilder("vac", {
    "discount_factor": 0.98, "lr_pi": 5e-4, "lr_v": 1e-2, "eps": 1e-5, "n_envs": 16,
    "value_coef": 0.5, "entropy_coef": 0.0, "normalize_advantages": False, "clip_grad": 0.0,
    "hidden": 64, "lr_schedule": "constant", **EVALUATION, **dict.fromkeys(AC_NAMES),
}, VACClassicControlPreset)


class VPGClassicControlPreset(SeparateMLPs, ActorCriticPreset):
    """Builds VPG agents for a single environment (Monte-Carlo advantages)."""

    algorithm = "VPG"

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(env, name, device, hyperparameters)  # (its ranges checked first)
        check_memory(name, self.hyperparameters["min_batch_size"] + 1, "min_batch_size + 1",
                     env, "lower min_batch_size")

    def learning(self, train_steps: float, actors: int = 1, trainers: int = 1
                 ) -> dict[str, Any]:
        """Each actor stream's segment ends at the first episode end after
        ``min_batch_size`` steps, and the trainer steps on each alone."""
        return {"buffer": "on_policy", "buffer_args": {"batch_streams": 1},
                "whole_episodes": True,
                "segment_length": self.hyperparameters["min_batch_size"]}

    def updates(self, train_steps: float) -> float:
        """Trainer steps in ``train_steps`` env steps (about one per ``min_batch_size``)."""
        return train_steps / self.hyperparameters["min_batch_size"]

    def agent(self, logger: Any = None, train_steps: float = math.inf) -> VPG:
        check_train_steps(train_steps, self.name)
        policy = self.policy(logger)
        return self._wrap(VPG(policy, self.trainer(policy, train_steps),
                              min_batch_size=self.hyperparameters["min_batch_size"],
                              logger=logger))


vpg = PresetBuilder("vpg", {
    "discount_factor": 0.99, "lr_pi": 3e-3, "lr_v": 5e-3, "eps": 1e-5,
    "min_batch_size": 500, "value_coef": 0.5, "entropy_coef": 0.0,
    "normalize_advantages": True, "clip_grad": 0.5, "hidden": 64, "lr_schedule": "constant",
    **EVALUATION, **dict.fromkeys(AC_NAMES),
}, VPGClassicControlPreset)
