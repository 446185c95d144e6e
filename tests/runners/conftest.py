"""A small, fast PPO on CartPole for the runners' tests."""

from __future__ import annotations

import pytest

from looprl.presets.classic_control import ppo


@pytest.fixture
def small_ppo():
    """PPO with 8 hidden units, 4 envs and one epoch: a few hundred steps train in a blink."""
    return ppo.hyperparameters(hidden=8, epochs=1, n_envs=4, n_steps=16,
                               minibatch_size=64).device("cpu")
