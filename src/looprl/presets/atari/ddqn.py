"""Double DQN preset for Atari (van Hasselt et al., 2016, https://arxiv.org/abs/1509.06461).

The autonomous-learning-library's Atari DDQN: the double-Q target over a dueling Nature
network (Wang et al., 2016, https://arxiv.org/abs/1511.06581), with DQN's Atari schedule
(``atari.dqn``: Adam at 1e-4, a target network copied every 1,000 updates, one update every
4 steps after 80,000 steps, epsilon from 1 to 0.01 over 250,000 steps).

Replay stores each frame once (about 7 GB for 1M transitions): ``AtariReplayBuffer``, or
with ``prioritized=True`` ``PrioritizedAtariReplayBuffer`` (alpha 0.5, beta 0.5 annealed to
1), as the library does. ``n_steps > 1`` (default 1) samples n-step returns from the same
ring. ``replay_buffer`` builds these buffers for ``atari.rainbow`` too.
"""

from __future__ import annotations

from typing import Any

from looprl.agents.dqn import DQN, DQNPolicy, DQNTrainer
from looprl.approximation import LinearScheduler
from looprl.core import DummyLogger
from looprl.memory.atari_replay import AtariReplayBuffer, PrioritizedAtariReplayBuffer
from looprl.nn.cnn import nature_dueling_dqn
from looprl.presets.atari.common import require_frames
from looprl.presets.atari.dqn import DQNAtariPreset
from looprl.presets.atari.dqn import default_hyperparameters as dqn_defaults
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import require_positive
from looprl.presets.parts import beta_schedule

default_hyperparameters: dict[str, Any] = {
    **dqn_defaults,
    "dueling": True,
    "n_steps": 1,
    "prioritized": False,
    "alpha": 0.5,
    "beta": 0.5,
}


def replay_buffer(hp: dict[str, Any], device: Any, train_steps: float) -> AtariReplayBuffer:
    """The frame ring of ``hp['replay_buffer_size']`` slots with ``hp['n_steps']``-step
    returns, prioritized when ``hp['prioritized']``: beta then anneals to 1 over the
    gradient steps of ``train_steps`` agent steps (constant when the budget is unknown)."""
    size, n_steps = hp["replay_buffer_size"], hp["n_steps"]
    if not hp["prioritized"]:
        return AtariReplayBuffer(size, device, n_steps=n_steps)
    return PrioritizedAtariReplayBuffer(
        size, device, n_steps=n_steps, alpha=hp["alpha"],
        beta=beta_schedule(hp, train_steps),
    )


class DDQNAtariPreset(DQNAtariPreset):
    """Builds Double DQN agents; ``dueling`` picks ``nature_dueling_dqn`` over ``nature_dqn``
    (``features`` applies to the latter only)."""

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(env, name, device, hyperparameters)
        require_positive(hyperparameters, "n_steps")
        if hyperparameters["dueling"]:  # replaces DQN's plain Nature network
            frames = require_frames(env, "DDQN")
            self.model = nature_dueling_dqn(self.num_actions, frames).to(device)

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Any:
        hp = self.hyperparameters
        epsilon = LinearScheduler(
            hp["initial_exploration"], hp["final_exploration"], 0,
            hp["final_exploration_step"], name="epsilon",
        )
        policy = DQNPolicy(self._q(logger or DummyLogger()), self.num_actions, epsilon)
        agent = DQN(
            policy,
            DQNTrainer(policy, hp["discount_factor"], hp["n_steps"], double_q=True,
                       huber=hp["huber"]),
            replay_buffer(hp, self.device, train_steps),
            minibatch_size=hp["minibatch_size"],
            replay_start_size=hp["replay_start_size"],
            update_frequency=hp["update_frequency"],
            gradient_steps=hp["gradient_steps"],
        )
        return self._wrap(agent)


ddqn = PresetBuilder("ddqn", default_hyperparameters, DDQNAtariPreset)
