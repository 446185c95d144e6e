"""VSarsa preset for Atari: online SARSA over 64 parallel environments, no replay (Rummery &
Niranjan, 1994; the autonomous-learning-library's VSarsa).

The same network and settings as ``atari.vqn`` (the library uses one set for both); only
the target differs, ``Q(s', a')`` of the action actually taken next.
"""

from __future__ import annotations

from typing import Any

from looprl.presets.atari.vqn import OnlineAtariPreset
from looprl.presets.atari.vqn import default_hyperparameters as vqn_defaults
from looprl.presets.builder import PresetBuilder

default_hyperparameters: dict[str, Any] = dict(vqn_defaults)


class VSarsaAtariPreset(OnlineAtariPreset):
    """Builds VSarsa agents (see ``OnlineAtariPreset``)."""

    algorithm = "VSarsa"
    update = "sarsa"


vsarsa = PresetBuilder("vsarsa", default_hyperparameters, VSarsaAtariPreset)
