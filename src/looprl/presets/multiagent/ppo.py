"""Independent PPO (de Witt et al., 2020, https://arxiv.org/abs/2011.09533).

One classic-control PPO per agent, each acting on its own turns (``n_envs=1``), tuned for
small board games: both players of ``tictactoe_v3``, trained against each other, beat a
random opponent clearly within 20,000 frames (agent turns).
"""

from __future__ import annotations

from looprl.presets.classic_control import ppo as single_agent_ppo
from looprl.presets.multiagent.independent import independent

ppo = independent(
    single_agent_ppo.hyperparameters(
        n_steps=512,
        minibatch_size=64,
        epochs=4,
        hidden=64,
        entropy_coef=0.01,
        lr=1e-3,
    ),
    name="independent_ppo",
)
