"""The one evaluation loop (``play_episodes``) over several env copies: each copy plays its
share of the episodes (short episodes are not favoured), a cut episode is counted with a
warning, and ``Experiment.test`` runs it."""

from __future__ import annotations

import logging
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from looprl.collector import EnvRunner
from looprl.core import RolloutResult
from looprl.core.suggest import WARNED
from looprl.environments import GymEnvironment, GymVectorEnvironment
from looprl.environments.duplicate import DuplicateEnvironment
from looprl.environments.srl import Environment, step_result
from looprl.experiments.episodes import play_episodes
from looprl.experiments.experiment import ParallelEnvExperiment, SingleEnvExperiment
from looprl.presets.classic_control import dqn, ppo


class Steps(gym.Env):
    """Reward 1 at every step; an episode ends after ``length`` steps (never: ``None``)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int | None):
        self.length, self.t = length, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t == self.length, False, {}


def _runner(*lengths: int | None) -> EnvRunner:
    env = DuplicateEnvironment([GymEnvironment(Steps(n)) for n in lengths])
    return EnvRunner(env, segment_length=1, seed=0, is_evaluation=True)


def _zeros(request) -> RolloutResult:
    return RolloutResult(action=np.zeros(len(request.done), np.int64))


def test_each_copy_plays_its_share_so_short_episodes_are_not_favoured() -> None:
    played = play_episodes(_runner(2, 7), _zeros, 5)
    assert sorted((e.env, e.ret) for e in played) == [(0, 2.0)] * 3 + [(1, 7.0)] * 2


def test_a_cut_episode_is_counted_with_a_warning(caplog) -> None:
    with caplog.at_level(logging.WARNING):
        played = play_episodes(_runner(None, 3), _zeros, 4, max_steps=5)
    assert sorted((e.env, e.ret, e.length) for e in played) == [
        (0, 5.0, 5), (0, 5.0, 5), (1, 3.0, 3), (1, 3.0, 3)]
    assert "ran 5 steps without ending" in caplog.text


class _Pair(Environment):
    agent_count = 2

    def reset(self) -> list:
        return [step_result({"obs": np.zeros(2, np.float32)}, 0.0, False)] * 2

    def step(self, actions: list) -> list:
        return [step_result({"obs": np.zeros(2, np.float32)}, 1.0, True)] * 2


@pytest.mark.parametrize("episodes", [-1, 2.5, "3"])
def test_a_bad_number_of_episodes_is_one_line(episodes) -> None:
    with pytest.raises(ValueError, match="whole number of episodes"):
        play_episodes(_runner(2), _zeros, episodes)


def test_no_episodes_are_none() -> None:
    assert play_episodes(_runner(2, 3), _zeros, 0) == []


def test_a_game_of_several_agents_in_several_copies_is_one_line() -> None:
    runner = EnvRunner(lambda: _Pair(), n_envs=2, segment_length=1, seed=0)
    with pytest.raises(ValueError, match="n_envs=1"):
        play_episodes(runner, _zeros, 2)


class _Counting:
    """Seed 003's agent: action 0, counting the states it sees."""

    seen = 0

    def act(self, state) -> torch.Tensor:
        self.seen += 1
        return torch.tensor(0)


class _Preset:
    name, hyperparameters, meta = "counting", {}, ()

    def __init__(self) -> None:
        self.tester = _Counting()

    def agent(self, logger=None, train_steps=float("inf")) -> _Counting:
        return _Counting()

    def test_agent(self) -> _Counting:
        return self.tester


def test_experiment_test_asks_the_test_agent_once_per_step(tmp_path) -> None:
    preset = _Preset()
    experiment = SingleEnvExperiment(preset, GymEnvironment(Steps(4)), logdir=str(tmp_path),
                                     quiet=True)
    assert experiment.test(episodes=3) == [4.0, 4.0, 4.0]
    assert preset.tester.seen == 3 * 4 + 2  # (and at the end of each but the last: its reset)
    with pytest.raises(ValueError, match=r"SingleEnvExperiment.test plays a whole number"):
        experiment.test(episodes=-2)
    experiment.close()


def _normalized_cartpole() -> gym.Env:
    return gym.wrappers.NormalizeObservation(gym.make("CartPole-v1"))


def _statistics(env) -> list:
    """Each copy's ``NormalizeObservation`` statistics (a ``DuplicateEnvironment``'s too)."""
    copies = env.env.envs if hasattr(env, "env") else [one.env for one in env.envs]
    return [one.get_wrapper_attr("obs_rms") for one in copies]


def _wrapped_cartpole() -> GymEnvironment:
    return GymEnvironment("CartPole-v1", wrap_env=gym.wrappers.NormalizeObservation)


@pytest.mark.parametrize(("make", "single"), [
    (_wrapped_cartpole, False), (_wrapped_cartpole, True),
    (lambda: GymEnvironment(_normalized_cartpole()), False),
    (lambda: GymEnvironment(_normalized_cartpole()), True),
    (lambda: GymVectorEnvironment(_normalized_cartpole, 2), False)])
def test_evaluation_normalizes_with_the_training_statistics_frozen(tmp_path, make, single) -> None:
    env = make()
    built = (dqn if single else ppo.hyperparameters(n_envs=2, n_steps=32)).hyperparameters(
        hidden=8).env(env).build()
    experiment = (SingleEnvExperiment if single else ParallelEnvExperiment)(
        built, env, logdir=str(tmp_path), quiet=True, seed=0)
    experiment.seeded_test = True  # (a runner's: in copies)
    experiment.train(frames=200)
    trained = _statistics(experiment.vector_env)[0]
    mean, count = trained.mean.copy(), trained.count
    made = []
    test_env = experiment._test_env
    experiment._test_env = lambda copies: made.append(test_env(copies)) or made[-1]
    experiment.test(episodes=3)
    for statistics in _statistics(made[0]):
        assert statistics.count == count and np.array_equal(statistics.mean, mean)
    experiment.close()


@pytest.mark.parametrize("single", [True, False])
def test_evaluation_in_the_training_env_leaves_its_statistics_as_they_were(tmp_path,
                                                                           single) -> None:
    """A single-env preset's unseeded evaluation (ALL's) and a vector env without ``copy()``
    play in the training environment: its normalizers kept updating there, so evaluation
    episodes moved the statistics training goes on with. They are frozen for the while."""
    env = (_wrapped_cartpole() if single else
           GymVectorEnvironment(gym.wrappers.vector.NormalizeObservation(
               gym.make_vec("CartPole-v1", 2, vectorization_mode="sync")), "CartPole-v1"))
    built = (dqn if single else ppo.hyperparameters(n_envs=2, n_steps=32)).hyperparameters(
        hidden=8).env(env).build()
    experiment = (SingleEnvExperiment if single else ParallelEnvExperiment)(
        built, env, logdir=str(tmp_path), quiet=True, seed=0)
    experiment.train(frames=64)
    normalizer = experiment.vector_env.envs[0].env if single else experiment.vector_env.env
    count = normalizer.obs_rms.count
    assert experiment._test_env(2) is experiment.vector_env  # (it evaluates in it)
    experiment.test(episodes=2)
    assert normalizer.obs_rms.count == count
    assert normalizer.update_running_mean  # (training updates them again)
    experiment.close()


def test_evaluation_in_an_env_wrapped_otherwise_warns_and_keeps_its_statistics(
        tmp_path, caplog) -> None:
    env = _wrapped_cartpole()
    built = ppo.hyperparameters(n_envs=2, n_steps=8, hidden=8).env(env).build()
    experiment = ParallelEnvExperiment(built, env, logdir=str(tmp_path), quiet=True, seed=0)
    experiment.train(frames=32)
    with caplog.at_level(logging.WARNING):
        experiment.test(episodes=2, env=GymEnvironment(
            "CartPole-v1", wrap_env=lambda e: gym.wrappers.NormalizeObservation(
                gym.wrappers.ClipReward(e, -1, 1))))
    assert caplog.text.count("wrappers (NormalizeObservation, ClipReward") == 1
    experiment.close()


@pytest.mark.parametrize("builder", [dqn, ppo.hyperparameters(n_envs=2, n_steps=32)])
def test_a_saved_run_is_watched_with_its_training_statistics_frozen(tmp_path, monkeypatch,
                                                                    builder) -> None:
    """``run_experiment`` saves the first training copy's normalizers' statistics beside
    ``preset.pt`` (``normalization.pt``); ``looprl watch RUN_DIR`` and ``load_and_watch`` load
    them into the env they play in, frozen (were: its statistics started anew), that of a
    parallel preset's vector copies too. A run without normalizers writes no such file."""
    from looprl.cli import main
    from looprl.environments.wrappers import read_normalization
    from looprl.experiments import run_experiment, watch
    from looprl.presets.catalog import make_env

    wrappers = ["gymnasium.wrappers.NormalizeObservation"]
    env = make_env("classic_control.dqn", "CartPole-v1", env_wrappers=wrappers)
    (result,) = run_experiment(builder.hyperparameters(hidden=8).env(env).build(), env, 200,
                               logdir=str(tmp_path), quiet=True, test_episodes=0, seed=0)
    saved = torch.load(Path(result.log_dir) / "normalization.pt", weights_only=False)
    trained = saved[1]["normalizers"][0]["obs_rms"]
    assert trained["count"] >= 100  # (every step of the first copy)
    watched = []
    monkeypatch.setattr(watch, "watch", lambda agent, env, *args, **kwargs: (
        watched.append(env) or ([0.0], None)))
    assert main(["watch", result.log_dir, "--episodes", "1", "--gif",
                 str(tmp_path / "w.gif")]) == 0
    other = make_env("classic_control.dqn", "CartPole-v1", env_wrappers=wrappers)
    watch.load_and_watch(f"{result.log_dir}/preset.pt", other, n_episodes=1)
    assert len(watched) == 2
    for played in watched:
        loaded = read_normalization(played)[1]["normalizers"][0]["obs_rms"]
        assert loaded["count"] == trained["count"]
        assert np.array_equal(loaded["mean"], trained["mean"])
        assert not played.env.get_wrapper_attr("update_running_mean")
    plain = GymEnvironment("CartPole-v1")
    (result,) = run_experiment(dqn.hyperparameters(hidden=8).env(plain).build(), plain, 50,
                               logdir=str(tmp_path / "plain"), quiet=True, test_episodes=0)
    assert sorted(path.name for path in Path(result.log_dir).glob("*.pt")) == ["preset.pt"]


def test_a_saved_run_without_its_statistics_is_watched_with_a_warning(tmp_path, monkeypatch,
                                                                      caplog) -> None:
    """A run of normalizers that a looprl before ``normalization.pt`` saved (or a preset saved
    alone) plays with fresh statistics: a warning says so (was: silently, as if trained); a
    preset file of another name too."""
    from looprl.cli import main
    from looprl.experiments import watch
    from looprl.presets.catalog import make_env

    env = make_env("classic_control.dqn", "CartPole-v1",
                   env_wrappers=["gymnasium.wrappers.NormalizeObservation"])
    preset = dqn.hyperparameters(hidden=8).env(env).device("cpu").build()
    for name in ("preset.pt", "agent.pt"):
        preset.save(str(tmp_path / name))
    monkeypatch.setattr(watch, "watch", lambda *args, **kwargs: ([0.0], None))
    for name, play in (
            ("preset.pt", lambda: watch.load_and_watch(tmp_path / "preset.pt", env)),
            ("agent.pt", lambda: watch.load_and_watch(tmp_path / "agent.pt", env)),
            ("preset.pt", lambda: main(["watch", str(tmp_path), "--env", "CartPole-v1",
                                        "--episodes", "1", "--gif", str(tmp_path / "w.gif")]))):
        WARNED.clear()
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            play()
        assert f"{tmp_path / name}: no normalization statistics were saved with it" \
            in caplog.text, caplog.text
        assert "NormalizeObservation start anew" in caplog.text
