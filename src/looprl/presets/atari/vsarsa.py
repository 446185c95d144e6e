"""VSarsa preset for Atari: ``atari.vqn`` with the target ``Q(s', a')`` of the action taken."""

from __future__ import annotations

from typing import Any

from looprl.presets.atari.vqn import OnlineAtariPreset
from looprl.presets.atari.vqn import default_hyperparameters as vqn_defaults
from looprl.presets.builder import PresetBuilder

default_hyperparameters: dict[str, Any] = dict(vqn_defaults)


class VSarsaAtariPreset(OnlineAtariPreset):
    """Builds VSarsa agents."""

    algorithm = "VSarsa"
    update = "sarsa"


vsarsa = PresetBuilder("vsarsa", default_hyperparameters, VSarsaAtariPreset)
