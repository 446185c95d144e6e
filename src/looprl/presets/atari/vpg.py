"""Vanilla policy gradient preset for Atari: one environment, an update per
``min_batch_size`` steps of complete episodes (a lost life ends one); ``atari.vac``'s network
and settings."""

from __future__ import annotations

from typing import Any

from looprl.presets.atari.common import NatureActorCritic
from looprl.presets.atari.vac import default_hyperparameters as vac_defaults
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.vpg import VPGClassicControlPreset
from looprl.presets.common import derived

default_hyperparameters: dict[str, Any] = derived(vac_defaults, drop=("n_envs",),
                                                  min_batch_size=1000)


class VPGAtariPreset(NatureActorCritic, VPGClassicControlPreset):
    """Builds VPG agents for a single Atari environment."""


vpg = PresetBuilder("vpg", default_hyperparameters, VPGAtariPreset)
