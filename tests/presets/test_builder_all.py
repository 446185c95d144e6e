"""ALL 0.9's ``PresetBuilder`` with a user's own preset class, written as an ALL user writes it
(ALL's ``all/presets/builder_test.py`` and a ``Preset`` subclass of one's own)."""

from typing import Any

import pytest
import torch
from torch import nn, optim

from looprl.agents import Agent
from looprl.approximation import QNetwork
from looprl.environments import GymEnvironment
from looprl.experiments import run_experiment
from looprl.presets import (
    ParallelPreset,
    ParallelPresetBuilder,
    Preset,
    PresetBuilder,
    classic_control,
)

DEFAULTS = {"lr": 1e-4, "gamma": 0.99}


class MockPreset:
    def __init__(self, env: Any, name: str, device: str, **hyperparameters: Any):
        self.env = env
        self.name = name
        self.device = device
        self.hyperparameters = hyperparameters


@pytest.fixture
def builder() -> PresetBuilder:
    return PresetBuilder("my_preset", DEFAULTS, MockPreset)


def test_all_builder_calls_the_preset_with_keywords(builder: PresetBuilder) -> None:
    preset = builder.env("env").build()
    assert preset.name == "my_preset" and preset.env == "env"
    assert preset.hyperparameters == DEFAULTS
    preset = builder.name("cool_name").hyperparameters(lr=0.01).device("cpu").env("env").build()
    assert preset.name == "cool_name" and preset.device == "cpu"
    assert preset.hyperparameters == {**DEFAULTS, "lr": 0.01}
    with pytest.raises(KeyError):
        builder.hyperparameters(foo=0.01).env("env").build()


def test_no_side_effects(builder: PresetBuilder) -> None:
    builder.device("cpu").hyperparameters(lr=0.01).name("other").env("a").build()
    preset = builder.env("b").build()
    assert preset.name == "my_preset" and preset.hyperparameters == DEFAULTS
    assert preset.env == "b"


def test_call_api(builder: PresetBuilder) -> None:
    preset = builder(device="cpu", hyperparameters={"lr": 0.01}, name="cool_name").env("e").build()
    assert preset.name == "cool_name" and preset.device == "cpu"
    assert preset.hyperparameters == {**DEFAULTS, "lr": 0.01}
    with pytest.raises(TypeError, match="takes device, env, hyperparameters and name"):
        builder(lr=0.01)


def test_call_with_none_keeps_what_was_set(builder: PresetBuilder) -> None:
    """ALL's ``builder(hyperparameters=None)`` keeps the values (was: a TypeError)."""
    configured = builder.hyperparameters(lr=0.01).name("mine")
    preset = configured(hyperparameters=None, name=None, device=None).env("e").build()
    assert preset.hyperparameters == {**DEFAULTS, "lr": 0.01} and preset.name == "mine"


def _model(env: Any, hidden: int = 4) -> nn.Module:
    return nn.Linear(1, hidden)


def test_a_users_preset_takes_alls_values_of_its_keys() -> None:
    """A user's (ALL) preset: a ``functools.partial`` or a class for a function default, NumPy
    numbers, and its own keys' values outside looprl's ranges of the same names (was: refused:
    rainbow's ``sigma=0``, ``replay_start_size=np.int64(...)``, ``partial(model, hidden=8)``)."""
    import functools

    import numpy as np
    defaults = {"model_constructor": _model, "replay_start_size": 100, "sigma": 0.5,
                "lr": 1e-3, "hidden": 64}
    builder = PresetBuilder("users", defaults, MockPreset)
    preset = builder.hyperparameters(
        model_constructor=functools.partial(_model, hidden=8), replay_start_size=np.int64(50),
        sigma=0, lr=np.float32(0.5), hidden=0).env("e").build()
    given = preset.hyperparameters
    assert given["model_constructor"](None).out_features == 8
    assert type(given["replay_start_size"]) is int and given["replay_start_size"] == 50
    assert (given["sigma"], given["hidden"], given["lr"]) == (0, 0, 0.5)
    assert builder.hyperparameters(model_constructor=nn.Linear).env("e").build() \
        .hyperparameters["model_constructor"] is nn.Linear
    with pytest.raises(TypeError, match="Hyperparameter 'replay_start_size' must be int"):
        builder.hyperparameters(replay_start_size="many")
    with pytest.raises(ValueError, match="Hyperparameter 'sigma' of rainbow must be"):
        classic_control.rainbow.hyperparameters(sigma=-1)  # (looprl's own: still ranged)


def test_alls_constructor_keywords() -> None:
    """(was: ``PresetBuilder(name, defaults, constructor, device="cpu")``, ALL's signature, raised
    a TypeError)"""
    builder = PresetBuilder("my_preset", DEFAULTS, MockPreset, device="cpu", env="e",
                            hyperparameters={"lr": 0.01}, name="cool_name")
    preset = builder.build()
    assert (preset.env, preset.name, preset.device) == ("e", "cool_name", "cpu")
    assert preset.hyperparameters == {**DEFAULTS, "lr": 0.01}
    parallel = ParallelPresetBuilder("par", {"n_envs": 3}, MyParallelPreset, device="cpu")
    assert parallel.env("e").build().device == "cpu"
    with pytest.raises(KeyError, match="Unknown hyperparameter 'foo'"):
        PresetBuilder("my_preset", DEFAULTS, MockPreset, hyperparameters={"foo": 1})


def test_explicit_hyperparameter_parameters_are_keywords_too() -> None:
    class Explicit:
        def __init__(self, env: Any, name: str, device: str, lr: float, gamma: float):
            self.values = (env, name, device, lr, gamma)

    preset = PresetBuilder("explicit", DEFAULTS, Explicit).device("cpu").env("e").build()
    assert preset.values == ("e", "explicit", "cpu", 1e-4, 0.99)


class GreedyAgent(Agent):
    def __init__(self, q: QNetwork):
        self.q = q

    def act(self, state: Any) -> int:
        return int(self.q.eval(state).argmax())


class MyPreset(Preset):
    """An ALL user's preset: greedy on a linear Q-network."""

    def __init__(self, env: Any, name: str, device: str, **hyperparameters: Any):
        super().__init__(name, device, hyperparameters)
        torch.manual_seed(0)
        self.model = nn.Linear(env.state_space.shape[0], env.action_space.n).to(device)
        self.optimizer = optim.Adam(self.model.parameters(), lr=hyperparameters["lr"])

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Agent:
        return GreedyAgent(QNetwork(self.model, self.optimizer))

    def test_agent(self) -> Agent:
        return GreedyAgent(QNetwork(self.model))


def test_a_users_preset_class_runs_through_the_builder_and_run_experiment(tmp_path: Any) -> None:
    my_preset = PresetBuilder("my_preset", {"lr": 1e-3}, MyPreset)
    env = GymEnvironment("CartPole-v1", device="cpu")
    preset = my_preset.env(env).device("cpu").hyperparameters(lr=1e-2).build()
    assert isinstance(preset, MyPreset) and preset.hyperparameters == {"lr": 1e-2}
    results = run_experiment(my_preset.device("cpu"), env, 200, logdir=str(tmp_path),
                             quiet=True, test_episodes=2, seed=0)
    assert len(results) == 1 and results[0].frames >= 200
    assert len(results[0].test_returns) == 2


def test_looprls_presets_still_build() -> None:
    preset = classic_control.dqn.env(GymEnvironment("CartPole-v1")).device("cpu").build()
    assert preset.name == "dqn" and preset.hyperparameters["lr"] > 0


class MyParallelPreset(ParallelPreset):
    def __init__(self, env: Any, name: str, device: str, **hyperparameters: Any):
        super().__init__(name, device, hyperparameters)

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Any:
        raise NotImplementedError

    def test_agent(self) -> Any:
        raise NotImplementedError

    def parallel_test_agent(self) -> Any:
        raise NotImplementedError


def test_parallel_preset_reads_n_envs_from_its_hyperparameters() -> None:
    builder = ParallelPresetBuilder("par", {"n_envs": 3, "lr": 0.1}, MyParallelPreset)
    assert builder.env("e").device("cpu").build().n_envs == 3
    assert builder.hyperparameters(n_envs=5).env("e").device("cpu").build().n_envs == 5
    with pytest.raises(ValueError, match="n_envs"):
        ParallelPresetBuilder("par", {"lr": 0.1}, MyParallelPreset)
