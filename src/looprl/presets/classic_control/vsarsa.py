"""VSarsa preset for classic control: online SARSA over ``n_envs`` parallel environments,
without replay (Rummery & Niranjan, 1994; the autonomous-learning-library's VSarsa,
https://github.com/cpnota/autonomous-learning-library).

On-policy TD control: the target bootstraps from the action the policy actually takes next,
``r + gamma * mask * Q(s', a')``, so the agent picks ``a'`` before it learns:
``DQNTrainer(update="sarsa")`` reads ``a'`` from row 1 of each ``[2, n_envs]`` segment.

The same network as ``classic_control.vqn``; only the target differs (``Q(s', a')`` of the
action actually taken next). SARSA evaluates its own exploring policy, so it uses more
environments per batch, a smaller learning rate, a shorter horizon (``discount_factor`` 0.9),
a slower epsilon decay, a higher final epsilon and a slower target (copied every 50
updates) than VQN, and a constant learning rate
(``linear_lr`` False: decaying it slowed SARSA down more than it steadied it).
"""

from __future__ import annotations

from typing import Any

from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.vqn import OnlineClassicControlPreset
from looprl.presets.classic_control.vqn import default_hyperparameters as vqn_defaults

default_hyperparameters: dict[str, Any] = {
    **vqn_defaults,
    "discount_factor": 0.9,
    "n_envs": 32,
    "lr": 5e-4,
    "final_exploration": 0.05,
    "final_exploration_step": 4000,
    "linear_lr": False,
    "target_update_frequency": 50,
}


class VSarsaClassicControlPreset(OnlineClassicControlPreset):
    """Builds VSarsa agents (see ``OnlineClassicControlPreset``)."""

    algorithm = "VSarsa"
    update = "sarsa"


vsarsa = PresetBuilder("vsarsa", default_hyperparameters, VSarsaClassicControlPreset)
