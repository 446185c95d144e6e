"""TD3 preset for continuous control (Pendulum-v1 above -400 within 15,000 steps)."""

from __future__ import annotations

import math
from typing import Any

from looprl.agents.ddpg import DDPGPolicy
from looprl.agents.td3 import TD3, DelayedPolyakTarget, TD3Trainer
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import derived
from looprl.presets.continuous.ddpg import DDPGContinuousPreset
from looprl.presets.continuous.ddpg import default_hyperparameters as ddpg_defaults

default_hyperparameters: dict[str, Any] = derived(
    ddpg_defaults, policy_delay=2, target_noise=0.2, noise_clip=0.5)


class TD3ContinuousPreset(DDPGContinuousPreset):
    """Builds TD3 agents: DDPG's actor with twin critics (2 x ``hidden`` each)."""

    algorithm = "TD3"
    agent_class = TD3
    twin = True

    def trainer(self, policy: DDPGPolicy, train_steps: float = math.inf) -> TD3Trainer:
        hp = self.hyperparameters
        target = DelayedPolyakTarget(hp["polyak_rate"], hp["policy_delay"])
        return TD3Trainer(policy, self._q(policy, target), hp["discount_factor"],
                          policy_delay=hp["policy_delay"], target_noise=hp["target_noise"],
                          noise_clip=hp["noise_clip"])


td3 = PresetBuilder("td3", default_hyperparameters, TD3ContinuousPreset)
