"""Vanilla policy gradient (REINFORCE with a learned baseline) preset for Atari (Williams,
1992, https://doi.org/10.1007/BF00992696).

One environment; an update after the episode that brings the batch to 1,000 steps of
complete episodes (with the ``EpisodicLife`` body a lost life ends an episode). The Nature
CNN shared by the policy and value heads; Adam (eps 1.5e-4) at 1e-4 for the features and the
policy head and 5e-4 for the value head, value loss weight 0.25, gradients clipped to norm
0.5: the autonomous-learning-library's Atari settings, plus A3C's entropy bonus of 0.01.
"""

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
    """Builds VPG agents for a single Atari environment (``VPGClassicControlPreset``'s agent
    and trainer with the shared Nature actor-critic and the DeepMind bodies)."""



vpg = PresetBuilder("vpg", default_hyperparameters, VPGAtariPreset)
