"""VSarsa preset for Atari: ``atari.vqn`` with the target ``Q(s', a')`` of the action taken."""

from __future__ import annotations

from typing import Any

from looprl.presets.atari.vqn import OnlineAtariPreset
from looprl.presets.atari.vqn import default_hyperparameters as vqn_defaults
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.vsarsa import VSarsaClassicControlPreset

default_hyperparameters: dict[str, Any] = dict(vqn_defaults)


class VSarsaAtariPreset(OnlineAtariPreset, VSarsaClassicControlPreset):
    """Builds VSarsa agents."""


vsarsa = PresetBuilder("vsarsa", default_hyperparameters, VSarsaAtariPreset)
