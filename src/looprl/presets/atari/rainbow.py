"""Rainbow preset for Atari (Hessel et al., 2018, https://arxiv.org/abs/1710.02298) over
``atari.dqn``'s frame ring, with ``classic_control.rainbow``'s switches."""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.nn.cnn import nature_rainbow
from looprl.presets.atari.common import AtariReplayPreset, require_frames
from looprl.presets.atari.dqn import replay_defaults
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.rainbow import extensions

default_hyperparameters: dict[str, Any] = {
    **replay_defaults, "lr": 1e-4, "initial_exploration": 0.02, "final_exploration": 0.0,
    "huber": True, "hidden": 512, **extensions, "beta": 0.5, "v_min": -10.0, "v_max": 10.0,
    # ALL's model_constructor(env, atoms=atoms, sigma=sigma)
    # (looprl.presets.atari.models.nature_rainbow)
    "model_constructor": None,
}


class RainbowAtariPreset(AtariReplayPreset):
    """Builds Rainbow agents (steps count agent steps of 4 frames)."""

    algorithm = "Rainbow"
    model_arguments = ("atoms", "sigma")

    def _build(self, env: Any) -> nn.Module:
        hp = self.hyperparameters
        return nature_rainbow(self.num_actions, hp["atoms"], require_frames(env, self.algorithm),
                              hp["hidden"], hp["sigma"], dueling=hp["dueling"], noisy=hp["noisy"],
                              distributional=hp["distributional"])


rainbow = PresetBuilder("rainbow", default_hyperparameters, RainbowAtariPreset)
