"""Evaluation never hangs: an episode that does not end is counted as ended at the cap (the
environment's ``max_episode_steps``, else ``DEFAULT_EPISODE_CAP``), with a warning line."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np
import pytest

from looprl.environments import GymEnvironment, gym_helpers
from looprl.experiments import make_experiment
from looprl.presets.classic_control import dqn, ppo


class Endless(gym.Env):
    """Reward 1 at every step; never terminates, no time limit."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 1.0, False, False, {}


@pytest.mark.parametrize("builder", [dqn, ppo], ids=["dqn", "ppo"])
def test_a_never_ending_environment_trains_and_evaluates_within_the_cap(
        builder, tmp_path, monkeypatch, caplog) -> None:
    monkeypatch.setattr(gym_helpers, "DEFAULT_EPISODE_CAP", 50)
    env = GymEnvironment(Endless())
    preset = builder.hyperparameters(hidden=8).env(env).device("cpu").build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0)
    experiment.train(frames=200)  # the budget ends training (no episode ever ends)
    with caplog.at_level(logging.WARNING):
        returns = experiment.test(episodes=2)
    assert returns == [50.0, 50.0]
    assert "ran 50 steps without ending" in caplog.text
    experiment.close()


def test_the_cap_is_the_environments_time_limit() -> None:
    assert gym_helpers.episode_cap(GymEnvironment("CartPole-v1").duplicate(2)) == 500
    assert gym_helpers.episode_cap(GymEnvironment(Endless())) == 27_000


def test_ray_evaluation_of_a_never_ending_environment_ends_at_the_cap(monkeypatch) -> None:
    """``looprl.distributed.pipeline.evaluate`` (Ray's final evaluation, run in process)."""
    from looprl.distributed.config import AlgorithmSpec
    from looprl.distributed.pipeline import evaluate

    if "LooprlEndless-v0" not in gym.registry:
        gym.register(id="LooprlEndless-v0", entry_point=Endless)
    monkeypatch.setattr(gym_helpers, "DEFAULT_EPISODE_CAP", 30)
    preset = dqn.hyperparameters(hidden=8).env(GymEnvironment("LooprlEndless-v0")).build()
    spec, _ = AlgorithmSpec.of_preset(preset, frames=100)
    assert evaluate(spec, None, episodes=2) == [30.0, 30.0]
