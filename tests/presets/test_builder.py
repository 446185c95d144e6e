"""Tests of the preset builder and the classic-control presets (looprl.presets)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import looprl.presets
from looprl.agents import DQN, Actor, OnPolicyAgent
from looprl.core import ParallelPreset, Preset, State, StateArray
from looprl.environments import GymEnvironment
from looprl.presets import UnknownHyperparameterError, classic_control, default_device, load_preset
from looprl.presets.classic_control import dqn, ppo


@pytest.fixture(scope="module")
def cartpole() -> GymEnvironment:
    return GymEnvironment("CartPole-v1")


def _states(n: int = 16) -> StateArray:
    observation = torch.randn(n, 4, generator=torch.Generator().manual_seed(3))
    return StateArray({"observation": observation}, (n,))


def _perturb(model: torch.nn.Module) -> None:
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter))


def test_builder_is_immutable() -> None:
    default_lr = dqn.hyperparameter_defaults["lr"]
    changed = dqn.hyperparameters(lr=0.5)
    assert changed is not dqn
    assert changed.hyperparameters(hidden=8) is not changed
    env = GymEnvironment("CartPole-v1")
    assert changed.env(env).device("cpu").build().hyperparameters["lr"] == 0.5
    assert dqn.env(env).device("cpu").build().hyperparameters["lr"] == default_lr
    named = ppo.name("my_ppo")
    assert named.env(env).build().name == "my_ppo"
    assert ppo.env(env).build().name == "ppo"
    with_env = dqn.env(env)
    assert with_env is not dqn
    with pytest.raises(ValueError):
        dqn.build()  # the original builder still has no environment


def test_hyperparameters_accumulate() -> None:
    env = GymEnvironment("CartPole-v1")
    preset = dqn.hyperparameters(lr=0.1).hyperparameters(hidden=8).env(env).build()
    assert preset.hyperparameters["lr"] == 0.1 and preset.hyperparameters["hidden"] == 8
    assert preset.hyperparameters["minibatch_size"] == dqn.hyperparameter_defaults["minibatch_size"]


def test_unknown_hyperparameter_error() -> None:
    with pytest.raises(UnknownHyperparameterError) as info:
        dqn.hyperparameters(lrr=0.1)
    error = info.value
    assert isinstance(error, KeyError)
    message = str(error)
    assert "\n" not in message
    assert "'lrr'" in message
    assert "Did you mean 'lr'?" in message
    for name in dqn.hyperparameter_defaults:
        assert name in message
    assert not message.startswith('"')  # not KeyError's quoted repr


def test_unknown_hyperparameter_without_close_match() -> None:
    with pytest.raises(KeyError) as info:
        ppo.hyperparameters(zzzzzz=1)
    assert "Did you mean" not in str(info.value)
    assert "n_steps" in str(info.value)


def test_unknown_mighty_name_suggests_looprls() -> None:
    """docs/coming-from-mighty.md: Mighty's part settings get a "did you mean" their looprl name."""
    with pytest.raises(UnknownHyperparameterError, match=r"Did you mean 'ez_mu' \(Mighty's"):
        dqn.hyperparameters(zipf_param=2.0)
    with pytest.raises(UnknownHyperparameterError, match="Did you mean 'initial_exploration'"):
        dqn.hyperparameters(epsilon_start=1.0)
    with pytest.raises(UnknownHyperparameterError, match="Did you mean 'lam'"):
        ppo.hyperparameters(gae_lambda=0.9)
    pytest.importorskip("hydra")
    from looprl.configs import register
    from looprl.configs.checks import check_overrides

    register()
    with pytest.raises(ValueError, match=r"Did you mean 'ez_mu' \(Mighty's 'zipf_param'\)"):
        check_overrides(["algorithm=dqn", "algorithm.zipf_param=2"])  # (looprl run's path)


def test_build_without_env_raises() -> None:
    with pytest.raises(ValueError, match=r"\.env"):
        ppo.build()


@pytest.mark.parametrize("builder, name", [(dqn, "DQN"), (ppo, "PPO")])
def test_continuous_env_is_rejected(builder, name: str) -> None:
    with pytest.raises(ValueError, match="discrete") as info:
        builder.env(GymEnvironment("Pendulum-v1")).build()
    assert name in str(info.value) and "Pendulum-v1" in str(info.value)


def test_default_device_is_cpu_here(cartpole: GymEnvironment) -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is available")
    assert default_device() == "cpu"
    preset = dqn.env(cartpole).build()
    assert preset.device == "cpu"
    assert next(preset.model.parameters()).device.type == "cpu"


def test_families_and_types(cartpole: GymEnvironment) -> None:
    assert classic_control.dqn is dqn and classic_control.ppo is ppo
    dqn_preset = dqn.env(cartpole).build()
    ppo_preset = ppo.env(cartpole).build()
    assert isinstance(dqn_preset, Preset) and not isinstance(dqn_preset, ParallelPreset)
    assert isinstance(ppo_preset, ParallelPreset)
    assert ppo_preset.n_envs == ppo.hyperparameter_defaults["n_envs"]
    assert isinstance(dqn_preset.agent(), DQN) and isinstance(dqn_preset.test_agent(), Actor)
    assert isinstance(ppo_preset.agent(), OnPolicyAgent)
    assert isinstance(ppo_preset.test_agent(), Actor)
    # a whole float for an integer (ALL's replay_buffer_size=1e6) is that integer
    size = dqn.hyperparameters(replay_buffer_size=1e6).hyperparameter_defaults[
        "replay_buffer_size"]
    assert size == 1_000_000 and type(size) is int
    # another number names the range, as every range's line does (was "must be int (like ...)")
    with pytest.raises(ValueError, match=r"^Hyperparameter 'replay_buffer_size' of dqn must be "
                                         r"a whole number >= 1, got 1000.5$"):
        dqn.hyperparameters(replay_buffer_size=1000.5)
    with pytest.raises(TypeError, match="'replay_buffer_size' must be int .*got '1000'"):
        dqn.hyperparameters(replay_buffer_size="1000")


def test_dqn_agents_share_and_test_agents_copy(cartpole: GymEnvironment) -> None:
    preset = dqn.hyperparameters(hidden=16).env(cartpole).device("cpu").build()
    first, second = preset.agent(), preset.agent()
    states = _states()
    assert first.policy.q.model.model is preset.model
    assert second.policy.q.model.model is preset.model
    test_agent = preset.test_agent()
    q_before = test_agent.policy.q.no_grad(states)
    assert torch.allclose(q_before, first.policy.q.no_grad(states))
    _perturb(preset.model)
    assert torch.equal(test_agent.policy.q.no_grad(states), q_before)  # a copy
    assert not torch.allclose(first.policy.q.no_grad(states), q_before)  # shared
    assert torch.equal(first.policy.q.no_grad(states), second.policy.q.no_grad(states))
    fresh = preset.test_agent()
    assert torch.equal(fresh.policy.q.no_grad(states), first.policy.q.no_grad(states))


def test_ppo_agents_share_and_test_agents_copy(cartpole: GymEnvironment) -> None:
    preset = ppo.hyperparameters(hidden=16).env(cartpole).device("cpu").build()
    agent = preset.agent()
    assert agent.policy.approximation.model is preset.model
    states = _states()
    test_agent = preset.test_agent()
    parallel = preset.parallel_test_agent()
    logits_before = test_agent.policy.module(states.observation)[0].detach()
    _perturb(preset.model)
    assert torch.equal(test_agent.policy.module(states.observation)[0].detach(), logits_before)
    after = preset.model(states.observation)[0].detach()
    assert not torch.allclose(after, logits_before)
    assert torch.equal(preset.test_agent().act(states), after.argmax(-1))
    assert parallel.policy.module is not preset.model


def test_training_changes_shared_weights_not_test_copy(cartpole: GymEnvironment) -> None:
    preset = dqn.hyperparameters(
        hidden=16, replay_start_size=10, update_frequency=1, gradient_steps=1, minibatch_size=8
    ).env(cartpole).device("cpu").build()
    test_agent = preset.test_agent()
    states = _states()
    q_test = test_agent.policy.q.no_grad(states)
    agent = preset.agent()
    env = GymEnvironment("CartPole-v1", seed=0)
    env.reset()
    for _ in range(30):
        action = agent.act(env.state)
        if env.done:
            env.reset()
        else:
            env.step(action)
    assert torch.equal(test_agent.policy.q.no_grad(states), q_test)
    assert not torch.allclose(preset.test_agent().policy.q.no_grad(states), q_test)


def test_an_interrupted_save_leaves_the_saved_preset_whole(cartpole: GymEnvironment,
                                                            tmp_path: Path, monkeypatch) -> None:
    """(was: ``torch.save`` straight onto preset.pt: a Ctrl-C in the middle left half a file)"""
    preset = ppo.hyperparameters(hidden=16).env(cartpole).device("cpu").build()
    path = tmp_path / "preset.pt"
    preset.save(str(path))
    before = path.read_bytes()

    def interrupted(obj, file):
        Path(file).write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        preset.save(str(path))
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["preset.pt"]


@pytest.mark.parametrize("builder", [dqn, ppo])
def test_save_and_load_preset(builder, cartpole: GymEnvironment, tmp_path: Path) -> None:
    preset = builder.hyperparameters(hidden=16).env(cartpole).device("cpu").build()
    _perturb(preset.model)  # not the freshly initialized weights
    path = tmp_path / "preset.pt"
    preset.save(str(path))
    assert path.stat().st_size > 0
    loaded = load_preset(str(path))
    assert type(loaded) is type(preset)
    assert loaded.hyperparameters == preset.hyperparameters
    assert str(loaded.device) == "cpu"
    states = _states(64)
    assert torch.equal(loaded.test_agent().act(states), preset.test_agent().act(states))
    single = State(states.observation[0])
    assert torch.equal(loaded.test_agent().act(single), preset.test_agent().act(single))
    assert loaded.model is not preset.model
    assert looprl.presets.load_preset is load_preset


def test_loading_something_else_is_a_clear_error(tmp_path: Path) -> None:
    torch.save({"weights": 1}, tmp_path / "dict.pt")
    with pytest.raises(ValueError, match="holds a dict, not a looprl preset"):
        load_preset(str(tmp_path / "dict.pt"))
    (tmp_path / "text.pt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="is not a readable looprl preset"):
        load_preset(str(tmp_path / "text.pt"))


def test_devices_torch_cannot_use_are_refused_at_once(cartpole: GymEnvironment) -> None:
    with pytest.raises(ValueError, match="Unknown device 'gpu'"):
        dqn.device("gpu")
    assert str(dqn.device(torch.device("cpu")).env(cartpole).build().device) == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sees no CUDA GPU"):
            ppo.device("cuda:0")


def test_every_key_with_a_range_is_a_hyperparameter_of_some_preset() -> None:
    """``RANGES`` skips the keys a preset lacks: a misspelled one would never be checked."""
    from looprl.core.ranges import RANGES
    from looprl.presets.catalog import available_agents

    keys = set().union(*(getattr(builder, "default_hyperparameters", {})
                         for builder in available_agents().values()))
    assert set(RANGES) <= keys, set(RANGES) - keys


def test_builders_presets_and_environments_print_what_they_are() -> None:
    """A notebook shows a builder's name and what was set, a preset's name and device, an
    environment's name (and copies), not ``<... object at 0x...>``."""
    from looprl.environments import GymEnvironment
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    builder = dqn.hyperparameters(lr=0.01).env(env).device("cpu")
    assert repr(dqn) == "PresetBuilder('dqn')"
    assert repr(builder) == ("PresetBuilder('dqn', lr=0.01, env=GymEnvironment('CartPole-v1'), "
                             "device='cpu')")
    assert repr(builder.build()) == "DQNClassicControlPreset('dqn', device='cpu')"
    assert repr(env.duplicate(2)) == "GymVectorEnvironment('CartPole-v1', n_envs=2)"


def test_a_ddqn_refusal_names_ddqn() -> None:
    """ddqn's refusals call it DDQN (they said "DQN"), and a discrete preset's refusal of Box
    actions names the config option of a continuous one too."""
    import gymnasium as gym

    from looprl.environments import GymEnvironment
    from looprl.presets.classic_control import ddqn, dqn, ppo

    lake = GymEnvironment("FrozenLake-v1")
    with pytest.raises(ValueError, match="The classic-control DDQN preset needs flat Box"):
        ddqn.env(lake).build()
    with pytest.raises(ValueError, match="The classic-control DQN preset needs flat Box"):
        dqn.env(lake).build()
    with pytest.raises(ValueError, match="looprl run algorithm=continuous/sac"):
        ppo.env(GymEnvironment(gym.make("Pendulum-v1"))).build()


def test_a_two_dimensional_observation_space_is_advised_flattening_not_a_cnn() -> None:
    """Was "features='cnn' for other channels-first images", which refuses (2, 3) in turn."""
    import gymnasium as gym
    from gymnasium.wrappers import FlattenObservation

    from looprl.environments import GymEnvironment
    from looprl.presets.classic_control import dqn

    def grid() -> gym.Env:
        env = gym.make("CartPole-v1")
        env.observation_space = gym.spaces.Box(-1, 1, (2, 2))
        return env

    with pytest.raises(ValueError, match=r"needs flat Box observations, but Grid has "
                                         r"Box\(-1.0, 1.0, \(2, 2\), float32\); wrap the "
                                         r"environment in gymnasium.wrappers.FlattenObservation"):
        dqn.env(GymEnvironment(grid(), name="Grid")).build()
    dqn.env(GymEnvironment(FlattenObservation(grid()))).build()  # (as advised)
    # features='mlp' flattens them too: both refusals say so (the preset's said only the wrapper)
    for features in (None, "cnn"):
        with pytest.raises(ValueError, match=r"'mlp', which flattens them") as error:
            dqn.hyperparameters(features=features).env(GymEnvironment(grid())).build()
        assert "FlattenObservation" in str(error.value)
    dqn.hyperparameters(features="mlp").env(GymEnvironment(grid())).build()  # (as advised)


def test_a_refused_frame_stack_is_named_on_one_line() -> None:
    """A FrameStackObservation's Box has array bounds, which NumPy prints on several lines: the
    refusal printed them all (a 2D CartPole stack took 6 lines)."""
    import gymnasium as gym
    from gymnasium.wrappers import FrameStackObservation

    stacked = GymEnvironment(FrameStackObservation(gym.make("CartPole-v1"), 4))
    with pytest.raises(ValueError, match=r"but CartPole-v1 has Box of shape \(4, 4\) "
                                         r"\(float32\); wrap the environment") as error:
        ppo.env(stacked).device("cpu").build()
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("builder", [dqn, ppo])
def test_features_refuse_observations_that_are_no_box(builder) -> None:
    """features= with a Dict (TimeAwareObservation(flatten=False)) or Discrete observation space
    was a TypeError ("'NoneType' object is not iterable") or an IndexError at the first step."""
    import gymnasium as gym
    from gymnasium.wrappers import TimeAwareObservation

    timed = GymEnvironment(TimeAwareObservation(gym.make("CartPole-v1"), flatten=False))
    for env, space in ((timed, "Dict"), (GymEnvironment("FrozenLake-v1"), "Discrete")):
        with pytest.raises(ValueError, match=rf"features take Box observations, but "
                                             rf"{env.name} has {space}\(.*FlattenObservation"):
            builder.hyperparameters(features="mlp").env(env).device("cpu").build()


def test_a_default_dtype_other_than_float32_is_one_line(cartpole: GymEnvironment) -> None:
    """``torch.set_default_dtype(torch.float64)`` before building, or between building and
    training (was: torch's "mat1 and mat2 must have the same dtype" deep in the first step)."""
    from looprl.core import DummyLogger
    from looprl.experiments import SingleEnvExperiment

    refused = r"float32, but torch's default dtype is torch.float64 .*set_default_dtype\(torch"
    preset = dqn.hyperparameters(hidden=8).env(cartpole).device("cpu").build()
    experiment = SingleEnvExperiment(preset, cartpole, quiet=True, logger=DummyLogger())
    agent = preset.agent()
    torch.set_default_dtype(torch.float64)
    try:
        with pytest.raises(ValueError, match=rf"^dqn.build\(\): looprl builds .*{refused}"):
            dqn.env(cartpole).build()
        with pytest.raises(ValueError, match=rf"^SingleEnvExperiment.train\(\): .*{refused}"):
            experiment.train(frames=10)
        with pytest.raises(ValueError, match=rf"^DQN.act: .*{refused}"):
            agent.act(cartpole.reset(seed=0))
    finally:
        torch.set_default_dtype(torch.float32)


def test_a_learning_rate_and_a_clip_of_0_are_taken(cartpole: GymEnvironment) -> None:
    """(Were "must be positive (> 0)".) ALL and torch's optimizers take ``lr=0``, a network
    trained as it is (a probe), and the end of a linear schedule, as PPO's ``clip`` of 0; a
    negative one is still refused."""
    preset = dqn.hyperparameters(lr=0, hidden=8, replay_start_size=8, update_frequency=1,
                                 minibatch_size=8).env(cartpole).device("cpu").build()
    before = torch.nn.utils.parameters_to_vector(preset.model.parameters()).clone()
    agent = preset.agent()
    env = GymEnvironment("CartPole-v1", seed=0)
    env.reset()
    for _ in range(30):
        action = agent.act(env.state)
        env.reset() if env.done else env.step(action)
    assert agent.learner.updates > 0
    assert torch.equal(torch.nn.utils.parameters_to_vector(preset.model.parameters()), before)
    ppo.hyperparameters(clip=0.0, lr=0.0).env(cartpole).device("cpu").build()
    for key in ("lr", "clip"):
        with pytest.raises(ValueError, match=rf"^Hyperparameter '{key}' of ppo must be >= 0, "
                                             "got -0.1$"):
            ppo.hyperparameters(**{key: -0.1})

