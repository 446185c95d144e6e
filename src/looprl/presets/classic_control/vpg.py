"""Vanilla policy gradient (REINFORCE with a baseline) preset for classic control: separate
tanh actor and critic MLPs, one environment, an update per ``min_batch_size`` steps of
complete episodes."""

from __future__ import annotations

import math
from typing import Any

from looprl.agents.vpg import VPG
from looprl.core.preset import check_train_steps
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.a2c import SeparateMLPs
from looprl.presets.common import check_memory
from looprl.presets.constructors import AC_NAMES, unset
from looprl.presets.on_policy import ActorCriticPreset

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99, "lr_pi": 3e-3, "lr_v": 5e-3, "eps": 1e-5,
    "min_batch_size": 500, "value_coef": 0.5, "entropy_coef": 0.0,
    "normalize_advantages": True, "clip_grad": 0.5, "hidden": 64, **unset(AC_NAMES),
}


class VPGClassicControlPreset(SeparateMLPs, ActorCriticPreset):
    """Builds VPG agents for a single environment (Monte-Carlo advantages)."""

    algorithm = "VPG"

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(env, name, device, hyperparameters)  # (its ranges checked first)
        check_memory(name, self.hyperparameters["min_batch_size"] + 1, "min_batch_size + 1",
                     env, "lower min_batch_size")

    def learning(self, train_steps: float, actors: int = 1, trainers: int = 1
                 ) -> dict[str, Any]:
        """Each actor stream's segment ends at the first episode end after
        ``min_batch_size`` steps, and the trainer steps on each alone."""
        return {"buffer": "on_policy", "buffer_args": {"batch_streams": 1},
                "whole_episodes": True,
                "segment_length": self.hyperparameters["min_batch_size"]}

    def agent(self, logger: Any = None, train_steps: float = math.inf) -> VPG:
        check_train_steps(train_steps, self.name)
        policy = self.policy(logger)
        return self._wrap(VPG(policy, self.trainer(policy, train_steps),
                              min_batch_size=self.hyperparameters["min_batch_size"],
                              logger=logger))


vpg = PresetBuilder("vpg", default_hyperparameters, VPGClassicControlPreset)
