"""Tests of ``GymEnvironment`` and ``GymVectorEnvironment`` (looprl.environments)."""

from __future__ import annotations

from functools import partial

import gymnasium as gym
import numpy as np
import pytest
import torch

from looprl.core import State, StateArray
from looprl.environments import (
    DuplicateEnvironment,
    Environment,
    EnvironmentFailure,
    GymEnvironment,
    GymVectorEnvironment,
    VectorEnvironment,
    check_env_id,
)
from looprl.environments.wrappers import Wrappers


# -- GymEnvironment ------------------------------------------------------------------------
def test_reset_and_step_with_tensor_and_int_actions() -> None:
    env = GymEnvironment("CartPole-v1", seed=0)
    assert isinstance(env, Environment)
    assert env.name == "CartPole-v1"
    state = env.reset()
    assert isinstance(state, State)
    assert state.observation.shape == (4,)
    assert state.observation.dtype == torch.float32
    assert (state.reward, state.done, state.mask) == (0.0, False, 1.0)
    assert env.state is state and env.done is False
    for action in (torch.tensor(1), 0, torch.tensor([1]), np.int64(0)):
        state = env.step(action)
        assert state.reward == 1.0
        assert env.state is state
    env.close()


def test_state_before_reset_raises() -> None:
    env = GymEnvironment("CartPole-v1")
    with pytest.raises(RuntimeError, match="reset"):
        _ = env.state


def test_spaces() -> None:
    env = GymEnvironment("CartPole-v1")
    assert env.action_space == gym.spaces.Discrete(2)
    assert isinstance(env.observation_space, gym.spaces.Box)
    assert env.observation_space.shape == (4,)
    assert env.state_space is env.observation_space


def test_episode_ends_with_done_and_zero_mask() -> None:
    env = GymEnvironment("CartPole-v1", seed=1)
    env.reset()
    for _ in range(500):
        state = env.step(1)  # always pushing right falls over quickly
        if env.done:
            break
    assert env.done and state.done
    assert state.mask == 0.0 and state.terminated and not state.truncated


def test_same_seed_same_first_observation() -> None:
    first = GymEnvironment("CartPole-v1", seed=123).reset().observation
    again = GymEnvironment("CartPole-v1", seed=123).reset().observation
    other = GymEnvironment("CartPole-v1", seed=124).reset().observation
    assert torch.equal(first, again)
    assert not torch.equal(first, other)
    env = GymEnvironment("CartPole-v1")
    assert torch.equal(env.reset(seed=123).observation, first)


def test_unknown_id_suggests_close_match() -> None:
    with pytest.raises(ValueError, match="Did you mean 'CartPole-v1'") as info:
        GymEnvironment("CartPol-v1")
    assert "CartPol-v1" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError):
        check_env_id("NoSuchThingAtAll-v9")
    check_env_id("CartPole-v1")  # no error for a registered id


def test_a_fraction_for_a_whole_number_argument_is_one_line_when_the_env_is_made() -> None:
    """Was: ``looprl run ... env=HalfCheetah-v5 +env_kwargs.frame_skip=2.5`` failed at the
    first step with MuJoCo's long ``TypeError``; an int for a float default stays fine."""
    assert GymEnvironment("Pendulum-v1", g=9).reset() is not None
    pytest.importorskip("mujoco")
    for value in (2.5, float("nan")):
        with pytest.raises(TypeError, match=r"^HalfCheetah-v5's argument frame_skip takes a whole "
                           r"number \(default 5\), got (2.5|nan) \(env_kwargs.frame_skip\)$"):
            GymEnvironment("HalfCheetah-v5", frame_skip=value)
    GymEnvironment("HalfCheetah-v5", forward_reward_weight=2).close()
    # (a whole float is that int: it failed at the first step with MuJoCo's TypeError)
    cheetah = GymEnvironment("HalfCheetah-v5", frame_skip=2.0)
    cheetah.reset()
    cheetah.step(cheetah.action_space.sample())
    assert cheetah.env.unwrapped.frame_skip == 2 and type(cheetah.env.unwrapped.frame_skip) is int
    cheetah.close()
    # (was refused: a float parameter with an int default, ``forward_reward_weight: float = 1``)
    GymEnvironment("Ant-v5", forward_reward_weight=0.5).close()


class _Counted(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (1,))
    action_space = gym.spaces.Discrete(2)

    def __init__(self, copies: int, every: int | None = 3, scale: float | None = 1):
        pass


def test_a_fraction_for_an_int_annotation_is_refused_whatever_its_default() -> None:
    """An ``int`` parameter without a default named none (``(default <class
    'inspect._empty'>)``); an ``int | None = 3`` took 2.5; a ``float | None = 1`` takes it."""
    gym.register("looprl-test/Counted-v0", entry_point=_Counted)
    try:
        with pytest.raises(TypeError, match=r"argument copies takes a whole number, got 2.5 "):
            GymEnvironment("looprl-test/Counted-v0", copies=2.5)
        with pytest.raises(TypeError, match=r"argument every takes a whole number \(default 3\)"):
            GymEnvironment("looprl-test/Counted-v0", copies=1, every=2.5)
        from looprl.environments.gym_helpers import check_text_arguments
        check_text_arguments("looprl-test/Counted-v0", {"copies": 1, "scale": 0.5})
    finally:
        gym.registry.pop("looprl-test/Counted-v0")


def test_an_unknown_mujoco_id_suggests_only_ids_gymnasium_can_make() -> None:
    """Was: 'Hopper-v9' suggested 'Hopper-v3', one of Gymnasium 1.x's placeholders for the
    mujoco-py ids it dropped (its make raises)."""
    pytest.importorskip("mujoco")
    from looprl.environments import MujocoEnvironment, make
    for build in (GymEnvironment, MujocoEnvironment, make):
        with pytest.raises(ValueError, match="Did you mean 'Hopper-v5', 'Hopper-v4'") as info:
            build("Hopper-v9")
        assert "Hopper-v3" not in str(info.value) and "Hopper-v2" not in str(info.value)


def test_a_mujoco_py_id_gymnasium_dropped_names_the_version_to_use(capsys) -> None:
    """Was: ``GymEnvironment('Hopper-v3')`` printed a DeprecationWarning, then Gymnasium's
    ImportError (moved to gymnasium-robotics)."""
    pytest.importorskip("mujoco")
    from looprl.environments import GymVectorEnvironment, make
    for build, env_id in ((GymEnvironment, "Hopper-v3"), (make, "Ant-v2"),
                          (partial(GymVectorEnvironment, n_envs=2), "Walker2d-v3")):
        with pytest.raises(ImportError, match=rf"^{env_id} needs mujoco-py, which Gymnasium 1.x "
                           rf"dropped: use {env_id[:-1]}5$"):
            build(env_id)
    assert "out of date" not in capsys.readouterr().err


def test_an_argument_of_the_wrong_type_is_one_line_naming_it_when_the_env_is_made() -> None:
    """Was: ``looprl run ... env=CartPole-v1 +env_kwargs.sutton_barto_reward=abc`` trained on
    the other reward (text is true), and HalfCheetah's ``ctrl_cost_weight=abc`` failed at the
    first step, after the preset was built (``xml_file=123``: a traceback out of gym.make)."""
    with pytest.raises(TypeError, match=r"^CartPole-v1's argument sutton_barto_reward takes "
                       r"true or false \(default False\), got the text 'abc' "):
        GymEnvironment("CartPole-v1", sutton_barto_reward="abc")
    with pytest.raises(TypeError, match="argument g takes a number .default 10.0."):
        GymVectorEnvironment("Pendulum-v1", 2, g="abc")
    assert GymEnvironment("CartPole-v1", sutton_barto_reward=True).reset() is not None
    pytest.importorskip("mujoco")
    with pytest.raises(TypeError, match="HalfCheetah-v5's argument ctrl_cost_weight takes a "
                       "number"):
        GymEnvironment("HalfCheetah-v5", ctrl_cost_weight="abc")
    with pytest.raises(TypeError, match="argument contact_force_range takes a tuple"):
        GymEnvironment("Ant-v5", contact_force_range="abc")
    with pytest.raises(ValueError, match=r"^HalfCheetah-v5 made with \{'xml_file': 123\} raised "
                       "AttributeError: "):
        GymEnvironment("HalfCheetah-v5", xml_file=123)


def test_an_unknown_argument_or_render_mode_is_the_same_line_for_one_copy_and_a_vector() -> None:
    """Was: CartPole's own vector env (``gym.make_vec``) raised a TypeError that named no id,
    took text for a bool, and both took ``render_mode='x'`` (Gymnasium warns: no frames)."""
    for make in (partial(GymEnvironment, "CartPole-v1"),
                 partial(GymVectorEnvironment, "CartPole-v1", 2)):
        with pytest.raises(TypeError, match=r"unexpected keyword argument 'bogus' was raised "
                           r"from the environment creator for CartPole-v1 with kwargs "
                           r"\(\{'bogus': 3\}\)$"):
            make(bogus=3)
        with pytest.raises(ValueError, match=r"^CartPole-v1('s vector environment)? offers the "
                           r"render modes .*'rgb_array' \(or None\), got render_mode='x'$"):
            make(render_mode="x")
        make(render_mode="rgb_array").close()
    with pytest.raises(TypeError, match="sutton_barto_reward takes true or false"):
        GymVectorEnvironment("CartPole-v1", 2, sutton_barto_reward="abc")
    GymEnvironment("Pendulum-v1", render_mode="rgb_array_list").close()  # (gym.make wraps it)


def test_a_pettingzoo_game_given_as_a_gymnasium_id_points_to_the_multiagent_presets() -> None:
    pytest.importorskip("pettingzoo")
    # was "Unknown environment 'tictactoe_v3'. (Atari and MuJoCo ids need the ... extras)"
    # (looprl run algorithm=dqn env=tictactoe_v3, OnlineRunner(dqn, "tictactoe_v3"))
    for name in ("tictactoe_v3", "classic.rps_v2"):
        with pytest.raises(ValueError, match=f"^'{name}' is a PettingZoo game: train it with a "
                           f"multi-agent preset \\(looprl run algorithm=multiagent/ppo "
                           f"env={name},") as info:
            GymEnvironment(name)
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="^Unknown environment 'tictactoe_v9'"):
        check_env_id("tictactoe_v9")


def test_an_id_whose_module_is_missing_names_the_id_and_what_to_install() -> None:
    """Was: ``looprl run env=phys2d/CartPole-v1`` said only "No module named 'jax'" (Gymnasium's
    phys2d and tabular ids need its jax extra, flax included)."""
    gym.register("LooprlTestNeedsJax-v0", entry_point="jax_not_installed_here.envs:Env")
    try:
        with pytest.raises(ModuleNotFoundError, match=r"^LooprlTestNeedsJax-v0 needs the module "
                                                      r"'jax_not_installed_here', which is not "
                                                      r"installed$"):
            GymEnvironment("LooprlTestNeedsJax-v0")
    finally:
        del gym.registry["LooprlTestNeedsJax-v0"]
    if "phys2d/CartPole-v1" in gym.registry:
        try:
            import jax  # noqa: F401
        except ImportError:
            with pytest.raises(ModuleNotFoundError, match=r'pip install "gymnasium\[jax\]"$'):
                GymEnvironment("phys2d/CartPole-v1")


def test_a_missing_dependency_names_the_id() -> None:
    """Gymnasium's ``DependencyNotInstalled`` (Box2D's) says what to install, not for which id:
    the id goes first."""
    def needs_box2d(**kwargs):
        raise gym.error.DependencyNotInstalled("Box2D is not installed")

    gym.register("LooprlTestNeedsBox2D-v0", entry_point=needs_box2d)
    try:
        with pytest.raises(gym.error.DependencyNotInstalled,
                           match=r"^LooprlTestNeedsBox2D-v0: Box2D is not installed$"):
            GymEnvironment("LooprlTestNeedsBox2D-v0")
    finally:
        del gym.registry["LooprlTestNeedsBox2D-v0"]


def test_wraps_existing_gym_env() -> None:
    env = GymEnvironment(gym.make("CartPole-v1"))
    assert env.name == "CartPole-v1"
    assert env.reset().observation.shape == (4,)


def test_truncation_keeps_mask_one() -> None:
    env = GymEnvironment("CartPole-v1", seed=0, max_episode_steps=5)
    env.reset()
    states = [env.step(i % 2) for i in range(5)]  # alternate: does not fall in 5 steps
    assert [s.done for s in states] == [False] * 4 + [True]
    assert states[-1].mask == 1.0
    assert states[-1].truncated and not states[-1].terminated
    assert env.done


def test_pendulum_continuous_actions() -> None:
    env = GymEnvironment("Pendulum-v1", seed=0)
    assert isinstance(env.action_space, gym.spaces.Box)
    state = env.reset()
    assert state.observation.shape == (3,) and state.observation.dtype == torch.float32
    for action in (torch.tensor([0.5]), np.array([0.1], dtype=np.float32), 0.3):
        state = env.step(action)
        assert isinstance(state.reward, float) and state.reward <= 0.0
        assert state.observation.shape == (3,)


# -- GymVectorEnvironment ------------------------------------------------------------------
def test_duplicate_shapes_and_dtypes() -> None:
    env = GymEnvironment("CartPole-v1").duplicate(4)
    assert isinstance(env, GymVectorEnvironment) and isinstance(env, VectorEnvironment)
    assert env.n_envs == 4 and env.name == "CartPole-v1"
    assert env.observation_space.shape == (4,)
    assert env.action_space == gym.spaces.Discrete(2)
    for state in (env.reset(), env.step(torch.ones(4, dtype=torch.long))):
        assert isinstance(state, StateArray) and state.shape == (4,)
        assert state.observation.shape == (4, 4)
        assert state.observation.dtype == torch.float32
        assert state.reward.dtype == torch.float32 and state.reward.shape == (4,)
        assert state.done.dtype == torch.bool and state.done.shape == (4,)
        assert state.mask.dtype == torch.float32 and state.mask.shape == (4,)
    assert env.state is env.state_array
    env.close()


def test_vector_reset_values() -> None:
    env = GymVectorEnvironment("CartPole-v1", 3, seed=7)
    state = env.reset()
    assert torch.equal(state.reward, torch.zeros(3))
    assert not state.done.any()
    assert torch.equal(state.mask, torch.ones(3))
    again = GymVectorEnvironment("CartPole-v1", 3, seed=7).reset()
    assert torch.equal(state.observation, again.observation)


def test_next_step_autoreset() -> None:
    env = GymVectorEnvironment("CartPole-v1", 4, seed=0)
    env.reset()
    checked = 0
    for _ in range(200):
        previous = env.state
        state = env.step(torch.ones(4, dtype=torch.long))  # falls over after ~10 steps
        rows = previous.done
        if rows.any():
            assert torch.equal(state.reward[rows], torch.zeros(int(rows.sum())))
            assert not state.done[rows].any()
            assert torch.equal(state.mask[rows], torch.ones(int(rows.sum())))
            checked += int(rows.sum())
        live = ~previous.done
        assert torch.equal(state.reward[live], torch.ones(int(live.sum())))
        if checked >= 4:
            break
    assert checked >= 4
    done_state = previous
    assert torch.equal(done_state.mask[done_state.done], torch.zeros(int(done_state.done.sum())))


def test_vector_truncation_keeps_mask_one() -> None:
    env = GymVectorEnvironment("CartPole-v1", 2, seed=0, max_episode_steps=5)
    env.reset()
    for t in range(5):
        state = env.step(torch.tensor([t % 2, 1 - t % 2]))
        if t < 4:
            assert not state.done.any()
    assert torch.equal(state.done, torch.tensor([True, True]))
    assert torch.equal(state.mask, torch.ones(2))
    assert torch.equal(state.truncated, torch.tensor([True, True]))
    after = env.step(torch.tensor([0, 0]))
    assert not after.done.any() and torch.equal(after.reward, torch.zeros(2))


def test_duplicate_keeps_make_kwargs() -> None:
    env = GymEnvironment("CartPole-v1", max_episode_steps=5).duplicate(2)
    env.reset()
    for t in range(5):
        state = env.step(torch.tensor([t % 2, 1 - t % 2]))
    assert state.done.all()


def test_pendulum_vector_uses_sync_fallback() -> None:
    env = GymEnvironment("Pendulum-v1").duplicate(3)
    assert isinstance(env.env, gym.vector.SyncVectorEnv)
    assert isinstance(env.action_space, gym.spaces.Box)
    env.reset()
    state = env.step(torch.zeros(3, 1))
    assert state.observation.shape == (3, 3) and state.observation.dtype == torch.float32
    assert state.reward.shape == (3,) and (state.reward <= 0).all()
    assert not state.done.any()


def test_cartpole_vector_is_native() -> None:
    env = GymVectorEnvironment("CartPole-v1", 2)
    assert not isinstance(env.env, gym.vector.SyncVectorEnv)


def test_vector_unknown_id() -> None:
    with pytest.raises(ValueError, match="Did you mean"):
        GymVectorEnvironment("CartPol-v1", 2)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])  # (native, sync fallback)
def test_a_vectorization_mode_is_one_line_pointing_to_a_made_async_vector_env(env_id) -> None:
    with pytest.raises(TypeError, match=r"no vectorization_mode.*gymnasium\.make_vec\(id"):
        GymVectorEnvironment(env_id, 2, vectorization_mode="async")


def test_gym_make_arguments_next_to_a_factory_are_refused_not_dropped() -> None:
    with pytest.raises(TypeError, match=r"\['max_episode_steps'\].*inside the factory"):
        GymVectorEnvironment(partial(gym.make, "CartPole-v1"), 2, max_episode_steps=5)
    env = GymEnvironment("CartPole-v1", wrap_env=gym.wrappers.FlattenObservation,
                         max_episode_steps=5).duplicate(2)  # (its copies' factory holds them)
    env.reset()
    for _ in range(4):
        env.step(torch.tensor([0, 1]))
    assert env.step(torch.tensor([0, 1])).done.all()


def test_invalid_action_is_a_clear_error() -> None:
    env = GymEnvironment("CartPole-v1")
    env.reset()
    expected = r"Invalid action 5 for CartPole-v1 \(action space Discrete\(2\)\)"
    with pytest.raises(ValueError, match=expected):
        env.step(5)


def test_a_discrete_action_that_is_no_whole_number_is_one_line() -> None:
    """A vector (action probabilities), a fraction or text for a ``Discrete`` space: one
    line, not NumPy's reshape error, ``int()``'s, or ``0.7`` silently taken as action 0."""
    env = GymEnvironment("CartPole-v1")
    env.reset()
    for action in (torch.tensor([0.2, 0.8]), torch.tensor(0.7), "a", None):
        with pytest.raises(ValueError, match=r"Discrete\(2\) is one whole number"):
            env.step(action)
    for action in (1, torch.tensor(1), torch.tensor([0]), np.int64(1), 1.0):
        env.step(action)


def test_a_number_of_copies_is_any_whole_number_and_else_one_line() -> None:
    """A NumPy integer (``np.int64(2)`` from a config or an array) was refused."""
    env = GymVectorEnvironment("CartPole-v1", np.int64(2))
    assert env.n_envs == 2 and env.reset(seed=0).observation.shape == (2, 4)
    env.close()
    for bad in (0, 2.0, "2", True):
        with pytest.raises(TypeError, match="needs the number of copies n_envs as an int >= 1"):
            GymVectorEnvironment("CartPole-v1", bad)


def test_invalid_vector_actions_are_a_clear_error() -> None:
    env = GymEnvironment("CartPole-v1").duplicate(4)
    env.reset()
    with pytest.raises(ValueError, match=r"Invalid actions .* Discrete\(2\)"):
        env.step(torch.tensor([0, 1, 5, 0]))


def test_duplicate_actions_of_another_count_are_one_line() -> None:
    """(was: a 2-d action's NumPy repr spread the message over several lines)"""
    env = DuplicateEnvironment([GymEnvironment("Pendulum-v1") for _ in range(2)])
    env.reset()
    with pytest.raises(ValueError) as error:
        env.step(torch.zeros(3, 1))
    assert "\n" not in str(error.value)
    assert str(error.value).startswith("Pendulum-v1: step() takes one action per environment, "
                                       "a list or a tensor of 2 rows, got 3 rows (array([[0.],")


@pytest.mark.parametrize("make", [lambda: GymVectorEnvironment("CartPole-v1", 3),  # native
                                  lambda: GymVectorEnvironment("Acrobot-v1", 3),  # sync
                                  lambda: DuplicateEnvironment(
                                      [GymEnvironment("CartPole-v1") for _ in range(3)])])
def test_vector_discrete_actions_as_lists_whole_floats_or_columns(make) -> None:
    """Every vector environment takes a list, a tuple, whole floats or a column of one action
    per copy; a wrong count or a fraction is one line, not Gymnasium's ``zip()`` or ``list -
    float`` errors (blamed on the environment) or a silently dropped extra action."""
    env = make()
    env.reset(seed=0)
    for action in ([0, 1, 0], (1, 1, 0), torch.tensor([0.0, 1.0, 1.0]),
                   torch.tensor([[0], [1], [0]])):
        assert env.step(action).reward.shape == (3,)
    for action in (torch.tensor([0, 1]), torch.tensor([0, 1, 0, 1]), 1,
                   torch.tensor([0.7, 1.0, 0.0])):
        with pytest.raises(ValueError, match=r"one (action per environment|whole number)"
                           ) as info:
            env.step(action)
        assert not isinstance(info.value, EnvironmentFailure)


def test_an_observation_unlike_its_declared_space_is_one_line() -> None:
    """Observations of another shape than the declared ``observation_space`` (which the
    presets size their networks from): one line, not a matmul error or Gymnasium's "Output
    array is the wrong shape" blamed on the environment's reset."""

    class Misdeclared(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            return np.zeros(3, np.float32), {}

    expected = r"Misdeclared returned an observation of .*observation_space .* shape \(4,\)"
    with pytest.raises(ValueError, match=expected):
        GymEnvironment(Misdeclared()).reset()
    with pytest.raises(ValueError, match=expected) as info:
        GymEnvironment(Misdeclared()).duplicate(2).reset()
    assert not isinstance(info.value, EnvironmentFailure)



def test_a_vector_wrapper_as_wrap_env_or_env_wrappers_is_one_line() -> None:
    advice = r"wraps vector environments.*single-environment wrapper of gymnasium.wrappers"
    with pytest.raises(TypeError, match=r"wrap_env=NormalizeObservation " + advice):
        GymEnvironment("CartPole-v1", wrap_env=gym.wrappers.vector.NormalizeObservation)
    path = "gymnasium.wrappers.vector.NormalizeObservation"
    with pytest.raises(TypeError, match=rf"env wrapper '{path}' " + advice):
        Wrappers([path])


def test_env_wrappers_pickled_before_wrappers_moved_load() -> None:
    """The presets and checkpoints of ``env_wrappers`` runs that looprl saved before
    ``Wrappers`` moved to ``looprl.environments.wrappers`` refer to ``gym_helpers``' (was: a
    preset that no longer loaded)."""
    import io
    import zipfile

    from looprl.core.files import load_file

    saved, old = io.BytesIO(), io.BytesIO()
    torch.save(Wrappers(["gymnasium.wrappers.FlattenObservation"]), saved, pickle_protocol=2)
    with zipfile.ZipFile(saved) as new, zipfile.ZipFile(old, "w") as moved:
        for entry in new.namelist():  # (the class where an older looprl had it)
            moved.writestr(entry, new.read(entry).replace(b"looprl.environments.wrappers",
                                                          b"looprl.environments.gym_helpers"))
    wrap = load_file("old.pt", "looprl preset", "train it again", data=old.getvalue())
    assert isinstance(wrap, Wrappers)
    assert wrap(gym.make("FrozenLake-v1")).observation_space.shape == (16,)


def test_a_misdeclared_space_with_array_bounds_is_shown_on_one_line() -> None:
    """A ``FrameStackObservation``'s ``Box`` (array bounds, which NumPy prints on several
    lines) is named by its kind and shape."""
    stacked = gym.wrappers.FrameStackObservation(gym.make("CartPole-v1"), 4)
    for env in (GymEnvironment(gym.wrappers.TransformObservation(stacked, lambda o: o[:2], None)),
                GymVectorEnvironment(lambda: gym.wrappers.TransformObservation(
                    gym.wrappers.FrameStackObservation(gym.make("CartPole-v1"), 4),
                    lambda o: o[:2], None), 2)):
        with pytest.raises(ValueError, match=r"observation_space Box of shape \(4, 4\) "
                           r"\(float32\) has shape") as info:
            env.reset()
        assert "\n" not in str(info.value)

@pytest.mark.parametrize("mode", ["SAME_STEP", "DISABLED"])
def test_a_given_vector_env_without_next_step_autoreset_is_refused(mode) -> None:
    """Same-step autoreset gave a done row the next episode's first observation (a truncated
    episode bootstrapped from it) and played the action looprl sends a done row; disabled
    autoreset was Gymnasium's bare ``AssertionError`` at the step after an episode ended."""
    made = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync", vector_kwargs={
        "autoreset_mode": getattr(gym.vector.AutoresetMode, mode)})
    with pytest.raises(ValueError, match=f"next-step autoreset .* autoreset_mode={mode}"):
        GymVectorEnvironment(made, "cartpole")
    assert GymVectorEnvironment(gym.make_vec("CartPole-v1", 2), "cartpole").n_envs == 2


def test_a_vector_env_resetting_in_the_same_step_undeclared_is_one_line() -> None:
    """A vector environment of the user's that resets a done copy in the same step without
    saying so in its metadata (Gymnasium warns, nothing more) gave each done row the next
    episode's first observation as its last, silently: its ``final_obs`` info names it."""
    made = gym.vector.SyncVectorEnv([partial(gym.make, "CartPole-v1")] * 2,
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    made.metadata = {"render_modes": []}  # (undeclared)
    env = GymVectorEnvironment(made, "undeclared")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"^undeclared reset a copy in the step that ended its "
                                         r"episode .* same-step autoreset.* next-step"):
        for _ in range(100):  # (CartPole falls within 100 steps of one push)
            env.step(torch.ones(2, dtype=torch.long))
    env.close()
    made = gym.make_vec("CartPole-v1", 2)
    made.metadata = {"autoreset_mode": "next_step"}  # (was Python's bare enum ValueError)
    with pytest.raises(ValueError, match=r"metadata\['autoreset_mode'\] is 'next_step', no "
                                         r"gymnasium.vector.AutoresetMode: give "):
        GymVectorEnvironment(made, "cp")


def _same_step_cartpoles(num_envs: int, **kwargs) -> gym.vector.VectorEnv:
    return gym.vector.SyncVectorEnv([partial(gym.make, "CartPole-v1", **kwargs)] * num_envs,
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)


def test_an_ids_vector_entry_point_without_next_step_autoreset_is_not_used(monkeypatch) -> None:
    """An id whose ``vector_entry_point`` makes a same-step vector environment was stepped as a
    next-step one (``duplicate``, ``looprl run`` too): a done row's next action played in the
    new episode, episodes of one step, rewards across episodes. Its copies are made instead."""
    spec = gym.envs.registration.EnvSpec("looprl-test/SameStep-v0", entry_point=partial(
        gym.make, "CartPole-v1"), vector_entry_point=_same_step_cartpoles)
    monkeypatch.setitem(gym.registry, spec.id, spec)
    for env in (GymVectorEnvironment(spec.id, 2, seed=0), GymEnvironment(spec.id).duplicate(2)):
        assert env.env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
        state, ended = env.reset(), 0
        while ended < 2:
            ended += int(state.done.sum())
            after = env.step(torch.ones(2, dtype=torch.long))
            assert torch.equal(after.reward, (~state.done).float())  # 0: the reset step
            state = after
        env.close()


def test_what_is_no_gymnasium_env_is_one_line() -> None:
    """A class, a vector environment, a looprl environment or ``None`` given as the
    environment: one line (it was ``AttributeError: ... has no attribute 'spec'``, a vector
    environment silently played as one, a class as ``property.reset() raised``)."""
    from gymnasium.envs.classic_control import CartPoleEnv

    from looprl.environments import AtariEnvironment, MujocoEnvironment

    for env, words in ((CartPoleEnv, r"got the class CartPoleEnv: give CartPoleEnv\(...\)"),
                       (gym.make_vec("CartPole-v1", 2), "give it to GymVectorEnvironment"),
                       (GymEnvironment("CartPole-v1"), "got the looprl environment CartPole"),
                       (None, "or a gymnasium.Env, got NoneType None")):
        for make in (GymEnvironment, MujocoEnvironment):
            with pytest.raises(TypeError, match=words):
                make(env)
    with pytest.raises(TypeError, match="An Atari game is named by text"):
        AtariEnvironment(5)


def _flat_frozen_lake() -> GymEnvironment:
    return GymEnvironment(gym.wrappers.FlattenObservation(gym.make("FrozenLake-v1")))


def test_integer_observations_become_float32() -> None:
    env = _flat_frozen_lake()  # one-hot int64 observations
    observation = env.reset(seed=0).observation
    assert observation.dtype == torch.float32 and observation.shape == (16,)
    assert observation.sum() == 1.0
    batch = env.duplicate(2).reset(seed=0).observation
    assert batch.dtype == torch.float32 and batch.shape == (2, 16)


def test_tuple_observations_are_one_row_per_copy_in_every_vector_environment() -> None:
    """Blackjack's ``Tuple`` of three numbers is a ``(3,)`` observation; its vector environment
    gives a tuple of three batches, which became ``(3, n)`` (a ``StateArray`` error)."""
    env = GymEnvironment("Blackjack-v1")
    assert env.reset(seed=0).observation.shape == (3,)
    native = env.duplicate(2)
    listed = DuplicateEnvironment([GymEnvironment("Blackjack-v1") for _ in range(2)])
    assert torch.equal(native.reset(seed=0).observation, listed.reset(seed=0).observation)
    for _ in range(3):  # (stick: both copies' episodes end, and autoreset)
        stepped = native.step(torch.zeros(2, dtype=torch.long)).observation
        assert stepped.shape == (2, 3)
        assert torch.equal(stepped, listed.step(torch.zeros(2, dtype=torch.long)).observation)


def test_flat_uint8_observations_become_float32_and_uint8_images_stay() -> None:
    """A flat ``uint8`` observation is no image: the presets' MLPs take it as ``float32`` (it
    stayed ``uint8``: torch's "mat1 and mat2 must have the same dtype" in every preset)."""

    class Bytes(gym.Env):
        action_space = gym.spaces.Discrete(2)

        def __init__(self, shape):
            self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)

        def reset(self, seed=None, options=None):
            return np.full(self.observation_space.shape, 200, np.uint8), {}

        def step(self, action):
            return self.reset()[0], 1.0, False, False, {}

    for shape, dtype in (((8,), torch.float32), ((3, 10, 10), torch.uint8)):
        env = GymEnvironment(Bytes(shape))
        assert env.reset().observation.dtype == dtype
        assert env.step(0).observation.dtype == dtype
        for vector in (env.duplicate(2), DuplicateEnvironment([GymEnvironment(Bytes(shape)),
                                                               GymEnvironment(Bytes(shape))])):
            assert vector.reset().observation.dtype == dtype
            assert vector.step([0, 1]).observation.dtype == dtype
    from looprl.nn import MLP

    MLP(8, 2)(GymEnvironment(Bytes((8,))).duplicate(2).reset().observation)  # (the error)


def test_duplicate_keeps_the_wrappers_and_gives_each_copy_its_own_rng() -> None:
    env = _flat_frozen_lake()
    vector = env.duplicate(3)
    assert vector.name == "FrozenLake-v1" and vector.n_envs == 3
    copies = [c.env for c in vector.env.envs]  # (each in looprl's CheckedOutput)
    assert all(isinstance(c, gym.wrappers.FlattenObservation) for c in copies)
    assert len({id(c) for c in copies} | {id(env.env)}) == 4
    seeds = {str(c.unwrapped.np_random.bit_generator.state) for c in copies}
    assert len(seeds) == 3  # unseeded resets differ between copies

    def rollout(seed: int) -> list[torch.Tensor]:
        copy = env.duplicate(3)
        states = [copy.reset(seed=seed).observation]
        for _ in range(20):
            states.append(copy.step(torch.tensor([0, 1, 2])).observation)
        return states

    assert all(torch.equal(a, b) for a, b in zip(rollout(7), rollout(7)))  # seeded: same


class _Locked(gym.Wrapper):
    """An environment that cannot be deep-copied (it holds a lock)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        import threading

        self.lock = threading.Lock()


def test_duplicate_of_an_uncopyable_env_says_what_to_do() -> None:
    env = GymEnvironment(_Locked(gym.make("CartPole-v1")))
    with pytest.raises(ValueError, match="give GymVectorEnvironment a function that makes one"):
        env.duplicate(2)
    vector = GymVectorEnvironment(lambda: _Locked(gym.make("CartPole-v1")), 2)
    assert vector.name == "CartPole-v1" and vector.reset().observation.shape == (2, 4)


def test_an_environment_device_torch_cannot_use_is_one_line_when_made() -> None:
    """Seed 003's ``AtariEnvironment(..., device='cuda')`` on a machine without a GPU, or a
    misspelt device, was torch's AssertionError/RuntimeError at the first reset."""
    from looprl.environments import DuplicateEnvironment

    for make in (lambda d: GymEnvironment("CartPole-v1", device=d),
                 lambda d: GymVectorEnvironment("CartPole-v1", 2, device=d),
                 lambda d: DuplicateEnvironment([GymEnvironment("CartPole-v1")], device=d)):
        with pytest.raises(ValueError, match="Unknown device 'gpu'"):
            make("gpu")
        if not torch.cuda.is_available():
            with pytest.raises(ValueError, match="no CUDA GPU"):
                make("cuda")
        if not torch.backends.mps.is_available():  # (a Mac's GPU: was torch's RuntimeError)
            with pytest.raises(ValueError, match="Device 'mps' asked for, but torch .* cannot "
                               "use it here; use 'cpu'"):
                make("mps")
        assert make(torch.device("cpu")).reset() is not None


@pytest.mark.parametrize("env_class", ["GymEnvironment", "MujocoEnvironment"])
def test_a_mujoco_gl_backend_that_does_not_import_is_one_line(env_class: str) -> None:
    """``MUJOCO_GL`` naming a backend this machine lacks (or no backend) breaks ``import
    mujoco``: one ``ImportError`` naming the variable (was: a traceback out of PyOpenGL or
    mujoco's ``RuntimeError``). In a new process: this one may have imported mujoco."""
    import os
    import subprocess
    import sys

    code = (f"from looprl.environments import {env_class}\n"
            "try:\n"
            f"    {env_class}('InvertedPendulum-v5')\n"
            "except ImportError as error:\n"
            "    print(error)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "MUJOCO_GL": "no-such-backend"}, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "does not import with MUJOCO_GL='no-such-backend'" in done.stdout


def test_a_mujoco_render_without_a_backend_leaves_no_traceback_behind(monkeypatch) -> None:
    """``MUJOCO_GL=`` (empty), then rendering: Gymnasium's one-line ``RuntimeError`` (which
    ``looprl watch`` says), and nothing else (was: the half-made viewer's ``__del__`` printed
    an ``AttributeError`` traceback when collected, at exit)."""
    import gc
    import sys

    pytest.importorskip("mujoco")
    env = GymEnvironment("InvertedPendulum-v5", render_mode="rgb_array")
    env.reset(seed=0)
    heard: list = []
    monkeypatch.setattr(sys, "unraisablehook", heard.append)
    monkeypatch.setenv("MUJOCO_GL", "")  # (read at the first render)
    with pytest.raises(RuntimeError, match="MUJOCO_GL must be one of"):
        env.render()
    gc.collect()
    assert heard == []


def test_a_checkpointed_mujoco_env_keeps_its_arguments() -> None:
    """Gymnasium's v5 InvertedPendulum and InvertedDoublePendulum pickle their arguments by
    position into the wrong parameters: a checkpoint's copy trained with the defaults (0.01,
    10.0). looprl's copies pickle as their keyword arguments, one env or several."""
    import pickle

    pytest.importorskip("mujoco")
    env = GymEnvironment("InvertedPendulum-v5", reset_noise_scale=0.05)
    assert pickle.loads(pickle.dumps(env)).env.unwrapped._reset_noise_scale == 0.05
    copies = GymEnvironment("InvertedDoublePendulum-v5", healthy_reward=3.0).duplicate(2)
    assert pickle.loads(pickle.dumps(copies)).env.envs[1].unwrapped._healthy_reward == 3.0


def test_an_out_of_date_ids_warning_is_shown_at_its_first_make_only(monkeypatch) -> None:
    """``looprl train ppo CartPole-v0`` printed Gymnasium's warning twice: its training
    environment's ``gym.make``, then its evaluation copies' ``gym.make_vec``."""
    import warnings

    from looprl.environments import gym_helpers

    monkeypatch.setattr(gym_helpers, "_MADE_IDS", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # (as after any catch_warnings: Gymnasium's "once")
        env = GymEnvironment("CartPole-v0")
        copies = env.duplicate(2)
        GymEnvironment("CartPole-v0").close()
    old = [w for w in caught if "CartPole-v0 is out of date" in str(w.message)]
    assert len(old) == 1, old
    copies.close()
    env.close()
