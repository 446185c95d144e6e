"""DQN preset for Atari (Mnih et al., 2015, https://www.nature.com/articles/nature14236).

The Nature CNN over 4 stacked 84x84 frames, a 1M-frame ``AtariReplayBuffer`` (uint8 frames
stored once: about 7 GB when full), Adam at 1e-4, a target network copied every 1,000
updates, one update every 4 steps after 80,000 steps, and epsilon annealed from 1 to 0.01
over 250,000 steps (1M frames): the autonomous-learning-library's Atari settings.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from looprl.agents.dqn import DQNPolicy, DQNTestAgent, DQNTrainer
from looprl.approximation import QNetwork
from looprl.nn.cnn import nature_dqn
from looprl.presets.atari.common import AtariReplayPreset, require_frames
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import policy_network, require_discrete_actions, require_positive
from looprl.presets.parts import epsilon_schedule

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lr": 1e-4,
    "eps": 1.5e-4,
    "minibatch_size": 32,
    "update_frequency": 4,
    "gradient_steps": 1,
    "target_update_frequency": 1000,
    "replay_start_size": 80_000,
    "replay_buffer_size": 1_000_000,
    "initial_exploration": 1.0,
    "final_exploration": 0.01,
    "final_exploration_step": 250_000,
    "test_exploration": 0.001,
    "clip_grad": 0.0,
    "huber": True,
    "episodic_life": True,
    "clip_rewards": True,
    "features": "nature",
}


class DQNAtariPreset(AtariReplayPreset):
    """Builds DQN agents with the Nature CNN.

    ``target_update_frequency`` counts gradient steps; ``update_frequency``,
    ``replay_start_size`` and ``final_exploration_step`` count agent steps (4 frames each).
    ``episodic_life`` and ``clip_rewards`` configure the training agent's body.
    """

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(
            hyperparameters, "lr", "minibatch_size", "update_frequency", "gradient_steps",
            "target_update_frequency", "replay_buffer_size",
        )
        self.num_actions = require_discrete_actions(env, "DQN")
        frames = require_frames(env, "DQN")
        model = nature_dqn(self.num_actions, frames, features=hyperparameters["features"])
        self.model = model.to(device)

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False
               ) -> DQNPolicy:
        model = policy_network(self, device, copy_model)
        q = QNetwork(model, **self._approximation_args(model, logger))
        return DQNPolicy(q, self.num_actions, epsilon_schedule(self.hyperparameters))

    def trainer(self, policy: DQNPolicy, train_steps: float = math.inf) -> DQNTrainer:
        hp = self.hyperparameters
        return DQNTrainer(policy, hp["discount_factor"], self.n_step, huber=hp["huber"])

    def test_agent(self) -> DQNTestAgent:
        policy = DQNPolicy(QNetwork(copy.deepcopy(self.model)), self.num_actions)
        return DQNTestAgent(policy, epsilon=self.hyperparameters["test_exploration"])


dqn = PresetBuilder("dqn", default_hyperparameters, DQNAtariPreset)
