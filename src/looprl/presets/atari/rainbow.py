"""Rainbow preset for Atari (Hessel et al., 2018, https://arxiv.org/abs/1710.02298).

The autonomous-learning-library's Atari settings: a dueling, noisy (sigma_0 = 0.5),
distributional (51 atoms on ``[-10, 10]``) Nature network (``nn.atari_models.nature_rainbow``),
double-Q targets, 3-step returns, prioritized replay (alpha 0.5, beta 0.5 annealed to 1),
Adam at 6.25e-5 (eps 1.5e-4), one update every 4 steps after 80,000 steps, a target network
copied every 1,000 updates and epsilon from 0.02 to 0 over 250,000 steps on top of the
noise. Every extension has its switch (``double``, ``dueling``, ``noisy``, ``n_steps``,
``prioritized``, ``distributional``), as in ``classic_control.rainbow``.

**Memory.** Replay is the frame ring of ``AtariReplayPreset.replay_buffer``:
``PrioritizedAtariReplayBuffer`` (or ``AtariReplayBuffer`` with ``prioritized=False``), which
stores each frame once and computes the n-step returns when sampling, about 7 KB per
transition. The default ``replay_buffer_size`` is the paper's 1,000,000 (about 7 GB of CPU
memory when full, allocated lazily).
"""

from __future__ import annotations

import copy
import math
from typing import Any

from torch import nn

from looprl.agents.dqn import DQNPolicy, DQNTestAgent
from looprl.agents.rainbow import rainbow_policy, rainbow_trainer
from looprl.approximation import QNetwork
from looprl.approximation.q_dist import QDist
from looprl.core import Trainer
from looprl.nn.atari_models import nature_rainbow
from looprl.presets.atari.c51 import require_support
from looprl.presets.atari.common import AtariReplayPreset, require_frames
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import policy_network, require_discrete_actions, require_positive
from looprl.presets.parts import epsilon_schedule

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lr": 6.25e-5,
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
    "clip_grad": 0.0,
    "huber": True,
    "hidden": 512,
    "double": True,
    "dueling": True,
    "noisy": True,
    "sigma": 0.5,
    "n_steps": 3,
    "prioritized": True,
    "alpha": 0.5,
    "beta": 0.5,
    "distributional": True,
    "atoms": 51,
    "v_min": -10.0,
    "v_max": 10.0,
    "episodic_life": True,
    "clip_rewards": True,
}


class RainbowAtariPreset(AtariReplayPreset):
    """Builds Rainbow agents (steps count agent steps of 4 frames, as in ``atari.dqn``)."""

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(
            hyperparameters, "lr", "minibatch_size", "update_frequency", "gradient_steps",
            "target_update_frequency", "replay_buffer_size", "hidden", "atoms", "n_steps",
        )
        require_support(hyperparameters)
        self.num_actions = require_discrete_actions(env, "Rainbow")
        frames = require_frames(env, "Rainbow")
        hp = hyperparameters
        model = nature_rainbow(
            self.num_actions, hp["atoms"], frames, hp["hidden"], hp["sigma"],
            dueling=hp["dueling"], noisy=hp["noisy"], distributional=hp["distributional"],
        )
        self.model = model.to(device)

    def _q(self, model: nn.Module, **kwargs: Any) -> QDist | QNetwork:
        hp = self.hyperparameters
        if hp["distributional"]:
            return QDist(
                model, num_actions=self.num_actions, num_atoms=hp["atoms"],
                v_min=hp["v_min"], v_max=hp["v_max"], **kwargs,
            )
        return QNetwork(model, **kwargs)

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False
               ) -> DQNPolicy:
        model = policy_network(self, device, copy_model)
        q = self._q(model, **self._approximation_args(model, logger))
        return rainbow_policy(q, self.num_actions, epsilon_schedule(self.hyperparameters))

    def trainer(self, policy: DQNPolicy, train_steps: float = math.inf) -> Trainer:
        hp = self.hyperparameters
        return rainbow_trainer(policy, hp["discount_factor"], double=hp["double"],
                               huber=hp["huber"], n_step=self.n_step)

    def test_agent(self) -> DQNTestAgent:
        policy = rainbow_policy(self._q(copy.deepcopy(self.model)), self.num_actions)
        return DQNTestAgent(policy, epsilon=self.hyperparameters["test_exploration"])


rainbow = PresetBuilder("rainbow", default_hyperparameters, RainbowAtariPreset)
