"""VQN preset for classic control: online Q-learning over ``n_envs`` parallel environments,
without replay (the autonomous-learning-library's VQN).

Each step of the ``n_envs`` environments is one batch. A target network (every
``target_update_frequency`` updates; without one it diverges on CartPole), a linear
``lr_schedule`` and
a short horizon (0.95) keep the online updates stable. VSarsa (``vsarsa``) takes SARSA's
on-policy target ``Q(s', a')`` of the action taken next, with more cautious settings.
"""

from __future__ import annotations

import math
from typing import Any

from torch import nn

from looprl.agents.dqn import DQNPolicy, DQNTrainer
from looprl.nn import MLP
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import derived, require_flat_observations
from looprl.presets.off_policy import QNetworkPreset
from looprl.presets.on_policy import OnPolicyAgentPreset
from looprl.presets.parts import epsilon_schedule

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.95, "lr": 1e-3, "eps": 1e-5, "n_envs": 16, "initial_exploration": 1.0,
    "final_exploration": 0.02, "final_exploration_step": 32_000, "test_exploration": 0.0,
    "hidden": 64, "target_update_frequency": 25, "lr_schedule": "linear", "clip_grad": 10.0,
    "huber": True,
    # ALL's model_constructor(env): the network instead of hidden's (models.dueling_fc_relu_q)
    "model_constructor": None,
}


class OnlineClassicControlPreset(OnPolicyAgentPreset, QNetworkPreset):
    """The VQN and VSarsa presets: a two-layer ReLU Q-network over ``n_envs`` environments
    (``target_update_frequency`` 0: no target network)."""

    algorithm = "VQN"
    #: the bootstrap value of the trainer (``looprl.agents.dqn.UPDATES``)
    update = "q_learning"

    def _build(self, env: Any) -> nn.Module:
        obs_dim = require_flat_observations(env, self.algorithm)
        hidden = self.hyperparameters["hidden"]
        return MLP(obs_dim, self.num_actions, hidden=(hidden, hidden), activation=nn.ReLU)

    def _policy(self, q: Any) -> DQNPolicy:
        """The exploring policy over ``q``: epsilon reaches ``final_exploration`` after
        ``final_exploration_step`` frames, as ALL's (its schedule moves once per batched step
        of the ``n_envs`` copies: ``final_exploration_step / n_envs`` of them)."""
        hp = self.hyperparameters
        steps = hp["final_exploration_step"] / self.n_envs
        return self._q_policy(q, epsilon_schedule({**hp, "final_exploration_step": steps}))

    def trainer(self, policy: DQNPolicy, train_steps: float = math.inf) -> DQNTrainer:
        """One-step ``update`` on each ``[2, n_envs]`` batch; the learning rate anneals as
        ``lr_schedule`` says over the ``train_steps / n_envs`` updates of the budget."""
        hp = self.hyperparameters
        trainer = DQNTrainer(policy, hp["discount_factor"], update=self.update,
                             huber=hp["huber"])
        return self.anneal_rates(policy, trainer, self.updates(train_steps))


vqn = PresetBuilder("vqn", default_hyperparameters, OnlineClassicControlPreset)


class VSarsaClassicControlPreset(OnlineClassicControlPreset):
    """Builds VSarsa agents."""

    algorithm = "VSarsa"
    update = "sarsa"


vsarsa = PresetBuilder("vsarsa", derived(
    default_hyperparameters, discount_factor=0.9, n_envs=32, lr=5e-4, final_exploration=0.05,
    final_exploration_step=128_000, lr_schedule="constant", target_update_frequency=50,
), VSarsaClassicControlPreset)
