"""PPO preset for classic control, with the rl-baselines3-zoo CartPole-v1 defaults (mean return
>= 475 within 100,000 steps), and Phasic Policy Gradient (PPG): PPO's policy phase and, every
``n_policy`` iterations, an auxiliary phase of ``aux_epochs`` passes distilling the value
targets into the policy network's auxiliary head (few, short phases work best)."""

from __future__ import annotations

import math
from typing import Any

from torch import nn

from looprl.agents.ppg import PPGTrainer
from looprl.agents.ppo import PPOTrainer
from looprl.approximation import anneal
from looprl.nn import MLP, PPGNetwork, feature_extractor
from looprl.nn.cnn import actor_critic_heads, shared_actor_critic
from looprl.policies.distributions import CategoricalHead
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.a2c import custom_classic, separate_mlps
from looprl.presets.common import (
    derived,
    require_box_observations,
    require_discrete_actions,
    require_flat_observations,
)
from looprl.presets.constructors import AC_NAMES
from looprl.presets.on_policy import EVALUATION, OnPolicyPreset

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.98, "lam": 0.8, "lr": 1e-3, "lr_schedule": "linear", "eps": 1e-5,
    "n_envs": 8, "n_steps": 32, "epochs": 20, "minibatch_size": 256, "clip": 0.2,
    "linear_clip": True, "value_coef": 0.5, "entropy_coef": 0.0, "value_clip": None,
    "clip_grad": 0.5, "hidden": 64, **EVALUATION,
    # None: separate tanh actor and critic MLPs of 2 x `hidden`; else a spec of
    # looprl.nn.feature_extractor for one body shared by a policy and a value head
    "features": None,
    # the parts of looprl.presets.parts this preset takes (PPO's own, named for configs)
    "exploration": "stochastic", "buffer": "rollout", "update": "ppo",
    # ALL's model constructors (looprl.presets.constructors): None, the network above
    **dict.fromkeys(AC_NAMES),
}


class PPOClassicControlPreset(OnPolicyPreset):
    """Builds PPO agents with separate tanh actor and critic MLPs (SB3's architecture); the
    base of every PPO-family preset (which override ``_build``, ``_wrap``, ``trainer``)."""

    algorithm = "PPO"
    parts = {"exploration": ("stochastic",), "buffer": ("rollout",), "update": ("ppo",)}

    def _build(self, env: Any) -> tuple[nn.Module, Any]:
        custom = custom_classic(self.hyperparameters, env, self.algorithm)
        if custom is not None:
            return custom
        features = self.hyperparameters.get("features")
        if features is None:
            return separate_mlps(env, self.hyperparameters["hidden"], self.algorithm)
        num_actions = require_discrete_actions(env, self.algorithm)
        shape = require_box_observations(env, self.algorithm)
        body = feature_extractor(features, shape)  # one shared body
        return shared_actor_critic(body, num_actions), CategoricalHead(num_actions)

    def trainer(self, policy: Any, train_steps: float = math.inf) -> PPOTrainer:
        return PPOTrainer(policy, **self._ppo_arguments(self.updates(train_steps)))

    def _ppo_arguments(self, updates: float) -> dict[str, Any]:
        """``PPOTrainer``'s arguments; with a known budget, ``linear_clip`` anneals the clip
        range to 0 and ``lr_schedule`` the learning rate (``FamilyPreset.lr_anneal``)."""
        hp = self.hyperparameters
        known = math.isfinite(updates)
        return dict(
            epochs=hp["epochs"], minibatch_size=hp["minibatch_size"],
            clip=anneal(hp["clip"]) if hp["linear_clip"] and known else hp["clip"],
            lr=self.lr_anneal(hp["lr"], updates),
            value_coef=hp["value_coef"], entropy_coef=hp["entropy_coef"],
            value_clip=hp["value_clip"], total_updates=updates,
            discount_factor=hp["discount_factor"], gae_lambda=hp["lam"],
        )


ppo = PresetBuilder("ppo", default_hyperparameters, PPOClassicControlPreset)


def ppg_network(obs_dim: int, num_actions: int, hidden: int) -> PPGNetwork:
    """Two-layer tanh policy trunk with logits and aux-value heads, and a tanh value MLP."""
    trunk = nn.Sequential(MLP(obs_dim, hidden, hidden=(hidden,)), nn.Tanh())
    return PPGNetwork(trunk, *actor_critic_heads(hidden, num_actions),
                      MLP(obs_dim, 1, hidden=(hidden, hidden), output_gain=1.0))


class PPGClassicControlPreset(PPOClassicControlPreset):
    """Builds PPG agents over ``n_envs`` environments."""

    algorithm = "PPG"
    parts = {**PPOClassicControlPreset.parts, "update": ("ppg",)}

    def _build(self, env: Any) -> tuple[PPGNetwork, CategoricalHead]:
        num_actions = require_discrete_actions(env, self.algorithm)
        obs_dim = require_flat_observations(env, self.algorithm)
        model = ppg_network(obs_dim, num_actions, self.hyperparameters["hidden"])
        return model, CategoricalHead(num_actions)

    def trainer(self, policy: Any, train_steps: float = math.inf) -> PPGTrainer:
        hp = self.hyperparameters
        return PPGTrainer(policy, n_policy=hp["n_policy"], aux_epochs=hp["aux_epochs"],
                          beta_clone=hp["beta_clone"], aux_minibatch_size=hp["aux_minibatch_size"],
                          **self._ppo_arguments(self.updates(train_steps)))


ppg = PresetBuilder("ppg", derived(
    default_hyperparameters, drop=("features", *AC_NAMES), n_policy=4, aux_epochs=1,
    beta_clone=1.0, aux_minibatch_size=256, update="ppg",
), PPGClassicControlPreset)
