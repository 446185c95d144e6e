"""Tests of contextual environments (looprl.environments.contextual)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from looprl.core import State
from looprl.environments import GymEnvironment, GymVectorEnvironment
from looprl.environments.contextual import (
    CONTEXT_FEATURES,
    ContextFeature,
    ContextualEnv,
    ContextualEnvironment,
    contextual_envs,
    sample_contexts,
)

CLASSIC = ["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "Acrobot-v1"]
MUJOCO = ["HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5"]


def _needs(env_id: str) -> None:
    if env_id in MUJOCO:
        pytest.importorskip("mujoco")


def _rollout(env: gym.Env, steps: int, seed: int = 3) -> np.ndarray:
    """Observations of ``steps`` seeded random actions (the same for every environment)."""
    obs, _ = env.reset(seed=seed)
    space = env.action_space
    space.seed(seed)
    observations = [obs]
    for _ in range(steps):
        obs, _, terminated, truncated, _ = env.step(space.sample())
        observations.append(obs)
        if terminated or truncated:
            break
    return np.array(observations)


def _gym_value(env: gym.Env, env_id: str, name: str) -> float:
    """What Gymnasium's own environment has for a feature."""
    if env_id not in MUJOCO:
        return float(getattr(env, name))
    model = env.model
    values = {
        "gravity": -model.opt.gravity[2],
        "friction": 1.0,  # a scale of the model's own friction
        "torso_mass": model.body_mass[model.body("torso").id],
    }
    return float(values[name])


# -- the feature table ---------------------------------------------------------------------
@pytest.mark.parametrize("env_id", CLASSIC + MUJOCO)
def test_defaults_are_gymnasiums_values_and_bounds_are_sensible(env_id: str) -> None:
    _needs(env_id)
    env = gym.make(env_id).unwrapped
    for name, feature in CONTEXT_FEATURES[env_id].items():
        assert isinstance(feature, ContextFeature)
        assert feature.default == _gym_value(env, env_id, name), name
        assert 0 <= feature.low <= feature.default <= feature.high < math.inf, name
        if name != "goal_position":  # masses, lengths, times, forces: positive
            assert feature.low > 0, name


def test_required_features_are_there() -> None:
    assert set(CONTEXT_FEATURES["CartPole-v1"]) == {
        "gravity",
        "masscart",
        "masspole",
        "length",
        "force_mag",
        "tau",
    }
    assert set(CONTEXT_FEATURES["Pendulum-v1"]) == {"g", "m", "l", "max_speed", "max_torque", "dt"}
    assert set(CONTEXT_FEATURES["MountainCar-v0"]) == {
        "force",
        "gravity",
        "goal_position",
        "max_speed",
    }
    assert len(CONTEXT_FEATURES["Acrobot-v1"]) == 7
    assert set(CONTEXT_FEATURES["HalfCheetah-v5"]) == {"gravity", "friction", "torso_mass"}


# -- physics -------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", CLASSIC + ["HalfCheetah-v5"])
def test_default_context_reproduces_the_plain_environment(env_id: str) -> None:
    _needs(env_id)
    plain = _rollout(gym.make(env_id), 60)
    for contexts in (None, {4: {}}):
        contextual = _rollout(ContextualEnv(env_id, contexts, seed=0), 60)
        np.testing.assert_array_equal(contextual, plain)


CHANGES = [
    ("CartPole-v1", {"length": 1.5}),  # a longer pole
    ("CartPole-v1", {"masscart": 5.0}),  # acts only through the cached total_mass
    ("Pendulum-v1", {"g": 20.0}),
    ("MountainCar-v0", {"force": 0.003}),
    ("Acrobot-v1", {"LINK_MASS_2": 3.0}),
    ("HalfCheetah-v5", {"gravity": 3.0}),
    ("HalfCheetah-v5", {"friction": 0.1}),
    ("HalfCheetah-v5", {"torso_mass": 30.0}),
]


@pytest.mark.parametrize(("env_id", "context"), CHANGES)
def test_a_context_changes_the_physics(env_id: str, context: dict[str, float]) -> None:
    _needs(env_id)
    default = _rollout(ContextualEnv(env_id, seed=0), 40)
    changed = _rollout(ContextualEnv(env_id, {0: context}, seed=0), 40)
    np.testing.assert_array_equal(changed[0], default[0])  # the same start state
    n = min(len(default), len(changed))
    assert not np.allclose(changed[:n], default[:n])


def test_cartpole_step_follows_the_equations_with_the_context() -> None:
    context = {
        "gravity": 3.0,
        "masscart": 2.0,
        "masspole": 0.5,
        "length": 1.2,
        "force_mag": 4.0,
        "tau": 0.05,
    }
    env = ContextualEnv("CartPole-v1", {0: context})
    env.reset(seed=1)
    x, x_dot, theta, theta_dot = env.unwrapped.state  # float64, unlike the observation
    obs = env.step(1)[0]
    total, pml = 2.5, 0.5 * 1.2
    temp = (4.0 + pml * theta_dot**2 * math.sin(theta)) / total
    theta_acc = (3.0 * math.sin(theta) - math.cos(theta) * temp) / (
        1.2 * (4.0 / 3.0 - 0.5 * math.cos(theta) ** 2 / total)
    )
    x_acc = temp - pml * theta_acc * math.cos(theta) / total
    expected = [
        x + 0.05 * x_dot,
        x_dot + 0.05 * x_acc,
        theta + 0.05 * theta_dot,
        theta_dot + 0.05 * theta_acc,
    ]
    np.testing.assert_allclose(obs, expected, rtol=1e-6)


def test_each_reset_applies_the_whole_context() -> None:
    env = ContextualEnv(
        "CartPole-v1", {0: {"length": 2.0, "masspole": 1.0}, 1: {}}, instance_mode="round_robin"
    )
    env.reset(seed=0)
    assert env.unwrapped.total_mass == 2.0 and env.unwrapped.polemass_length == 2.0
    env.reset()
    assert env.unwrapped.length == 0.5 and env.unwrapped.total_mass == 1.1
    assert env.unwrapped.polemass_length == pytest.approx(0.05)


def test_mujoco_context_is_written_to_the_model_without_compounding() -> None:
    pytest.importorskip("mujoco")
    env = ContextualEnv(
        "HalfCheetah-v5", {0: {"gravity": 2.5, "friction": 2.0, "torso_mass": 12.0}}
    )
    model = env.unwrapped.model
    base = model.geom_friction.copy()
    for _ in range(2):  # a second reset with the same scale must not double it again
        env.reset(seed=0)
        np.testing.assert_allclose(model.geom_friction, 2.0 * base)
    assert model.opt.gravity[2] == -2.5
    assert model.body_mass[model.body("torso").id] == 12.0
    assert model.body_subtreemass[0] == pytest.approx(14.0 - 6.25020920502092 + 12.0)


# -- observations --------------------------------------------------------------------------
def test_hidden_context_keeps_the_observation() -> None:
    env = ContextualEnv("CartPole-v1", {0: {"length": 1.0}})
    obs, info = env.reset(seed=0)
    assert obs.shape == (4,) and env.observation_space == gym.make("CartPole-v1").observation_space
    assert info["instance_id"] == 0 and env.step(0)[4]["instance_id"] == 0


@pytest.mark.parametrize("env_id", ["CartPole-v1", "HalfCheetah-v5"])
def test_appended_context_values_order_and_space(env_id: str) -> None:
    _needs(env_id)
    names = list(CONTEXT_FEATURES[env_id])
    third = CONTEXT_FEATURES[env_id][names[2]]
    context = {names[1]: CONTEXT_FEATURES[env_id][names[1]].high, names[2]: 0.3 * third.high}
    env = ContextualEnv(env_id, {0: context}, hide_context=False)
    base = gym.make(env_id).observation_space.shape[0]
    expected = np.array(
        [context.get(n, CONTEXT_FEATURES[env_id][n].default) for n in names], dtype=np.float32
    )
    space = env.observation_space
    assert space.shape == (base + len(names),)
    for bound in ("low", "high"):
        values = [getattr(CONTEXT_FEATURES[env_id][n], bound) for n in names]
        np.testing.assert_array_equal(getattr(space, bound)[base:], np.float32(values))
    for obs in (env.reset(seed=0)[0], env.step(env.action_space.sample())[0]):
        assert obs.shape == space.shape and obs.dtype == space.dtype
        np.testing.assert_array_equal(obs[base:], expected)
        assert space.contains(obs)


def test_pendulum_observation_space_covers_faster_contexts() -> None:
    env = ContextualEnv("Pendulum-v1", {0: {"max_speed": 30.0, "g": 80.0}})
    assert env.observation_space.high[2] == 40.0 and env.observation_space.low[2] == -40.0
    env.reset(seed=0)
    env.unwrapped.state = np.array([0.1, 0.0])  # near the top: falls fast
    observations = np.array([env.step(np.zeros(1, np.float32))[0] for _ in range(20)])
    assert np.abs(observations[:, 2]).max() > 8.0  # beyond Gymnasium's own bound
    assert all(env.observation_space.contains(obs) for obs in observations)


# -- choosing instances --------------------------------------------------------------------
CONTEXTS = {i: {"length": 0.2 + 0.1 * i} for i in range(10)}


def test_next_instance_is_used_once_at_the_next_reset() -> None:
    env = ContextualEnv("CartPole-v1", CONTEXTS, instance_mode="round_robin")
    env.next_instance = 7
    env.reset(seed=0)
    assert env.instance_id == 7 and env.context["length"] == pytest.approx(0.9)
    assert env.unwrapped.length == pytest.approx(0.9) and env.next_instance is None
    assert env.context == {
        **{n: f.default for n, f in CONTEXT_FEATURES["CartPole-v1"].items()},
        "length": CONTEXTS[7]["length"],
    }
    env.reset()
    assert env.instance_id == 0  # round robin did not count the chosen instance


def test_round_robin_follows_the_instance_set_order() -> None:
    env = ContextualEnv("CartPole-v1", {5: {}, 2: {}, 9: {}}, instance_mode="round_robin")
    assert env.instance_ids == [5, 2, 9]
    env.reset(seed=0)
    assert [env.instance_id] + _draws(env, 6) == [5, 2, 9, 5, 2, 9, 5]
    env.reset(seed=1)  # a seeded reset restarts the order
    assert env.instance_id == 5


def _draws(env: ContextualEnv, n: int = 30) -> list[int]:
    draws = []
    for _ in range(n):
        env.reset()
        draws.append(env.instance_id)
    return draws


def test_random_mode_is_seeded_and_covers_the_set() -> None:
    first = _draws(ContextualEnv("CartPole-v1", CONTEXTS, seed=4))
    assert first == _draws(ContextualEnv("CartPole-v1", CONTEXTS, seed=4))
    assert first != _draws(ContextualEnv("CartPole-v1", CONTEXTS, seed=5))
    assert len(set(first)) >= 8


def test_set_instance_set_widens_and_clears_a_missing_next_instance() -> None:
    env = ContextualEnv("CartPole-v1", {0: {}}, seed=0)
    env.next_instance = 0
    env.set_instance_set({1: {"length": 2.0}, 2: {"length": 3.0}})
    assert env.instance_ids == [1, 2] and env.next_instance is None
    assert {_draws(env, 1)[0] for _ in range(10)} <= {1, 2}
    env.next_instance = 2
    env.set_instance_set({2: {"length": 3.0}, 3: {}})
    assert env.next_instance == 2


# -- looprl environments -------------------------------------------------------------------
def test_contextual_environment_is_a_gym_environment() -> None:
    env = ContextualEnvironment("CartPole-v1", CONTEXTS, hide_context=False, seed=0)
    assert isinstance(env, GymEnvironment) and env.name == "CartPole-v1"
    state = env.reset()
    assert isinstance(state, State) and state.observation.shape == (10,)
    assert contextual_envs(env) == [env.contextual]


def test_duplicate_makes_independent_copies_found_in_order() -> None:
    env = ContextualEnvironment("CartPole-v1", CONTEXTS, seed=0).duplicate(4)
    assert isinstance(env, GymVectorEnvironment)
    env.reset()
    wrappers = contextual_envs(env)
    copies = [copy.env for copy in env.env.envs]  # (each in looprl's CheckedOutput)
    assert len(wrappers) == 4 and wrappers == copies  # in the copies' order
    assert len({id(w.unwrapped) for w in wrappers}) == 4
    draws = [_draws(w, 10) for w in wrappers]
    assert len({tuple(d) for d in draws}) == 4  # each copy its own RNG
    wrappers[0].next_instance = 9
    wrappers[0].reset()
    assert wrappers[0].unwrapped.length == pytest.approx(1.1)
    second = wrappers[1]
    assert second.unwrapped.length == pytest.approx(CONTEXTS[second.instance_id]["length"])


def test_unseeded_copies_draw_different_instances() -> None:
    env = ContextualEnvironment("CartPole-v1", CONTEXTS).duplicate(3)
    env.reset()
    assert len({tuple(_draws(w, 10)) for w in contextual_envs(env)}) == 3


def test_unseeded_round_robin_copies_start_at_the_first_instance() -> None:
    env = ContextualEnvironment("CartPole-v1", CONTEXTS, instance_mode="round_robin").duplicate(3)
    env.reset()  # (each copy's own seeding reset must not take instance 0)
    assert [w.instance_id for w in contextual_envs(env)] == [0, 0, 0]


def test_next_instance_is_honoured_at_a_vector_autoreset() -> None:
    env = ContextualEnvironment(
        "CartPole-v1", CONTEXTS, seed=0, instance_mode="round_robin"
    ).duplicate(3)
    env.reset()
    wrappers = contextual_envs(env)
    assert [w.instance_id for w in wrappers] == [0, 0, 0]
    wrappers[1].next_instance = 8
    for _ in range(100):
        state = env.step(np.ones(3, dtype=np.int64))  # pushing right: falls within ~10 steps
        if state.done[1]:
            break
        assert wrappers[1].instance_id == 0  # not before the autoreset
    assert state.done[1] and wrappers[1].next_instance == 8
    env.step(np.ones(3, dtype=np.int64))  # the copy's autoreset
    assert wrappers[1].instance_id == 8 and wrappers[1].unwrapped.length == pytest.approx(1.0)
    assert wrappers[1].next_instance is None


# -- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ContextualEnv("Foo-v0"), "supported environments: CartPole-v1, Pendulum-v1"),
        (lambda: ContextualEnv("CartPole-v0"), "No context features for 'CartPole-v0'"),
        (
            lambda: ContextualEnv("CartPole-v1", {0: {"lenght": 1.0}}),
            "no context feature 'lenght'. Did you mean 'length'.*Valid features: gravity",
        ),
        (
            lambda: ContextualEnv("CartPole-v1", {0: {"length": 20.0}}),
            r"'length' = 20.0 is outside its bounds \[0.05, 10.0\]",
        ),
        (lambda: ContextualEnv("CartPole-v1", {0: {"masspole": -1.0}}), "outside its bounds"),
        (lambda: ContextualEnv("CartPole-v1", {0: {"length": float("nan")}}), "outside"),
        (lambda: ContextualEnv("CartPole-v1", {0: {"length": "long"}}), "must be a number"),
        (lambda: ContextualEnv("CartPole-v1", {}), "non-empty"),
        (lambda: ContextualEnv("CartPole-v1", {"a": {}}), "Instance ids must be integers"),
        # (were: AttributeError, and a context hidden or shown by the truth of the value)
        (lambda: ContextualEnv("CartPole-v1", {0: 0.5}), "Instance 0's context must be a dict"),
        (lambda: ContextualEnv("CartPole-v1", hide_context="no"),
         "hide_context must be True or False, got 'no'"),
        (lambda: ContextualEnv("CartPole-v1", hide_context=None), "got None"),
        (
            lambda: ContextualEnv("CartPole-v1", instance_mode="cyclic"),
            "Unknown instance_mode 'cyclic'; use one of random, round_robin",
        ),
        (lambda: ContextualEnv(gym.make("CartPole-v1").unwrapped.__class__()), "no spec"),
    ],
)
def test_bad_input_gives_one_line_errors(make, message: str) -> None:
    with pytest.raises(ValueError, match=message) as error:
        make()
    assert "\n" not in str(error.value)


def test_next_instance_outside_the_set_is_refused() -> None:
    env = ContextualEnv("CartPole-v1", {0: {}, 1: {}})
    with pytest.raises(ValueError, match=r"next_instance 5 is not in the instance set \(ids 0, 1"):
        env.next_instance = 5


def test_contextual_envs_without_a_contextual_env() -> None:
    with pytest.raises(ValueError, match="CartPole-v1 holds no ContextualEnv"):
        contextual_envs(GymEnvironment("CartPole-v1"))
    with pytest.raises(ValueError, match="no list of environments"):
        contextual_envs(GymVectorEnvironment("CartPole-v1", 2))  # Gymnasium's native one
    with pytest.raises(TypeError, match="needs a looprl or Gymnasium environment"):
        contextual_envs("CartPole-v1")
    assert contextual_envs(gym.wrappers.RecordEpisodeStatistics(ContextualEnv("Acrobot-v1")))


# -- instance sets -------------------------------------------------------------------------
def test_sample_contexts_respects_the_ranges_and_the_seed() -> None:
    ranges = {"tau": (0.01, 0.03), "length": (0.25, 1.0)}
    contexts = sample_contexts("CartPole-v1", 50, ranges, seed=0)
    assert list(contexts) == list(range(50))
    for context in contexts.values():
        assert list(context) == ["length", "tau"]  # the features' order
        assert all(ranges[n][0] <= v <= ranges[n][1] for n, v in context.items())
    lengths = [c["length"] for c in contexts.values()]
    assert min(lengths) < 0.4 and max(lengths) > 0.85  # spread over the range
    assert contexts == sample_contexts("CartPole-v1", 50, ranges, seed=0)
    assert contexts != sample_contexts("CartPole-v1", 50, ranges, seed=1)
    env = ContextualEnv("CartPole-v1", contexts, seed=0)
    env.reset(seed=0)
    assert env.unwrapped.length == contexts[env.instance_id]["length"]


def test_sample_contexts_rejects_bad_ranges() -> None:
    with pytest.raises(ValueError, match=r"'length' = 50.0 is outside its bounds \[0.05, 10.0\]"):
        sample_contexts("CartPole-v1", 3, {"length": (0.5, 50.0)}, seed=0)
    with pytest.raises(ValueError, match="low <= high"):
        sample_contexts("CartPole-v1", 3, {"length": (1.0, 0.5)}, seed=0)
    with pytest.raises(ValueError, match=r"^features maps context features to \(low, high\) "):
        sample_contexts("CartPole-v1", 2, None)  # (was: AttributeError on None.items)
    with pytest.raises(ValueError, match="Did you mean 'gravity'"):
        sample_contexts("MountainCar-v0", 3, {"gravty": (0.001, 0.002)}, seed=0)
    with pytest.raises(ValueError, match="positive number of instances"):
        sample_contexts("CartPole-v1", 0, {}, seed=0)
    with pytest.raises(ValueError, match="supported environments"):
        sample_contexts("Pong-v5", 2, {}, seed=0)


def test_instances_with_no_features_drawn_are_said_to_be_alike(caplog) -> None:
    """``looprl run context.train=5`` (no ``context.ranges``) trained on five copies of the
    default instance without a word."""
    import logging
    with caplog.at_level(logging.WARNING):
        assert sample_contexts("CartPole-v1", 5, {}, seed=0) == {i: {} for i in range(5)}
        sample_contexts("CartPole-v1", 1, {}, seed=0)  # (one: the default instance, unsaid)
    assert caplog.text.count("5 instances of CartPole-v1 with no features drawn are 5 copies "
                             "of the default one: give ranges") == 1
