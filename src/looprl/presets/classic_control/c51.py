"""C51 preset for classic control: a two-layer ReLU network with a categorical head.

DQN's replay schedule (``classic_control.dqn``) with 51 atoms on ``[v_min, v_max]``.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from torch import nn, optim

from looprl.agents.c51 import C51Policy, C51Trainer
from looprl.agents.dqn import DQNTestAgent
from looprl.approximation import FixedTarget
from looprl.approximation.q_dist import QDist
from looprl.core import DummyLogger
from looprl.nn import MLP
from looprl.nn.distributional import CategoricalQHead
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import (
    policy_network,
    require_discrete_actions,
    require_flat_observations,
    require_positive,
)
from looprl.presets.off_policy import ReplayPreset
from looprl.presets.parts import epsilon_schedule

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lr": 1e-3,
    "minibatch_size": 64,
    "update_frequency": 256,
    "gradient_steps": 128,
    "target_update_frequency": 128,
    "replay_start_size": 1000,
    "replay_buffer_size": 100_000,
    "initial_exploration": 1.0,
    "final_exploration": 0.04,
    "final_exploration_step": 8000,
    "test_exploration": 0.0,
    "hidden": 256,
    "clip_grad": 10.0,
    "atoms": 51,
    "v_min": -100.0,
    "v_max": 100.0,
    "prioritized": False,
    "alpha": 0.6,
    "beta": 0.4,
}


class C51ClassicControlPreset(ReplayPreset):
    """Builds C51 agents (hyperparameters: see ``default_hyperparameters``)."""

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(
            hyperparameters, "lr", "minibatch_size", "update_frequency", "gradient_steps",
            "target_update_frequency", "replay_buffer_size", "hidden", "atoms",
        )
        if not hyperparameters["v_min"] < hyperparameters["v_max"]:
            raise ValueError(f"v_min must be < v_max, got {hyperparameters['v_min']} and "
                             f"{hyperparameters['v_max']}")
        self.num_actions = require_discrete_actions(env, "C51")
        obs_dim = require_flat_observations(env, "C51")
        hidden, atoms = hyperparameters["hidden"], hyperparameters["atoms"]
        mlp = MLP(obs_dim, self.num_actions * atoms, hidden=(hidden, hidden), activation=nn.ReLU)
        self.model = CategoricalQHead(mlp, self.num_actions, atoms).to(device)

    def _dist(self, model: nn.Module, logger: Any = None, optimizer: Any = None, **kwargs) -> QDist:
        hp = self.hyperparameters
        return QDist(
            model, optimizer, self.num_actions, hp["atoms"], hp["v_min"], hp["v_max"],
            logger=logger, **kwargs,
        )

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False
               ) -> C51Policy:
        hp = self.hyperparameters
        model = policy_network(self, device, copy_model)
        dist = self._dist(model, logger or DummyLogger(),
                          optim.Adam(model.parameters(), lr=hp["lr"], fused=True),
                          target=FixedTarget(hp["target_update_frequency"]),
                          clip_grad=hp["clip_grad"])
        return C51Policy(dist, self.num_actions, epsilon_schedule(hp))

    def trainer(self, policy: C51Policy, train_steps: float = math.inf) -> C51Trainer:
        return C51Trainer(policy, self.hyperparameters["discount_factor"])

    def test_agent(self) -> DQNTestAgent:
        policy = C51Policy(self._dist(copy.deepcopy(self.model)), self.num_actions)
        return DQNTestAgent(policy, epsilon=self.hyperparameters["test_exploration"])


c51 = PresetBuilder("c51", default_hyperparameters, C51ClassicControlPreset)
