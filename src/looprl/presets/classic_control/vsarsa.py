"""VSarsa preset for classic control: ``classic_control.vqn`` with SARSA's on-policy target
``Q(s', a')`` of the action taken next, and more cautious settings."""

from __future__ import annotations

from typing import Any

from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.vqn import OnlineClassicControlPreset
from looprl.presets.classic_control.vqn import default_hyperparameters as vqn_defaults
from looprl.presets.common import derived

default_hyperparameters: dict[str, Any] = derived(
    vqn_defaults, discount_factor=0.9, n_envs=32, lr=5e-4, final_exploration=0.05,
    final_exploration_step=4000, linear_lr=False, target_update_frequency=50,
)


class VSarsaClassicControlPreset(OnlineClassicControlPreset):
    """Builds VSarsa agents."""

    algorithm = "VSarsa"
    update = "sarsa"


vsarsa = PresetBuilder("vsarsa", default_hyperparameters, VSarsaClassicControlPreset)
