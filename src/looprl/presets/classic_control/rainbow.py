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
from looprl.nn import Dueling
from looprl.nn.distributional import CategoricalDueling, CategoricalQHead
from looprl.nn.noisy import NoisyFactorizedLinear
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.dqn import replay_defaults
from looprl.presets.common import require_flat_observations
from looprl.presets.off_policy import QPreset
from looprl.presets.parts import epsilon_schedule

#: the switches of Rainbow's extensions (all on) and their settings, shared with Atari's
extensions: dict[str, Any] = {
    "double": True, "dueling": True, "noisy": True, "sigma": 0.5, "n_steps": 3,
    "prioritized": True, "alpha": 0.5, "beta": 0.4, "distributional": True, "atoms": 51,
}

default_hyperparameters: dict[str, Any] = {
    **replay_defaults, "lr": 1e-3, "update_frequency": 64, "gradient_steps": 16, "hidden": 128,
    **extensions, "v_min": -100.0, "v_max": 100.0,
}


def rainbow_model(obs_dim: int, num_actions: int, hp: dict[str, Any]) -> nn.Module:
    """Torso ``Linear + ReLU`` and a (dueling, noisy, categorical) head, as ``hp`` says."""
    hidden, atoms = hp["hidden"], hp["atoms"]
    outputs = atoms if hp["distributional"] else 1

    def linear(n_in: int, n_out: int) -> nn.Module:
        if hp["noisy"]:
            return NoisyFactorizedLinear(n_in, n_out, sigma_init=hp["sigma"])
        return nn.Linear(n_in, n_out)

    def stream(n_out: int) -> nn.Module:
        return nn.Sequential(linear(hidden, hidden), nn.ReLU(), linear(hidden, n_out))

    torso = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU())
    if hp["dueling"]:
        value, advantage = stream(outputs), stream(num_actions * outputs)
        if hp["distributional"]:
            dueling = nn.Sequential(torso, CategoricalDueling(value, advantage))
            return CategoricalQHead(dueling, num_actions, atoms)
        return nn.Sequential(torso, Dueling(value, advantage))
    head = nn.Sequential(torso, stream(num_actions * outputs))
    return CategoricalQHead(head, num_actions, atoms) if hp["distributional"] else head


class RainbowClassicControlPreset(QPreset):
    """Builds Rainbow agents."""

    algorithm = "Rainbow"

    def _build(self, env: Any) -> nn.Module:
        obs_dim = require_flat_observations(env, self.algorithm)
        return rainbow_model(obs_dim, self.num_actions, self.hyperparameters)

    def _policy(self, q: Any) -> DQNPolicy:
        hp = self.hyperparameters
        return self._q_policy(q, 0.0 if hp["noisy"] else epsilon_schedule(hp))


rainbow = PresetBuilder("rainbow", default_hyperparameters, RainbowClassicControlPreset)
