"""An ALL 0.9 preset file as its users write one (ALL's ``classic_control/dqn.py``, ``all`` ->
``looprl``): its imports by ALL's module paths (``looprl.presets.preset``...), its
``DQNTestAgent``, built and run by ``run_experiment``; and ALL's module paths themselves."""

from __future__ import annotations

import copy
import importlib
from typing import Any

from torch.optim import Adam

from looprl.agents import DQN, DQNTestAgent
from looprl.approximation import FixedTarget, QNetwork
from looprl.environments import GymEnvironment
from looprl.experiments import run_experiment
from looprl.logging import DummyLogger
from looprl.memory import ExperienceReplayBuffer
from looprl.optim import LinearScheduler
from looprl.policies import GreedyPolicy
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.models import fc_relu_q
from looprl.presets.preset import Preset

default_hyperparameters = {
    "discount_factor": 0.99,
    "lr": 1e-3,
    "minibatch_size": 64,
    "update_frequency": 1,
    "target_update_frequency": 100,
    "replay_start_size": 1000,
    "replay_buffer_size": 10000,
    "initial_exploration": 1.0,
    "final_exploration": 0.0,
    "final_exploration_step": 10000,
    "test_exploration": 0.001,
    "model_constructor": fc_relu_q,
}


class DQNClassicControlPreset(Preset):
    """ALL 0.9.1's, as written there (docstring left out)."""

    def __init__(self, env: Any, name: str, device: Any, **hyperparameters: Any):
        super().__init__(name, device, hyperparameters)
        self.model = hyperparameters["model_constructor"](env).to(device)
        self.n_actions = env.action_space.n

    def agent(self, logger: Any = DummyLogger(), train_steps: float = float("inf")) -> Any:  # noqa: B008 -- ALL's
        optimizer = Adam(self.model.parameters(), lr=self.hyperparameters["lr"])
        q = QNetwork(self.model, optimizer,
                     target=FixedTarget(self.hyperparameters["target_update_frequency"]),
                     logger=logger)
        policy = GreedyPolicy(q, self.n_actions, epsilon=LinearScheduler(
            self.hyperparameters["initial_exploration"],
            self.hyperparameters["final_exploration"],
            self.hyperparameters["replay_start_size"],
            self.hyperparameters["final_exploration_step"]
            - self.hyperparameters["replay_start_size"],
            name="exploration", logger=logger))
        replay_buffer = ExperienceReplayBuffer(self.hyperparameters["replay_buffer_size"],
                                               device=self.device)
        return DQN(q, policy, replay_buffer,
                   discount_factor=self.hyperparameters["discount_factor"],
                   minibatch_size=self.hyperparameters["minibatch_size"],
                   replay_start_size=self.hyperparameters["replay_start_size"],
                   update_frequency=self.hyperparameters["update_frequency"])

    def test_agent(self) -> Any:
        q = QNetwork(copy.deepcopy(self.model))
        policy = GreedyPolicy(q, self.n_actions, epsilon=self.hyperparameters["test_exploration"])
        return DQNTestAgent(policy)


dqn = PresetBuilder("dqn", default_hyperparameters, DQNClassicControlPreset)


def test_alls_dqn_preset_file_learns_cartpole_and_its_test_agent_plays_it(tmp_path: Any) -> None:
    """(was: ``looprl.presets.preset`` and ``DQNTestAgent`` missing: the file's first imports
    failed). Random play scores about 22 an episode."""
    env = GymEnvironment("CartPole-v1", device="cpu")
    builder = dqn.device("cpu").hyperparameters(replay_start_size=500, final_exploration_step=3000)
    [result] = run_experiment(builder, env, 7000, logdir=str(tmp_path), quiet=True,
                              test_episodes=5, seed=0)
    assert sum(result.test_returns) / 5 > 100  # (seeds 0, 1, 2: 144, 428, 373)


def test_alls_module_paths_hold_the_names_of_alls_modules() -> None:
    """Every path of ``all_paths.PATHS`` imports and leaves its parent's attribute of that name
    as it was; a sample of ALL's names by ALL's paths."""
    from looprl.all_paths import PATHS
    for path in PATHS:
        parent, _, child = path.rpartition(".")
        before = getattr(importlib.import_module(parent), child, None)
        assert before is None or getattr(before, "__name__", None) == path, path
        assert importlib.import_module(path).__name__ == path
    import looprl.approximation
    import looprl.memory
    import looprl.presets
    from looprl.approximation.checkpointer import PeriodicCheckpointer
    from looprl.memory.replay_buffer import ExperienceReplayBuffer as Buffer
    from looprl.presets.independent_multiagent import IndependentMultiagentPreset
    assert PeriodicCheckpointer is looprl.approximation.PeriodicCheckpointer
    assert Buffer is looprl.memory.ExperienceReplayBuffer and Buffer is ExperienceReplayBuffer
    assert IndependentMultiagentPreset is looprl.presets.IndependentMultiagentPreset
    assert Preset is looprl.presets.Preset and Buffer.__module__ == "looprl.memory.replay"
    assert not hasattr(importlib.import_module("looprl.presets.preset"), "__path__")
