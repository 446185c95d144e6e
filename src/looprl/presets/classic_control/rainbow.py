"""Rainbow preset for classic control (Hessel et al., 2018, https://arxiv.org/abs/1710.02298).

Each of DQN's six extensions has a switch (all on by default): ``double`` (double-Q
targets), ``dueling``, ``noisy`` (noisy nets, epsilon 0), ``n_steps`` (1: off),
``prioritized`` and ``distributional`` (``QDist``, ``C51Trainer``). The network is a ReLU
layer and (dueling) heads of ``hidden`` units.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.agents.dqn import DQNPolicy
from looprl.nn.cnn import rainbow_network
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.dqn import replay_defaults
from looprl.presets.common import require_flat_observations
from looprl.presets.off_policy import QPreset
from looprl.presets.parts import EXPLORATION_SETTINGS, epsilon_schedule

#: the switches of Rainbow's extensions (all on) and their settings, shared with Atari's
extensions: dict[str, Any] = {
    "double": True, "dueling": True, "noisy": True, "sigma": 0.5, "n_steps": 3,
    "prioritized": True, "alpha": 0.5, "beta": 0.4, "distributional": True, "atoms": 51,
}

default_hyperparameters: dict[str, Any] = {
    **replay_defaults, "lr": 1e-3, "eps": 1e-8, "update_frequency": 64, "gradient_steps": 16,
    "hidden": 128, **extensions, "v_min": -100.0, "v_max": 100.0,
    # ALL's model_constructor(env, atoms=atoms, sigma=sigma): logits (batch, actions * atoms)
    # instead of the hidden layers (looprl.presets.classic_control.models.fc_relu_rainbow)
    "model_constructor": None,
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
    """Builds Rainbow agents."""

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


rainbow = PresetBuilder("rainbow", default_hyperparameters, RainbowClassicControlPreset)
