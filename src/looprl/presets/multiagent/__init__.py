"""Presets for multi-agent environments (PettingZoo): independent learners.

``dqn`` and ``ppo`` are independent learners with the classic-control networks and
settings tuned for small board games (``tictactoe_v3``); ``independent`` turns any
single-agent preset builder, or one per agent, into a multi-agent one::

    preset = multiagent.independent(classic_control.dqn).env(env).build()

``__all__`` lists the ready-made builders only (the CLI offers what it lists).
"""

from looprl.presets.multiagent.dqn import dqn
from looprl.presets.multiagent.independent import (
    IndependentMultiagentPreset as IndependentMultiagentPreset,
)
from looprl.presets.multiagent.independent import (
    IndependentPresetBuilder as IndependentPresetBuilder,
)
from looprl.presets.multiagent.independent import independent as independent
from looprl.presets.multiagent.ppo import ppo

__all__ = ["dqn", "ppo"]
