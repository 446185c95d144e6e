"""Rainbow preset for Atari (Hessel et al., 2018, https://arxiv.org/abs/1710.02298).

The autonomous-learning-library's Atari settings: a dueling, noisy (sigma_0 = 0.5),
distributional (51 atoms on ``[-10, 10]``) Nature network (``nn.cnn.nature_rainbow``),
double-Q targets, 3-step returns, prioritized replay (alpha 0.5, beta 0.5 annealed to 1),
Adam at 6.25e-5 (eps 1.5e-4), one update every 4 steps after 80,000 steps, a target network
copied every 1,000 updates and epsilon from 0.02 to 0 over 250,000 steps on top of the
noise. Every extension has its switch (``double``, ``dueling``, ``noisy``, ``n_steps``,
``prioritized``, ``distributional``), as in ``classic_control.rainbow``.
Replay is ``atari.dqn``'s frame ring (about 7 GB of CPU memory when full, allocated lazily).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.nn.cnn import nature_rainbow
from looprl.presets.atari.common import AtariReplayPreset, require_frames
from looprl.presets.atari.dqn import replay_defaults
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.rainbow import extensions

default_hyperparameters: dict[str, Any] = {
    **replay_defaults, "lr": 6.25e-5, "initial_exploration": 0.02, "final_exploration": 0.0,
    "huber": True, "hidden": 512, **extensions, "beta": 0.5, "v_min": -10.0, "v_max": 10.0,
}


class RainbowAtariPreset(AtariReplayPreset):
    """Builds Rainbow agents (steps count agent steps of 4 frames, as in ``atari.dqn``)."""

    algorithm = "Rainbow"

    def _build(self, env: Any) -> nn.Module:
        hp = self.hyperparameters
        return nature_rainbow(self.num_actions, hp["atoms"], require_frames(env, self.algorithm),
                              hp["hidden"], hp["sigma"], dueling=hp["dueling"], noisy=hp["noisy"],
                              distributional=hp["distributional"])


rainbow = PresetBuilder("rainbow", default_hyperparameters, RainbowAtariPreset)
