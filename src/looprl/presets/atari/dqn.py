"""DQN preset for Atari (Mnih et al., 2015): the Nature CNN over 4 stacked 84x84 frames and a
1M-frame ``AtariReplayBuffer`` (uint8 frames stored once: about 7 GB when full)."""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.nn.cnn import nature_dqn
from looprl.presets.atari.common import AtariReplayPreset, require_frames
from looprl.presets.builder import PresetBuilder

#: the replay schedule of the Atari DQN family (C51 and Rainbow change some)
replay_defaults: dict[str, Any] = {
    "discount_factor": 0.99, "lr": 1e-4, "eps": 1.5e-4, "minibatch_size": 32,
    "update_frequency": 4, "gradient_steps": 1, "target_update_frequency": 1000,
    "replay_start_size": 80_000, "replay_buffer_size": 1_000_000, "initial_exploration": 1.0,
    "final_exploration": 0.01, "final_exploration_step": 250_000, "test_exploration": 0.001,
    "clip_grad": 0.0, "episodic_life": True, "clip_rewards": True,
}

default_hyperparameters: dict[str, Any] = {
    **replay_defaults, "huber": True, "features": "nature",
    # ALL's model_constructor(env): the network instead of features' (an import path
    # "pkg.module:fn" too; looprl.presets.atari.models has ALL's)
    "model_constructor": None,
}


class DQNAtariPreset(AtariReplayPreset):
    """Builds DQN agents with the Nature CNN. ``target_update_frequency`` counts gradient
    steps; the other frequencies and sizes count agent steps (4 frames each)."""

    def _build(self, env: Any) -> nn.Module:
        frames = require_frames(env, self.algorithm)
        return nature_dqn(self.num_actions, frames, features=self.hyperparameters["features"])


dqn = PresetBuilder("dqn", default_hyperparameters, DQNAtariPreset)
