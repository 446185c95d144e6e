"""Presets for multi-agent environments (PettingZoo): independent learners.

``independent`` turns any single-agent preset builder, or one per agent, into a multi-agent
one: ``multiagent.independent(classic_control.dqn).env(env).build()``. ``dqn`` (independent
Q-learning) and ``ppo`` (independent PPO) are ready-made ones, tuned for small board games;
``__all__`` lists them only (the CLI offers what it lists).
"""

from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control import dqn as single_agent_dqn
from looprl.presets.classic_control import ppo as single_agent_ppo
from looprl.presets.classic_control.dqn import DQNClassicControlPreset
from looprl.presets.common import derived
from looprl.presets.multiagent.independent import (
    IndependentMultiagentPreset as IndependentMultiagentPreset,
)
from looprl.presets.multiagent.independent import (
    IndependentPresetBuilder as IndependentPresetBuilder,
)
from looprl.presets.multiagent.independent import independent

# (tuned defaults, not overrides: a part that leaves one unused warns only of the user's own)
dqn = independent(PresetBuilder("dqn", derived(
    single_agent_dqn.default_hyperparameters, replay_start_size=500, update_frequency=16,
    gradient_steps=4, final_exploration_step=5000, hidden=64,
), DQNClassicControlPreset), name="independent_dqn")

ppo = independent(single_agent_ppo.hyperparameters(
    n_steps=512, minibatch_size=64, epochs=4, hidden=64, entropy_coef=0.01, lr=1e-3,
), name="independent_ppo")

__all__ = ["dqn", "ppo"]
