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
    """``looprl.distributed.pipeline.evaluation_episodes`` (Ray's final evaluation, run in
    process)."""
    from looprl.distributed.config import AlgorithmSpec
    from looprl.distributed.pipeline import evaluation_episodes

    if "LooprlEndless-v0" not in gym.registry:
        gym.register(id="LooprlEndless-v0", entry_point=Endless)
    monkeypatch.setattr(gym_helpers, "DEFAULT_EPISODE_CAP", 30)
    preset = dqn.hyperparameters(hidden=8).env(GymEnvironment("LooprlEndless-v0")).build()
    spec, _ = AlgorithmSpec.of_preset(preset, frames=100)
    assert [e.ret for e in evaluation_episodes(spec, None, episodes=2)] == [30.0, 30.0]


class EndsAt3(Endless):
    """Reward 1 at every step; terminates after 3 steps."""

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.t += 1
        obs, reward, _, truncated, info = super().step(action)
        return obs, reward, self.t == 3, truncated, info


def _step(runner, steps: int) -> list:
    """``steps`` steps of action 0; ``(copy, return, length)`` of the episodes that ended."""
    from looprl.core import RolloutResult

    for _ in range(steps):
        request = runner.request()
        runner.step(0, RolloutResult(action=np.zeros(len(request.done), np.int64)))
    return [(e.env, e.ret, e.length) for e in runner.pop_episodes()]


def test_a_vector_environment_cut_reports_the_long_episode_and_restarts_every_copy(
        caplog) -> None:
    from looprl.collector import EnvRunner
    from looprl.environments.duplicate import DuplicateEnvironment

    env = DuplicateEnvironment([GymEnvironment(Endless(), name="endless"),
                                GymEnvironment(EndsAt3())])
    runner = EnvRunner(env, segment_length=None, seed=0, max_episode_steps=4)
    with caplog.at_level(logging.WARNING):
        assert _step(runner, 4) == [(1, 3.0, 3), (0, 4.0, 4)]  # (copy 1 reset at step 4)
    assert runner.request().done.tolist() == [True, True]  # both truncated: all restart
    assert _step(runner, 1) == [] and runner.request().done.tolist() == [False, False]
    assert _step(runner, 4) == [(1, 3.0, 3), (0, 4.0, 4)]  # (the restart earned nothing)
    assert caplog.text.count("an episode of endless ran 4 steps without ending") == 1
    assert runner.cuts == 2  # (the first cut warns; a loop says their total: report_cuts)


def test_the_cap_warns_once_per_evaluation_and_the_total_at_its_end(tmp_path, monkeypatch,
                                                                     caplog) -> None:
    """An evaluation of 6 episodes of an environment without a time limit printed the cap's
    warning 6 times (a training call, one per cut episode: test_misbehaving_envs)."""
    monkeypatch.setattr(gym_helpers, "DEFAULT_EPISODE_CAP", 5)
    env = GymEnvironment(Endless(), name="endless")
    preset = dqn.hyperparameters(hidden=8).env(env).device("cpu").build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0)
    with caplog.at_level(logging.WARNING):
        assert experiment.test(episodes=6) == [5.0] * 6
    lines = [r.getMessage() for r in caplog.records if "endless" in r.getMessage()]
    assert len(lines) == 2, lines
    assert lines[0].startswith("an episode of endless ran 5 steps without ending: cut there")
    assert lines[1] == "6 episodes of endless were cut at the cap of 5 steps"
    experiment.close()


def test_training_on_a_vector_environment_is_not_cut_play_episodes_is(monkeypatch) -> None:
    from looprl.collector import EnvRunner
    from looprl.core import RolloutResult
    from looprl.experiments.episodes import play_episodes

    monkeypatch.setattr(gym_helpers, "DEFAULT_EPISODE_CAP", 5)  # (the env's episode_cap)
    runner = EnvRunner(GymEnvironment(Endless()).duplicate(2), segment_length=None, seed=0)
    assert runner.max_episode_steps is None and _step(runner, 12) == []
    played = play_episodes(runner, lambda r: RolloutResult(action=np.zeros(2, np.int64)), 2)
    assert [(e.ret, e.length) for e in played] == [(13.0, 13)] * 2  # (cut at its first step)
    assert runner.max_episode_steps is None and _step(runner, 12) == []


def test_every_copy_of_every_group_is_cut_at_the_cap() -> None:
    """SRL copies in two groups, one ahead of the other; the cap changed on the way."""
    from looprl.collector import EnvRunner
    from looprl.core import RolloutResult
    from looprl.environments.srl import Environment, step_result

    class Forever(Environment):
        agent_count = 1

        def reset(self) -> list:
            return [step_result({"obs": np.zeros(2, np.float32)}, 0.0, False)]

        def step(self, actions: list) -> list:
            return [step_result({"obs": np.zeros(2, np.float32)}, 1.0, False)]

    def step(runner, group: int) -> None:
        request = runner.request(group)
        runner.step(group, RolloutResult(action=np.zeros(len(request.done), np.int64)))

    runner = EnvRunner(Forever, n_envs=2, groups=2, segment_length=None, seed=0,
                       max_episode_steps=100)
    for _ in range(3):
        step(runner, 0)
    runner.max_episode_steps = 6
    for _ in range(20):
        step(runner, 0)
        step(runner, 1)
    episodes = [(e.env, e.length) for e in runner.pop_episodes()]
    assert sorted(set(episodes)) == [(0, 6), (1, 6)] and len(episodes) >= 4
