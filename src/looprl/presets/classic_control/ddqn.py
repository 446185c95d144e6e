"""Double DQN preset for classic control.

DQN's preset (``classic_control.dqn``, the rl-baselines3-zoo CartPole-v1 defaults) with the
double-Q target and optional prioritized replay (``prioritized=True``).
"""

from __future__ import annotations

from typing import Any

from looprl.agents.ddqn import DDQN, DDQNTrainer
from looprl.agents.dqn import DQNPolicy
from looprl.approximation import LinearScheduler
from looprl.core import DummyLogger
from looprl.memory.prioritized import PrioritizedReplayBuffer
from looprl.memory.replay import ExperienceReplayBuffer
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.dqn import DQNClassicControlPreset
from looprl.presets.classic_control.dqn import default_hyperparameters as dqn_defaults

default_hyperparameters: dict[str, Any] = {
    **dqn_defaults,
    "prioritized": False,
    "alpha": 0.6,
    "beta": 0.4,
}


def replay_buffer(hp: dict[str, Any], device: Any, train_steps: float) -> Any:
    """A uniform or (``hp['prioritized']``) prioritized buffer; beta anneals to 1 over
    the gradient steps of ``train_steps`` frames."""
    if not hp["prioritized"]:
        return ExperienceReplayBuffer(hp["replay_buffer_size"], device=device)
    beta: Any = hp["beta"]
    if train_steps != float("inf"):
        frames = max(train_steps - hp["replay_start_size"], 1)
        samples = int(frames / hp["update_frequency"] * hp["gradient_steps"])
        beta = LinearScheduler(hp["beta"], 1.0, 0, max(samples, 1), name="beta")
    return PrioritizedReplayBuffer(
        hp["replay_buffer_size"], alpha=hp["alpha"], beta=beta, device=device
    )


class DDQNClassicControlPreset(DQNClassicControlPreset):
    """Builds Double DQN agents with DQN's two-layer ReLU Q-network."""

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> DDQN:
        hp = self.hyperparameters
        epsilon = LinearScheduler(
            hp["initial_exploration"],
            hp["final_exploration"],
            0,
            hp["final_exploration_step"],
            name="epsilon",
        )
        policy = DQNPolicy(self._q(logger or DummyLogger()), self.num_actions, epsilon)
        return DDQN(
            policy,
            DDQNTrainer(policy, hp["discount_factor"], huber=hp["huber"]),
            replay_buffer(hp, self.device, train_steps),
            minibatch_size=hp["minibatch_size"],
            replay_start_size=hp["replay_start_size"],
            update_frequency=hp["update_frequency"],
            gradient_steps=hp["gradient_steps"],
        )


ddqn = PresetBuilder("ddqn", default_hyperparameters, DDQNClassicControlPreset)
