"""DQN preset for classic control, with the rl-baselines3-zoo CartPole-v1 defaults.

The defaults solve CartPole-v1 (mean return >= 475) within 50,000 steps.
"""

from __future__ import annotations

import copy
from typing import Any

from torch import nn, optim

from looprl.agents.dqn import DQN, DQNPolicy, DQNTestAgent, DQNTrainer
from looprl.approximation import FixedTarget, LinearScheduler, QNetwork
from looprl.core import DummyLogger, Preset
from looprl.memory import ExperienceReplayBuffer
from looprl.nn import MLP
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import (
    require_discrete_actions,
    require_flat_observations,
    require_positive,
)

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lr": 2.3e-3,
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
    "huber": True,
}


class DQNClassicControlPreset(Preset):
    """Builds DQN agents with a two-layer ReLU Q-network.

    Hyperparameters (see ``default_hyperparameters``): ``target_update_frequency`` counts
    gradient steps; ``update_frequency`` and ``final_exploration_step`` count env steps.
    """

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(
            hyperparameters, "lr", "minibatch_size", "update_frequency", "gradient_steps",
            "target_update_frequency", "replay_buffer_size", "hidden",
        )
        self.num_actions = require_discrete_actions(env, "DQN")
        obs_dim = require_flat_observations(env, "DQN")
        hidden = hyperparameters["hidden"]
        self.model = MLP(obs_dim, self.num_actions, hidden=(hidden, hidden), activation=nn.ReLU)
        self.model = self.model.to(device)

    def _q(self, logger: Any) -> QNetwork:
        hp = self.hyperparameters
        return QNetwork(
            self.model,
            optim.Adam(self.model.parameters(), lr=hp["lr"], fused=True),
            target=FixedTarget(hp["target_update_frequency"]),
            clip_grad=hp["clip_grad"],
            logger=logger,
        )

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> DQN:
        hp = self.hyperparameters
        epsilon = LinearScheduler(
            hp["initial_exploration"],
            hp["final_exploration"],
            0,
            hp["final_exploration_step"],
            name="epsilon",
        )
        policy = DQNPolicy(self._q(logger or DummyLogger()), self.num_actions, epsilon)
        return DQN(
            policy,
            DQNTrainer(policy, hp["discount_factor"], huber=hp["huber"]),
            ExperienceReplayBuffer(hp["replay_buffer_size"], device=self.device),
            minibatch_size=hp["minibatch_size"],
            replay_start_size=hp["replay_start_size"],
            update_frequency=hp["update_frequency"],
            gradient_steps=hp["gradient_steps"],
        )

    def test_agent(self) -> DQNTestAgent:
        q = QNetwork(copy.deepcopy(self.model))
        policy = DQNPolicy(q, self.num_actions)
        return DQNTestAgent(policy, epsilon=self.hyperparameters["test_exploration"])


dqn = PresetBuilder("dqn", default_hyperparameters, DQNClassicControlPreset)
