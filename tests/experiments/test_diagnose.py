"""A loss that turns NaN because the environment returned NaN names the environment and the
field, instead of advising a lower learning rate."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch

from looprl.environments import GymEnvironment
from looprl.experiments import run_experiment
from looprl.experiments.diagnose import explain_divergence, kind_of
from looprl.presets.classic_control import dqn, ppo

SMALL_DQN = dqn.hyperparameters(replay_start_size=32, minibatch_size=16, hidden=16)
SMALL_PPO = ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=16, hidden=16)


class Corrupt(gymnasium.Wrapper):
    """CartPole whose ``field`` ('reward' or 'observation') becomes NaN from step ``after``."""

    def __init__(self, field: str, after: int = 50):
        super().__init__(gymnasium.make("CartPole-v1"))
        self.field, self.after, self.steps = field, after, 0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps >= self.after:
            if self.field == "reward":
                reward = float("nan")
            else:
                obs = np.full_like(obs, np.nan)
        return obs, reward, terminated, truncated, info


def _env(field: str) -> GymEnvironment:
    return GymEnvironment(Corrupt(field), name="CorruptCartPole")


@pytest.mark.parametrize("field", ["reward", "observation"])
@pytest.mark.parametrize("preset", [SMALL_DQN, SMALL_PPO], ids=["dqn", "ppo"])
def test_nan_from_the_environment_is_named(field: str, preset, tmp_path: Path) -> None:
    torch.manual_seed(0)
    with pytest.raises(FloatingPointError) as raised:
        run_experiment(preset, _env(field), 3000, logdir=str(tmp_path), quiet=True,
                       test_episodes=0, seed=0)
    message = str(raised.value)
    assert f"CorruptCartPole returned NaN or infinite {field}s" in message
    assert "learning rate" not in message.split(";")[0] and "Logs until then" in message
    if field == "reward":
        assert "first in training episode" in message or "in an episode running" in message


def test_a_plain_divergence_keeps_the_learning_rate_advice() -> None:
    error = FloatingPointError("the loss is nan. Try a lower learning rate")
    assert explain_divergence(error, "CartPole-v1", 10) == str(error)


def test_kinds_of_batch_fields() -> None:
    assert kind_of("batch[3].reward") == "rewards" and kind_of("rewards") == "rewards"
    assert kind_of("minibatch.observation") == "observations"
    assert kind_of("next_states.mask") is None and kind_of("loss") is None


class NaNOnce(gymnasium.Wrapper):
    """CartPole whose 50th step (over all copies) returns a NaN reward, once."""

    def __init__(self, steps: list[int]):
        super().__init__(gymnasium.make("CartPole-v1"))
        self.steps = steps  # (shared by the copies)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps[0] += 1
        return (obs, float("nan") if self.steps[0] == 50 else reward, terminated, truncated,
                info)


def test_a_short_run_that_diverges_between_logged_updates_is_not_reported_finished(
        tmp_path: Path) -> None:
    """A2C takes one update per segment: 1,000 frames are 25 updates, fewer than the 100
    between two logged ones. Its loss turns NaN at the one NaN reward; the run stops there
    (was: it finished, saving NaN parameters, and printed its evaluation)."""
    from looprl.presets.classic_control import a2c

    torch.manual_seed(0)
    env = GymEnvironment(NaNOnce([0]), name="NaNOnceCartPole")
    with pytest.raises(FloatingPointError) as raised:
        run_experiment(a2c, env, 1000, logdir=str(tmp_path), quiet=True, test_episodes=0,
                       seed=0)
    assert "NaNOnceCartPole returned NaN or infinite rewards" in str(raised.value)
