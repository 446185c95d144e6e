"""Double DQN preset for classic control.

DQN's preset (``classic_control.dqn``, the rl-baselines3-zoo CartPole-v1 defaults) with the
double-Q target (``update="double_q"``); ``buffer="prioritized"`` adds prioritized replay.
"""

from __future__ import annotations

from typing import Any

from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.dqn import DQNClassicControlPreset
from looprl.presets.classic_control.dqn import default_hyperparameters as dqn_defaults

__all__ = ["ddqn", "default_hyperparameters"]

default_hyperparameters: dict[str, Any] = {**dqn_defaults, "update": "double_q"}

ddqn = PresetBuilder("ddqn", default_hyperparameters, DQNClassicControlPreset)
