"""DQN preset for classic control, with the rl-baselines3-zoo CartPole-v1 defaults.

The defaults solve CartPole-v1 (mean return >= 475) within 50,000 steps.

Its parts are chosen by name (``looprl.presets.parts``): ``exploration`` (any of
``EXPLORATION``), ``buffer`` (``uniform``, ``prioritized``, ``nstep``) and ``update``
(``q_learning``, ``double_q``, ``clipped_double_q``), e.g.
``dqn.hyperparameters(exploration="ez_greedy", buffer="prioritized", update="double_q")``.
The network's body is configurable too: ``features`` takes a ``looprl.nn.feature_extractor``
spec (MLP, CNN, ResNet or a combination), which also opens the preset to image observations.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from torch import nn, optim

from looprl.agents.dqn import DQNPolicy, DQNTestAgent, DQNTrainer
from looprl.approximation import FixedTarget, QNetwork
from looprl.core import DummyLogger
from looprl.nn import MLP, feature_extractor, orthogonal_init
from looprl.policies import EXPLORATION, apex_epsilons
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import (
    policy_network,
    require_discrete_actions,
    require_flat_observations,
    require_positive,
)
from looprl.presets.off_policy import ReplayPreset
from looprl.presets.parts import UPDATES, choose, exploration_policy

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
    # None: two ReLU layers of `hidden` units; else a spec of looprl.nn.feature_extractor
    # (e.g. "resnet" for images, {"type": "mlp", "hidden": [128, 128]}) and a linear head
    "features": None,
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


class DQNClassicControlPreset(ReplayPreset):
    """Builds DQN agents with a two-layer ReLU Q-network.

    Hyperparameters (see ``default_hyperparameters``): ``target_update_frequency`` counts
    gradient steps; ``update_frequency`` and ``final_exploration_step`` count env steps (on
    Ray, the schedule counts each actor's steps, one per step of all its envs).
    """

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(
            hyperparameters, "lr", "minibatch_size", "update_frequency", "gradient_steps",
            "target_update_frequency", "replay_buffer_size", "hidden", "n_steps",
        )
        choose("exploration", hyperparameters["exploration"], EXPLORATION, name)
        choose("buffer", hyperparameters["buffer"], ("uniform", "prioritized", "nstep"), name)
        choose("update", hyperparameters["update"], UPDATES[:3], name)
        self.num_actions = require_discrete_actions(env, "DQN")
        features = hyperparameters["features"]
        if features is None:
            obs_dim = require_flat_observations(env, "DQN")
            hidden = hyperparameters["hidden"]
            self.model = MLP(obs_dim, self.num_actions, (hidden, hidden), activation=nn.ReLU)
        else:
            body = feature_extractor(features, env.observation_space.shape)
            head = orthogonal_init(nn.Linear(body.out_features, self.num_actions), 1.0)
            self.model = nn.Sequential(body, head)
        self.model = self.model.to(device)

    @property
    def prioritized(self) -> bool:
        return self.apex or self.hyperparameters["buffer"] == "prioritized"

    @property
    def n_step(self) -> int:
        hp = self.hyperparameters
        return hp["n_steps"] if self.apex or hp["buffer"] == "nstep" else 1

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False
               ) -> DQNPolicy:
        hp = self.hyperparameters
        model = policy_network(self, device, copy_model)
        q = QNetwork(model, optim.Adam(model.parameters(), lr=hp["lr"], fused=True),
                     target=FixedTarget(hp["target_update_frequency"]),
                     clip_grad=hp["clip_grad"], logger=logger or DummyLogger())
        if self.apex:  # one actor here; on Ray each actor's rate overrides it
            return DQNPolicy(q, self.num_actions, apex_epsilons(1)[0])
        exploration = exploration_policy(hp, q, self.num_actions, self.name)
        return DQNPolicy(q, self.num_actions, exploration=exploration)

    def trainer(self, policy: DQNPolicy, train_steps: float = math.inf) -> DQNTrainer:
        hp = self.hyperparameters
        return DQNTrainer(policy, hp["discount_factor"], self.n_step, update=hp["update"],
                          huber=hp["huber"])

    def test_agent(self) -> DQNTestAgent:
        q = QNetwork(copy.deepcopy(self.model))
        policy = DQNPolicy(q, self.num_actions)
        return DQNTestAgent(policy, epsilon=self.hyperparameters["test_exploration"])


dqn = PresetBuilder("dqn", default_hyperparameters, DQNClassicControlPreset)
