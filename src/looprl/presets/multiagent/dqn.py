"""Independent DQN: one classic-control DQN per agent, tuned for small board games.

With these settings both players of ``tictactoe_v3``, trained against each other, beat a
random opponent clearly within 10,000 frames (agent turns).
"""

from __future__ import annotations

from looprl.presets.classic_control import dqn as single_agent_dqn
from looprl.presets.multiagent.independent import independent

dqn = independent(
    single_agent_dqn.hyperparameters(
        replay_start_size=500,
        update_frequency=16,
        gradient_steps=4,
        final_exploration_step=5000,
        hidden=64,
    ),
    name="independent_dqn",
)
