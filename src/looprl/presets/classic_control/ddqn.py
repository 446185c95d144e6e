"""Double DQN preset for classic control: ``classic_control.dqn`` with ``update="double_q"``."""

from __future__ import annotations

from typing import Any

from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.dqn import DQNClassicControlPreset
from looprl.presets.classic_control.dqn import default_hyperparameters as dqn_defaults

__all__ = ["ddqn", "default_hyperparameters"]

default_hyperparameters: dict[str, Any] = {**dqn_defaults, "update": "double_q"}

ddqn = PresetBuilder("ddqn", default_hyperparameters, DQNClassicControlPreset)
