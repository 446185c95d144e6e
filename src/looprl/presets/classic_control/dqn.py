"""The classic-control DQN family: DQN, with the rl-baselines3-zoo CartPole-v1 defaults (mean
return >= 475 within 50,000 steps), Double DQN (``ddqn``: ``update="double_q"``), C51 and
Rainbow (Hessel et al., 2018, https://arxiv.org/abs/1710.02298).

DQN's ``exploration``, ``buffer`` and ``update`` are parts chosen by name
(``looprl.presets.parts``); ``features`` takes a ``looprl.nn.feature_extractor`` spec, which
also opens the preset to image observations.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.agents.dqn import DQNPolicy
from looprl.nn import MLP, feature_extractor
from looprl.nn.cnn import linear_head, rainbow_network
from looprl.nn.distributional import CategoricalQHead
from looprl.policies import EXPLORATION, apex_epsilons
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import require_box_observations, require_flat_observations
from looprl.presets.off_policy import QPreset
from looprl.presets.parts import (
    EXPLORATION_SETTINGS,
    UPDATES,
    epsilon_schedule,
    exploration_policy,
    idle_exploration,
)

#: the replay schedule of the classic-control DQN family (C51 and Rainbow change some)
replay_defaults: dict[str, Any] = {
    "discount_factor": 0.99, "lr": 2.3e-3, "minibatch_size": 64, "update_frequency": 256,
    "gradient_steps": 128, "target_update_frequency": 128, "replay_start_size": 1000,
    "replay_buffer_size": 100_000, "initial_exploration": 1.0, "final_exploration": 0.04,
    "final_exploration_step": 8000, "test_exploration": 0.0, "hidden": 256, "clip_grad": 10.0,
    # the learning rate over the budget's updates: constant, linear or cosine (ALL's Atari)
    "lr_schedule": "constant",
}

default_hyperparameters: dict[str, Any] = {
    **replay_defaults,
    "huber": True,
    # None: two ReLU layers of `hidden` units; else a looprl.nn.feature_extractor spec
    # (e.g. "resnet" for images, {"type": "mlp", "hidden": [128, 128]}) and a linear head
    "features": None,
    # ALL's model_constructor(env) (or its import path): the network instead of hidden/features
    "model_constructor": None,
    # swappable parts (looprl.presets.parts) and their settings
    "exploration": "decaying_epsilon_greedy",
    "epsilon": 0.05,  # epsilon_greedy, ez_greedy
    "ez_mu": 2.0,
    "temperature": 1.0,  # stochastic
    "buffer": "uniform",
    "alpha": 0.6,  # prioritized
    "beta": 0.4,
    "n_steps": 3,  # nstep
    "update": "q_learning",
    # Ape-X: prioritized replay of n_steps windows, each Ray actor exploring at its own rate
    # apex_epsilons(actors)[i] instead of the exploration above (locally one actor: 0.4)
    "apex": False,
}


class DQNClassicControlPreset(QPreset):
    """Builds DQN agents with a two-layer ReLU Q-network.

    ``target_update_frequency`` counts gradient steps; ``update_frequency`` and
    ``final_exploration_step`` count env steps and, as ALL's, each episode's last state the
    policy acts on (on Ray, each actor's).
    """

    parts = {"exploration": EXPLORATION, "update": UPDATES[:3],
             "buffer": ("uniform", "prioritized", "nstep")}
    prioritized_part = "buffer='prioritized'"

    @property
    def algorithm(self) -> str:  # type: ignore[override]
        """What its refusals call it: DDQN with the double-Q update (``ddqn``), else DQN."""
        return "DDQN" if self.hyperparameters.get("update") == "double_q" else "DQN"

    def _build(self, env: Any) -> nn.Module:
        hp = self.hyperparameters
        if hp["features"] is None:
            obs_dim, hidden = require_flat_observations(env, self.algorithm), hp["hidden"]
            return MLP(obs_dim, self.num_actions, (hidden, hidden), activation=nn.ReLU)
        body = feature_extractor(hp["features"], require_box_observations(env, self.algorithm))
        return linear_head(body, self.num_actions)

    @property
    def prioritized(self) -> bool:
        return self.apex or self.hyperparameters["buffer"] == "prioritized"

    @property
    def _nstep(self) -> bool:
        return self.apex or self.hyperparameters["buffer"] == "nstep"

    @property
    def n_step(self) -> int:
        return self.hyperparameters["n_steps"] if self._nstep else 1

    def idle(self) -> dict[str, str]:
        nstep = {} if self._nstep else {"n_steps": "buffer='nstep'"}
        return {**super().idle(), **nstep, **idle_exploration(self.hyperparameters)}

    def _policy(self, q: Any) -> DQNPolicy:
        """The exploring policy (Ape-X's rate, or the ``exploration`` policy), evaluating at
        ``test_exploration`` as the test agent does."""
        if self.apex:  # one actor here; on Ray each actor's rate overrides it
            return self._q_policy(q, apex_epsilons(1)[0])
        exploration = exploration_policy(self.hyperparameters, q, self.num_actions, self.name)
        return DQNPolicy(q, self.num_actions, exploration=exploration,
                         evaluation_epsilon=self.hyperparameters.get("test_exploration", 0.0))


dqn = PresetBuilder("dqn", default_hyperparameters, DQNClassicControlPreset)
ddqn = PresetBuilder("ddqn", {**default_hyperparameters, "update": "double_q"},
                     DQNClassicControlPreset)


class C51ClassicControlPreset(QPreset):
    """Builds C51 agents: DQN's replay schedule, a two-layer ReLU network and 51 atoms on
    ``[v_min, v_max]``."""

    algorithm = "C51"
    model_arguments = ("atoms",)

    def _build(self, env: Any) -> CategoricalQHead:
        hidden, atoms = self.hyperparameters["hidden"], self.hyperparameters["atoms"]
        mlp = MLP(require_flat_observations(env, self.algorithm), self.num_actions * atoms,
                  hidden=(hidden, hidden), activation=nn.ReLU)
        return CategoricalQHead(mlp, self.num_actions, atoms)


c51 = PresetBuilder("c51", {
    **replay_defaults, "lr": 1e-3, "atoms": 51, "v_min": -100.0, "v_max": 100.0,
    "prioritized": False, "alpha": 0.6, "beta": 0.4,
    # ALL's model_constructor(env, atoms=atoms) (models.fc_relu_dist_q)
    "model_constructor": None,
}, C51ClassicControlPreset)

#: the switches of Rainbow's extensions (all on) and their settings, shared with Atari's
extensions: dict[str, Any] = {
    "double": True, "dueling": True, "noisy": True, "sigma": 0.5, "n_steps": 3,
    "prioritized": True, "alpha": 0.5, "beta": 0.4, "distributional": True, "atoms": 51,
}


def rainbow_model(obs_dim: int, num_actions: int, hp: dict[str, Any]) -> nn.Module:
    """``rainbow_network`` (as ``hp`` says) on a torso ``Linear + ReLU`` of ``hidden`` units,
    its layers without noise ``nn.Linear``'s own initialization."""
    hidden = hp["hidden"]
    torso = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU())
    return rainbow_network(torso, hidden, num_actions, hp["atoms"], hidden, hp["sigma"],
                           dueling=hp["dueling"], noisy=hp["noisy"],
                           distributional=hp["distributional"], orthogonal=False)


class RainbowClassicControlPreset(QPreset):
    """Builds Rainbow agents: each of DQN's six extensions has a switch (all on by default),
    ``double``, ``dueling``, ``noisy`` (noisy nets, epsilon 0), ``n_steps`` (1: off),
    ``prioritized`` and ``distributional`` (``QDist``, ``C51Trainer``)."""

    algorithm = "Rainbow"
    model_arguments = ("atoms", "sigma")

    def _build(self, env: Any) -> nn.Module:
        obs_dim = require_flat_observations(env, self.algorithm)
        return rainbow_model(obs_dim, self.num_actions, self.hyperparameters)

    def _policy(self, q: Any) -> DQNPolicy:
        hp = self.hyperparameters
        return self._q_policy(q, 0.0 if hp["noisy"] else epsilon_schedule(hp))

    def idle(self) -> dict[str, str]:
        """``QPreset.idle``; with noisy nets (epsilon 0) the epsilon schedule's settings."""
        keys = EXPLORATION_SETTINGS["decaying_epsilon_greedy"]
        return {**super().idle(), **dict.fromkeys(keys if self.hyperparameters["noisy"] else (),
                                                  "noisy=False (noisy nets explore instead)")}


rainbow = PresetBuilder("rainbow", {
    **replay_defaults, "lr": 1e-3, "eps": 1e-8, "update_frequency": 64, "gradient_steps": 16,
    "hidden": 128, **extensions, "v_min": -100.0, "v_max": 100.0,
    # ALL's model_constructor(env, atoms=atoms, sigma=sigma) (models.fc_relu_rainbow)
    "model_constructor": None,
}, RainbowClassicControlPreset)
