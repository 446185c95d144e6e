"""Double DQN preset for Atari (van Hasselt et al., 2016, https://arxiv.org/abs/1509.06461):
the double-Q target over a dueling Nature network with ``atari.dqn``'s schedule."""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.nn.cnn import nature_dueling_dqn
from looprl.presets.atari.common import require_frames
from looprl.presets.atari.dqn import DQNAtariPreset
from looprl.presets.atari.dqn import default_hyperparameters as dqn_defaults
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import derived

default_hyperparameters: dict[str, Any] = derived(
    dqn_defaults, dueling=True, n_steps=1, prioritized=True, alpha=0.5, beta=0.5)


class DDQNAtariPreset(DQNAtariPreset):
    """Builds Double DQN agents; ``dueling`` picks ``nature_dueling_dqn`` over ``nature_dqn``
    (``features`` applies to the latter only)."""

    double = True
    algorithm = "DDQN"

    def _build(self, env: Any) -> nn.Module:
        if not self.hyperparameters["dueling"]:
            return super()._build(env)
        return nature_dueling_dqn(self.num_actions, require_frames(env, self.algorithm))


ddqn = PresetBuilder("ddqn", default_hyperparameters, DDQNAtariPreset)
