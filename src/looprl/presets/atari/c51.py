"""C51 preset for Atari (Bellemare et al., 2017, https://arxiv.org/abs/1707.06887): the
Nature CNN with 51 atoms per action and ``atari.dqn``'s replay schedule."""

from __future__ import annotations

from typing import Any

from looprl.nn.cnn import nature_c51
from looprl.nn.distributional import CategoricalQHead
from looprl.presets.atari.common import AtariReplayPreset, require_frames
from looprl.presets.atari.dqn import replay_defaults
from looprl.presets.builder import PresetBuilder

default_hyperparameters: dict[str, Any] = {
    **replay_defaults, "initial_exploration": 0.02, "final_exploration": 0.0, "atoms": 51,
    "v_min": -10.0, "v_max": 10.0, "features": "nature",
    # ALL's model_constructor(env, atoms=atoms) (looprl.presets.atari.models.nature_c51)
    "model_constructor": None,
}


class C51AtariPreset(AtariReplayPreset):
    """Builds C51 agents (steps count agent steps of 4 frames)."""

    algorithm = "C51"
    model_arguments = ("atoms",)

    def _build(self, env: Any) -> CategoricalQHead:
        hp = self.hyperparameters
        return nature_c51(self.num_actions, hp["atoms"], require_frames(env, self.algorithm),
                          hp["features"])


c51 = PresetBuilder("c51", default_hyperparameters, C51AtariPreset)
