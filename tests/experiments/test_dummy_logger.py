"""Seed 003's ``Experiment(logger=DummyLogger())``: an experiment that writes no file."""

from __future__ import annotations

import math

from looprl.core import DummyLogger
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
