"""The one watch loop (``play_episodes`` on the collector): one ``show`` per state, the
``max_steps`` cut with each agent's return so far, and the next episode after a cut."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from looprl.collector import EnvRunner
from looprl.core import RolloutResult
from looprl.environments import GymEnvironment
from looprl.environments.srl import Environment, step_result
from looprl.experiments import watch
from looprl.experiments.episodes import play_episodes


class _Pair(Environment):
    """Two agents acting at once: agent 0 gets 1, agent 1 gets 2 per step; an episode ends
    after ``length`` steps."""

    agent_count = 2

    def __init__(self, length: int = 100):
        self.length, self.t = length, 0

    def _results(self, rewards: tuple[float, float], done: bool) -> list:
        return [step_result({"obs": np.zeros(2, np.float32)}, r, done) for r in rewards]

    def reset(self) -> list:
        self.t = 0
        return self._results((0.0, 0.0), False)

    def step(self, actions: list) -> list:
        self.t += 1
        return self._results((1.0, 2.0), self.t >= self.length)


def _zeros(request) -> RolloutResult:
    return RolloutResult(action=np.zeros(len(request.done), np.int64))


def _shows() -> tuple[list[int], object]:
    shown: list[int] = []
    return shown, lambda: shown.append(1)


def test_a_cut_episode_keeps_each_agents_return_and_the_next_one_begins() -> None:
    runner = EnvRunner(lambda: _Pair(), segment_length=1, seed=0, is_evaluation=True)
    shown, show = _shows()
    played = play_episodes(runner, _zeros, 2, show, max_steps=3)
    assert [(e.ret, e.returns) for e in played] == [(9.0, (3.0, 6.0))] * 2
    assert len(shown) == 2 * (3 + 1)  # one show per state: the first and after every step


def test_episodes_that_end_are_shown_once_per_state() -> None:
    runner = EnvRunner(lambda: _Pair(length=4), segment_length=1, seed=0, is_evaluation=True)
    shown, show = _shows()
    played = play_episodes(runner, _zeros, 3, show, max_steps=10)
    assert [(e.ret, e.returns, e.length) for e in played] == [(12.0, (4.0, 8.0), 4)] * 3
    assert len(shown) == 3 * (4 + 1)


class _Left:
    def act(self, state) -> torch.Tensor:
        return torch.tensor(0)


class _Frames(GymEnvironment):
    """CartPole whose every ``render()`` is a new small frame (the GIF keeps them all)."""

    shown = 0

    def render(self, **kwargs) -> np.ndarray:
        self.shown += 1
        return np.full((4, 4, 3), self.shown % 256, np.uint8)


def test_a_gif_has_one_frame_per_state_of_every_episode(tmp_path) -> None:
    from PIL import Image

    env = _Frames("CartPole-v1")
    env.reset(seed=1)
    returns, path = watch.watch(_Left(), env, episodes=2, gif=tmp_path / "two.gif")
    with Image.open(path) as image:
        assert image.n_frames == sum(returns) + 2


@pytest.mark.filterwarnings("ignore:.*without specifying any render mode")  # (the point)
def test_an_environment_that_gives_no_frames_is_one_line(tmp_path) -> None:
    with pytest.raises(ValueError, match="render_mode='rgb_array'"):
        watch.watch(_Left(), GymEnvironment("CartPole-v1"), gif=tmp_path / "none.gif")


def test_watching_something_not_an_environment_is_one_line() -> None:
    with pytest.raises(TypeError, match="watch plays in a looprl Environment.* got str"):
        watch.watch(_Left(), "CartPole-v1", fps=1e6)
