"""Seed 003's ``Experiment(logger=DummyLogger())``: an experiment that writes no file."""

from __future__ import annotations

import math

import pytest

from looprl.core import DummyLogger, Logger
from looprl.environments import GymEnvironment
from looprl.experiments import SingleEnvExperiment
from looprl.presets.classic_control import dqn


def test_an_experiment_trains_and_tests_with_a_dummy_logger(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = GymEnvironment("CartPole-v1")
    preset = dqn.hyperparameters(replay_start_size=50, hidden=8).env(env).device("cpu").build()
    experiment = SingleEnvExperiment(preset, env, logger=DummyLogger(), quiet=True, seed=0)
    experiment.train(frames=300)
    assert experiment.frame == 300 and experiment.episode > 3
    assert len(experiment.test(episodes=2)) == 2
    assert experiment.logger.log_dir is None and math.isnan(experiment.logger.mean_return100)
    experiment.close()
    assert not any(tmp_path.iterdir())  # no run directory, no file


class _MyLogger(Logger):
    """A user's logger as ALL's are written: the methods it needs, over the interface."""

    def __init__(self) -> None:
        self.returns: list[float] = []

    def add_episode_return(self, ret: float) -> None:
        self.returns.append(ret)


def test_an_experiment_trains_with_a_users_logger_of_the_interface(tmp_path, monkeypatch):
    """A subclass of ``looprl.core.Logger`` has the counters the experiment advances (was:
    ``AttributeError: '_MyLogger' object has no attribute 'frame'`` in the loop)."""
    monkeypatch.chdir(tmp_path)
    env = GymEnvironment("CartPole-v1")
    preset = dqn.hyperparameters(replay_start_size=50, hidden=8).env(env).device("cpu").build()
    logger = _MyLogger()
    experiment = SingleEnvExperiment(preset, env, logger=logger, quiet=True, seed=0)
    experiment.train(frames=200)
    assert experiment.frame == 200 and experiment.episode == len(logger.returns) > 3
    assert len(experiment.test(episodes=2)) == 2
    experiment.close()


def test_checkpoints_with_a_logger_without_a_directory_are_one_line(tmp_path, monkeypatch):
    """One line as training starts (was: ``TypeError: expected str, bytes or os.PathLike
    object, not NoneType`` at the first checkpoint, after training up to it)."""
    monkeypatch.chdir(tmp_path)
    env = GymEnvironment("CartPole-v1")
    preset = dqn.hyperparameters(hidden=8).env(env).device("cpu").build()
    with pytest.raises(ValueError, match=r"^checkpoint_every saves checkpoint.pt in the logger's "
                                         r"log_dir; DummyLogger has none: drop it"):
        SingleEnvExperiment(preset, env, logger=DummyLogger(), quiet=True,
                            checkpoint_every=50).train(frames=100)
