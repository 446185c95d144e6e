"""Phasic Policy Gradient (PPG) preset for classic control: the PPO preset's policy phase and,
every ``n_policy`` iterations, an auxiliary phase of ``aux_epochs`` passes distilling the value
targets into the policy network's auxiliary head (few, short phases work best)."""

from __future__ import annotations

import math
from typing import Any

from torch import nn

from looprl.agents.ppg import PPGTrainer
from looprl.nn import MLP, PPGNetwork
from looprl.nn.cnn import actor_critic_heads
from looprl.policies.distributions import CategoricalHead
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.ppo import PPOClassicControlPreset
from looprl.presets.classic_control.ppo import default_hyperparameters as ppo_defaults
from looprl.presets.common import derived, require_discrete_actions, require_flat_observations
from looprl.presets.constructors import AC_NAMES

default_hyperparameters: dict[str, Any] = derived(
    ppo_defaults, drop=("features", *AC_NAMES), n_policy=4, aux_epochs=1, beta_clone=1.0,
    aux_minibatch_size=256, update="ppg",
)


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


ppg = PresetBuilder("ppg", default_hyperparameters, PPGClassicControlPreset)
