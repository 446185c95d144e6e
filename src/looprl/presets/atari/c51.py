"""C51 preset for Atari (Bellemare et al., 2017, https://arxiv.org/abs/1707.06887).

The Nature CNN with 51 atoms per action on ``[-10, 10]`` (``nn.atari_models.nature_c51``),
DQN's replay schedule (``AtariReplayBuffer`` of 1M frames, about 7 GB when full; one update
every 4 steps after 80,000 steps; target copied every 1,000 updates), Adam at 1e-4 and
epsilon from 0.02 to 0 over 250,000 steps: the autonomous-learning-library's Atari settings.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from torch import nn

from looprl.agents.c51 import C51Policy, C51Trainer
from looprl.agents.dqn import DQNTestAgent
from looprl.approximation.q_dist import QDist
from looprl.nn.atari_models import nature_c51
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
    "initial_exploration": 0.02,
    "final_exploration": 0.0,
    "final_exploration_step": 250_000,
    "test_exploration": 0.001,
    "atoms": 51,
    "v_min": -10.0,
    "v_max": 10.0,
    "clip_grad": 0.0,
    "episodic_life": True,
    "clip_rewards": True,
    "features": "nature",
}


def require_support(hyperparameters: dict[str, Any]) -> None:
    """``ValueError`` unless ``v_min < v_max``."""
    v_min, v_max = hyperparameters["v_min"], hyperparameters["v_max"]
    if not v_min < v_max:
        raise ValueError(f"Hyperparameters v_min < v_max needed, got {v_min} and {v_max}")


class C51AtariPreset(AtariReplayPreset):
    """Builds C51 agents (counts as in ``atari.dqn``: steps are agent steps of 4 frames)."""

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(
            hyperparameters, "lr", "minibatch_size", "update_frequency", "gradient_steps",
            "target_update_frequency", "replay_buffer_size", "atoms",
        )
        require_support(hyperparameters)
        self.num_actions = require_discrete_actions(env, "C51")
        frames = require_frames(env, "C51")
        hp = hyperparameters
        self.model = nature_c51(self.num_actions, hp["atoms"], frames, hp["features"]).to(device)

    def _dist(self, model: nn.Module, **kwargs: Any) -> QDist:
        hp = self.hyperparameters
        return QDist(
            model, num_actions=self.num_actions, num_atoms=hp["atoms"],
            v_min=hp["v_min"], v_max=hp["v_max"], **kwargs,
        )

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False
               ) -> C51Policy:
        model = policy_network(self, device, copy_model)
        dist = self._dist(model, **self._approximation_args(model, logger))
        return C51Policy(dist, self.num_actions, epsilon_schedule(self.hyperparameters))

    def trainer(self, policy: C51Policy, train_steps: float = math.inf) -> C51Trainer:
        return C51Trainer(policy, self.hyperparameters["discount_factor"], self.n_step)

    def test_agent(self) -> DQNTestAgent:
        policy = C51Policy(self._dist(copy.deepcopy(self.model)), self.num_actions)
        return DQNTestAgent(policy, epsilon=self.hyperparameters["test_exploration"])


c51 = PresetBuilder("c51", default_hyperparameters, C51AtariPreset)
