"""C51 preset for classic control: DQN's replay schedule, a two-layer ReLU network and 51
atoms on ``[v_min, v_max]``."""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.nn import MLP
from looprl.nn.distributional import CategoricalQHead
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.dqn import replay_defaults
from looprl.presets.common import require_flat_observations
from looprl.presets.off_policy import QPreset

default_hyperparameters: dict[str, Any] = {
    **replay_defaults, "lr": 1e-3, "atoms": 51, "v_min": -100.0, "v_max": 100.0,
    "prioritized": False, "alpha": 0.6, "beta": 0.4,
    # ALL's model_constructor(env, atoms=atoms): logits (batch, actions * atoms) instead of
    # the hidden layers (looprl.presets.classic_control.models.fc_relu_dist_q)
    "model_constructor": None,
}


class C51ClassicControlPreset(QPreset):
    """Builds C51 agents."""

    algorithm = "C51"
    model_arguments = ("atoms",)

    def _build(self, env: Any) -> CategoricalQHead:
        hidden, atoms = self.hyperparameters["hidden"], self.hyperparameters["atoms"]
        mlp = MLP(require_flat_observations(env, self.algorithm), self.num_actions * atoms,
                  hidden=(hidden, hidden), activation=nn.ReLU)
        return CategoricalQHead(mlp, self.num_actions, atoms)


c51 = PresetBuilder("c51", default_hyperparameters, C51ClassicControlPreset)
