"""A local run rebuilds the environment copies that raise, as a Ray run does (``max_restarts``;
``looprl run``: ``runtime.max_restarts``, 3 on both runtimes): it warns, records where and at
which frame, drops the episode in progress and trains on in the environments made again; past
the limit, where the environment cannot be made again, or where its API is wrong (a new copy's
is too), it stops in one line. ``tests/distributed/test_runtime_switch.py`` shows the same
episodes on Ray. An env call that hangs past ``env_timeout`` is named and interrupted, a fault
as any other (a Ray run's driver kills the actor)."""

from __future__ import annotations

import logging
import re
import signal
import threading
import time

import gymnasium as gym
import numpy as np
import pytest
from tests.distributed.faulty_env import PATH, FaultyCartPole

from looprl.collector.recovery import env_call
from looprl.environments import (
    AtariEnvironment,
    ContextualEnvironment,
    DuplicateEnvironment,
    EnvironmentFailure,
    GymEnvironment,
    GymVectorEnvironment,
    MujocoEnvironment,
)
from looprl.environments.atari import AtariVectorEnvironment
from looprl.environments.faults import EnvironmentOutputError
from looprl.environments.srl import make
from looprl.environments.srl_adapters import SRLAgentEnvironment
from looprl.experiments import ParallelEnvExperiment, SingleEnvExperiment
from looprl.presets.classic_control import dqn, ppo


def _dqn_run(env, max_restarts: int, tmp_path, **options) -> SingleEnvExperiment:
    return SingleEnvExperiment(dqn.env(env).build(), env, quiet=True, seed=0,
                               logdir=str(tmp_path), max_restarts=max_restarts, **options)


def test_a_copy_that_raises_is_rebuilt_and_the_run_trains_on(tmp_path, caplog) -> None:
    env = GymEnvironment(PATH, faults={0: "step"})  # (copy 0 is seeded 0: step 3 raises)
    experiment = _dqn_run(env, 2, tmp_path)
    with caplog.at_level(logging.WARNING):
        experiment.train(frames=300)
    assert experiment.restarts == [("actor0/copy0", 2)]  # (two steps taken, the third raised)
    assert experiment.frame >= 300
    warnings = [r.getMessage() for r in caplog.records if "rebuilt it" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith(  # (a Ray actor's line)
        f"actor0: {PATH} copy 0 raised in step (episode 1, step 3): RuntimeError: step fault "
        "injected; rebuilt it")
    assert warnings[0].endswith("went on (frame 2)")
    # the environment made again is the run's now: it trains, tests and closes in it
    assert experiment.env is not env and experiment.vector_env.envs == [experiment.env]
    assert experiment.runner.envs is experiment.vector_env
    experiment.flush_loggers()
    (results,) = tmp_path.glob("*/*/results.csv")  # (the cut episode of 2 steps is not in it)
    frame, episode, first = results.read_text().splitlines()[1].split(",")
    assert episode == "1" and int(frame) == 2 + float(first)
    assert len(experiment.test(episodes=2)) == 2


def test_past_max_restarts_the_run_stops_in_one_line(tmp_path) -> None:
    env = GymEnvironment(PATH, faults={0: "step", 1: "step"})  # (the rebuilt copy: seed 1)
    experiment = _dqn_run(env, 1, tmp_path)
    with pytest.raises(EnvironmentFailure) as error:
        experiment.train(frames=300)
    message = str(error.value)
    assert "\n" not in message and "step fault injected" in message
    assert "its copies were rebuilt 1 time already, the most max_restarts=1 (looprl run's " \
        "runtime.max_restarts) allows" in message


def test_without_restarts_the_first_exception_stops_the_run(tmp_path) -> None:
    experiment = _dqn_run(GymEnvironment(PATH, faults={0: "step"}), 0, tmp_path)
    with pytest.raises(EnvironmentFailure, match=r"step fault injected \(episode 1, step 3\)$"):
        experiment.train(frames=300)


def test_an_environment_given_as_an_object_cannot_be_rebuilt_and_says_so(tmp_path) -> None:
    experiment = _dqn_run(GymEnvironment(FaultyCartPole({0: "step"})), 3, tmp_path)
    with pytest.raises(EnvironmentFailure) as error:
        experiment.train(frames=300)
    assert "step fault injected" in str(error.value)
    assert str(error.value).endswith("it cannot be rebuilt: it was given as a gymnasium.Env, "
                                     "which cannot be made again: give GymEnvironment its id "
                                     "to have it rebuilt")


class FourTuple(gym.Env):
    """The old gym API: ``step`` returns 4 values."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        return np.zeros(4, np.float32), {}

    def step(self, action):
        return np.zeros(4, np.float32), 1.0, False, {}


def test_an_environment_whose_api_is_wrong_is_not_rebuilt(tmp_path) -> None:
    gym.register(id="FourTupleForRestarts-v0", entry_point=FourTuple)
    experiment = _dqn_run(GymEnvironment("FourTupleForRestarts-v0"), 3, tmp_path)
    with pytest.raises(EnvironmentFailure, match="the old gym API") as error:
        experiment.train(frames=50)
    assert experiment.runner.restarts.count == 0 and "rebuilt" not in str(error.value)
    given = _dqn_run(GymEnvironment(FourTuple()), 3, tmp_path)  # (looprl's own check)
    with pytest.raises(EnvironmentOutputError, match="the old gym API"):
        given.train(frames=50)
    assert given.runner.restarts.count == 0


def test_a_parallel_run_rebuilds_its_vector_environment_and_its_hooks_see_the_new_one(
        tmp_path) -> None:
    env = GymEnvironment(PATH, faults={1: "reset"}, at=2)  # (copy 1: its second reset raises)
    experiment = ParallelEnvExperiment(ppo.env(env).hyperparameters(n_envs=2, n_steps=16).build(),
                                       env, quiet=True, seed=0, logdir=str(tmp_path),
                                       max_restarts=3, meta=[])
    first = experiment.vector_env
    experiment.train(frames=400)
    assert [where for where, _ in experiment.restarts] == ["actor0/env"]
    assert experiment.vector_env is not first and isinstance(experiment.vector_env,
                                                             GymVectorEnvironment)
    assert experiment.training_env is experiment.runner.envs is experiment.vector_env
    assert experiment.frame >= 400 and experiment.env is env  # (its copies were duplicated)


@pytest.mark.parametrize("make", [
    lambda: GymEnvironment("CartPole-v1", wrap_env=gym.wrappers.FlattenObservation, seed=3,
                           max_episode_steps=50),
    lambda: MujocoEnvironment("Hopper", no_info=False),
    lambda: ContextualEnvironment("CartPole-v1", {0: {"length": 0.3}}, hide_context=False),
    lambda: AtariEnvironment("Pong"),
    lambda: DuplicateEnvironment([GymEnvironment("CartPole-v1"), GymEnvironment("CartPole-v1")]),
    lambda: GymVectorEnvironment("CartPole-v1", 2, max_episode_steps=50),
    lambda: AtariVectorEnvironment("Pong", 2),
    lambda: SRLAgentEnvironment(make("CartPole-v1"), ("CartPole-v1", {})),
], ids=["gym", "mujoco", "contextual", "atari", "duplicate", "gym_vector", "atari_vector",
        "srl_agent"])
def test_remade_makes_the_environment_anew_as_it_was_made(make) -> None:
    env = make()
    new = env.remade()
    try:
        assert type(new) is type(env) and new is not env and new.name == env.name
        assert new.observation_space == env.observation_space
        assert new.action_space == env.action_space
        assert getattr(new, "n_envs", 1) == getattr(env, "n_envs", 1)
        inner = getattr(env, "env", None)
        if inner is not None:  # (a Gymnasium env of its own, made with the same arguments)
            assert new.env is not inner and type(new.env) is type(inner)
            assert new.env.spec == inner.spec
        assert getattr(new, "no_info", None) == getattr(env, "no_info", None)
        assert getattr(new, "given_seed", None) == getattr(env, "given_seed", None)
        if isinstance(env, ContextualEnvironment):
            assert new.contextual.contexts == env.contextual.contexts
            assert new.contextual.hide_context is False
    finally:
        new.close()
        env.close()


def test_an_env_call_that_hangs_is_interrupted_and_the_copy_rebuilt(tmp_path, caplog) -> None:
    env = GymEnvironment(PATH, faults={0: "hang"}, hang=40.0)  # (its step 3 sleeps 40 s)
    experiment = _dqn_run(env, 2, tmp_path, env_timeout=2.0)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        experiment.train(frames=300)
    assert time.monotonic() - started < 30 and experiment.frame >= 300
    assert experiment.restarts == [("actor0/copy0", 2)]
    assert re.search(r"FaultyCartPole has been in step for \d+ s \(episode 1, step 3\), longer "
                     r"than env_timeout=2 s "
                     r"\(looprl run's runtime.env_timeout\): interrupting it$", caplog.text,
                     re.M), caplog.text
    assert "FaultyCartPole copy 0 raised in step (episode 1, step 3): EnvironmentTimeout: it " \
        "ran past env_timeout=2 s (looprl run's runtime.env_timeout); rebuilt it" in caplog.text
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL  # (the handler given back)


def test_without_restarts_a_hang_stops_the_run_in_one_line(tmp_path) -> None:
    experiment = _dqn_run(GymEnvironment(PATH, faults={0: "hang"}, hang=40.0), 0, tmp_path,
                          env_timeout=2)
    with pytest.raises(EnvironmentFailure, match=r"^tests.distributed.faulty_env:FaultyCartPole"
                       r".step\(\) raised EnvironmentTimeout: it ran past env_timeout=2 s "
                       r"\(looprl run's runtime.env_timeout\) \(episode 1, step 3\)$"):
        experiment.train(frames=300)


def test_a_hang_in_an_evaluation_stops_it_in_one_line(tmp_path) -> None:
    """An evaluation's env calls are watched as training's (was: only training's; a hung
    evaluation, ES's and Optuna's fitness and the final one included, waited forever)."""
    from looprl.experiments.experiment import evaluation_seed

    experiment = _dqn_run(GymEnvironment("CartPole-v1"), 0, tmp_path, env_timeout=2)
    experiment.train(frames=100)
    hangs = GymEnvironment(PATH, faults={evaluation_seed(0): "hang"}, hang=40.0)
    started = time.monotonic()
    with pytest.raises(EnvironmentFailure, match=r"FaultyCartPole.*raised EnvironmentTimeout: "
                                                 r"it ran past env_timeout=2 s"):
        experiment.test(episodes=1, env=hangs)
    assert time.monotonic() - started < 30


def test_a_hang_outside_the_main_thread_is_named_and_waited_for(tmp_path, caplog) -> None:
    """(Only the main thread takes a signal: a run trained in another is not interrupted.)"""
    experiment = _dqn_run(GymEnvironment(PATH, faults={0: "hang"}, hang=3.0), 2, tmp_path,
                          env_timeout=1.0)
    with caplog.at_level(logging.WARNING):
        thread = threading.Thread(target=experiment.train, kwargs={"frames": 300})
        thread.start()
        thread.join(60)
    assert not thread.is_alive() and experiment.frame >= 300 and experiment.restarts == []
    assert re.search(r"has been in step for \d+ s \(episode 1, step 3\), longer than "
                     r"env_timeout=1 s \(looprl run's "
                     r"runtime.env_timeout\): waiting for "
                     r"it \(Ctrl-C stops it\)$", caplog.text, re.M), caplog.text


def test_a_hang_line_places_the_call_of_a_one_copy_environment(tmp_path) -> None:
    """(``env_call`` of the single-env presets' vector environment of one copy: its episode
    and step, counted on across episodes; a vector environment of several: none.)"""
    experiment = _dqn_run(GymEnvironment("CartPole-v1"), 0, tmp_path)
    experiment.train(frames=200)
    experiment.flush_loggers()
    (results,) = tmp_path.glob("*/*/results.csv")
    runner, ended = experiment.runner, len(results.read_text().splitlines()) - 1
    assert ended >= 3  # (episodes of CartPole under random actions: about 22 steps)
    runner.env_call = (time.monotonic() - 5, None, "step")
    seconds, _, copy, method, episode, step = env_call(runner)
    assert seconds >= 5 and copy is None and method == "step"
    assert (episode, step) == (ended + 1, None)  # (trained whole episodes: this step resets)
    copies = runner._copies
    copies.over[0], copies.lengths[0] = False, 4  # (in episode ``ended``, its fifth step)
    assert env_call(runner)[-2:] == (ended, 5)
    parallel = ParallelEnvExperiment(ppo.env(GymEnvironment("CartPole-v1")).hyperparameters(
        n_envs=2, n_steps=16).build(), GymEnvironment("CartPole-v1"), quiet=True, seed=0,
        logdir=str(tmp_path))
    parallel.train(frames=64)
    parallel.runner.env_call = (time.monotonic(), None, "step")
    assert env_call(parallel.runner)[-2:] == (None, None)


def test_a_rebuilt_copy_normalizes_with_the_statistics_it_had(tmp_path) -> None:
    """(As on Ray: one rebuild path.) Was: fresh normalizers, observations scaled anew."""
    from looprl.environments.wrappers import normalizers_of

    env = GymEnvironment(PATH, faults={0: ("reset", 3)},  # (the reset of episode 3 raises)
                         wrap_env=gym.wrappers.NormalizeObservation)
    experiment = _dqn_run(env, 1, tmp_path)
    experiment.train(frames=150)
    (normalizer,) = normalizers_of(experiment.vector_env)
    assert [where for where, _ in experiment.restarts] == ["actor0/copy0"]
    assert normalizer.obs_rms.count > experiment.frame  # (every observation, both copies')
