"""VQN preset for Atari: online Q-learning over 64 parallel environments, no replay
(Watkins, 1989; the autonomous-learning-library's VQN).

The library's Atari settings: a dueling Nature network (``nn.cnn.nature_dueling_dqn``), Adam
at 1e-3 (eps 1.5e-4), 64 environments whose batch of transitions is learned from at every
step, no target network (``target_update_frequency`` > 0 adds one, copied every that many
updates) and epsilon from 1 to 0.01. Epsilon anneals over ``final_exploration_step``
batched steps: 4,000 steps of 64 environments are 256,000 environment steps (1M frames),
DQN's schedule.
"""

from __future__ import annotations

import copy
from typing import Any

from torch import optim

from looprl.agents.dqn import DQNPolicy, DQNTestAgent, DQNTrainer
from looprl.agents.vqn import VQN
from looprl.approximation import FixedTarget, LinearScheduler, QNetwork
from looprl.core import DummyLogger, ParallelPreset
from looprl.nn.cnn import nature_dueling_dqn
from looprl.presets.atari.common import DeepMindBody, require_frames
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import require_discrete_actions, require_positive

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lr": 1e-3,
    "eps": 1.5e-4,
    "n_envs": 64,
    "initial_exploration": 1.0,
    "final_exploration": 0.01,
    "final_exploration_step": 4000,
    "test_exploration": 0.001,
    "target_update_frequency": 0,
    "clip_grad": 0.0,
    "huber": True,
    "episodic_life": True,
    "clip_rewards": True,
}


class OnlineAtariPreset(DeepMindBody, ParallelPreset):
    """Shared by the Atari VQN and VSarsa presets: a dueling Nature Q-network over
    ``n_envs`` environments."""

    algorithm = "VQN"

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(hyperparameters, "lr", "n_envs")
        self.n_envs = hyperparameters["n_envs"]
        self.num_actions = require_discrete_actions(env, self.algorithm)
        frames = require_frames(env, self.algorithm)
        self.model = nature_dueling_dqn(self.num_actions, frames).to(device)

    def _policy(self, logger: Any) -> DQNPolicy:
        hp = self.hyperparameters
        frequency = hp["target_update_frequency"]
        q = QNetwork(
            self.model,
            optim.Adam(self.model.parameters(), lr=hp["lr"], eps=hp["eps"], fused=True),
            clip_grad=hp["clip_grad"],
            target=FixedTarget(frequency) if frequency else None,
            logger=logger or DummyLogger(),
        )
        epsilon = LinearScheduler(
            hp["initial_exploration"], hp["final_exploration"], 0,
            hp["final_exploration_step"], name="epsilon",
        )
        return DQNPolicy(q, self.num_actions, epsilon)

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Any:
        hp = self.hyperparameters
        policy = self._policy(logger)
        return self._wrap(VQN(policy, DQNTrainer(policy, hp["discount_factor"], huber=hp["huber"])))

    def test_agent(self) -> DQNTestAgent:
        policy = DQNPolicy(QNetwork(copy.deepcopy(self.model)), self.num_actions)
        return DQNTestAgent(policy, epsilon=self.hyperparameters["test_exploration"])

    def parallel_test_agent(self) -> DQNTestAgent:
        return self.test_agent()


vqn = PresetBuilder("vqn", default_hyperparameters, OnlineAtariPreset)
