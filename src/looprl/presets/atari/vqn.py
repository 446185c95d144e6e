"""VQN preset for Atari: online Q-learning over 64 environments, no replay, a dueling Nature
network and no target network (``target_update_frequency`` > 0 adds one); epsilon anneals over
``final_exploration_step`` batched steps."""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.nn.cnn import nature_dueling_dqn
from looprl.presets.atari.common import DeepMindBody, require_frames
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.vqn import OnlineClassicControlPreset
from looprl.presets.classic_control.vqn import default_hyperparameters as classic_defaults
from looprl.presets.common import derived

default_hyperparameters: dict[str, Any] = derived(
    classic_defaults, drop=("hidden",), discount_factor=0.99, eps=1.5e-4, n_envs=64,
    final_exploration=0.01, final_exploration_step=4000, test_exploration=0.001,
    target_update_frequency=0, linear_lr=False, clip_grad=0.0, huber=False, episodic_life=True,
    clip_rewards=True,
)


class OnlineAtariPreset(DeepMindBody, OnlineClassicControlPreset):
    """The Atari VQN and VSarsa presets: a dueling Nature Q-network and the DeepMind bodies."""

    def _build(self, env: Any) -> nn.Module:
        return nature_dueling_dqn(self.num_actions, require_frames(env, self.algorithm))


vqn = PresetBuilder("vqn", default_hyperparameters, OnlineAtariPreset)
