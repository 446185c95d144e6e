"""Continuous actions are clipped to the action space's bounds by every environment, single
and vector, while agents keep their unclipped samples (for exact log-probabilities)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from looprl.collector import EnvRunner
from looprl.core import RolloutResult, State
from looprl.environments import (
    DuplicateEnvironment,
    Environment,
    GymEnvironment,
    GymVectorEnvironment,
    PolicyActionError,
    SRLEnvironment,
    register,
    srl,
    step_result,
)
from looprl.experiments.experiment import seed_everything
from looprl.presets.continuous.ppo import ppo


class RecordingEnv(gym.Env):
    """A one-dimensional task that records the actions it receives; reward = the action."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(
        np.array([-1.0, 0.0], np.float32), np.array([1.0, 2.0], np.float32)
    )

    def __init__(self) -> None:
        self.received: list[np.ndarray] = []

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.received.append(np.array(action))
        return np.zeros(2, np.float32), float(np.sum(action)), False, False, {}


def test_single_environment_clips_box_actions() -> None:
    env = GymEnvironment(RecordingEnv())
    env.reset()
    env.step(torch.tensor([5.0, -3.0]))
    np.testing.assert_array_equal(env.env.received[-1], [1.0, 0.0])
    env.step(torch.tensor([0.5, 1.5]))  # inside the bounds: unchanged
    np.testing.assert_array_equal(env.env.received[-1], [0.5, 1.5])


def test_vector_environment_clips_box_actions() -> None:
    envs = GymVectorEnvironment(RecordingEnv, 2)
    envs.reset(seed=0)
    state = envs.step(torch.tensor([[5.0, -3.0], [-7.0, 9.0]]))
    received = [e.unwrapped.received[-1] for e in envs.env.envs]
    np.testing.assert_array_equal(np.stack(received), [[1.0, 0.0], [-1.0, 2.0]])
    torch.testing.assert_close(state.reward, torch.tensor([1.0, 1.0]))


def test_integer_box_actions_are_rounded_not_truncated() -> None:
    """A continuous agent's 9.6 in an integer ``Box(0, 10)`` is 10, not 9 (a cast truncates
    toward 0: the top value was all but unreachable)."""
    env = RecordingEnv()
    env.action_space = gym.spaces.Box(0, 10, (2,), np.int64)
    single = GymEnvironment(env)
    single.reset()
    single.step(torch.tensor([0.7, 9.6]))
    np.testing.assert_array_equal(env.received[-1], [1, 10])
    assert env.received[-1].dtype == np.int64


def test_mujoco_reward_is_the_same_in_a_single_and_a_vector_environment() -> None:
    """MuJoCo's control cost is computed on the action it gets: 5.0 must arrive as 1.0."""
    pytest.importorskip("mujoco")
    from looprl.environments.mujoco import MujocoEnvironment

    single = MujocoEnvironment("HalfCheetah-v5", seed=0)
    single.reset()
    clipped_reward = float(single.step(torch.full((6,), 5.0)).reward)
    bound = MujocoEnvironment("HalfCheetah-v5", seed=0)
    bound.reset()
    assert clipped_reward == pytest.approx(float(bound.step(torch.ones(6)).reward))
    vector = single.duplicate(1)
    vector.reset(seed=0)
    vector_reward = float(vector.step(torch.full((1, 6), 5.0)).reward[0])
    assert vector_reward == pytest.approx(clipped_reward)


def test_gaussian_ppo_stores_its_unclipped_sample_and_the_env_gets_the_clipped_one() -> None:
    seed_everything(0)
    env = GymEnvironment(RecordingEnv())
    builder = ppo.env(env).hyperparameters(n_envs=2, n_steps=8, log_std_init=2.0)
    preset = builder.device("cpu").build()
    agent = preset.agent()
    vector = GymVectorEnvironment(RecordingEnv, 2)
    state = vector.reset(seed=0)
    action = agent.act(state)
    assert ((action < torch.tensor([-1.0, 0.0])) | (action > torch.tensor([1.0, 2.0]))).any()
    stored = torch.as_tensor(agent.adder.rows.action[0])
    torch.testing.assert_close(stored, action)  # the sample itself, for its log-probability
    log_prob = torch.as_tensor(agent.adder.rows.log_prob[0])
    params = agent.policy.approximation.no_grad(state.observation)[0]
    torch.testing.assert_close(log_prob, agent.policy.head.log_prob(params, action))
    vector.step(action)
    received = np.stack([e.unwrapped.received[-1] for e in vector.env.envs])
    np.testing.assert_array_equal(received, np.clip(action.numpy(), [-1.0, 0.0], [1.0, 2.0]))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_a_nan_action_is_the_policys_one_line_error_not_sent_to_the_env(dtype) -> None:
    """NaN is not clipped into the bounds (MuJoCo only warns and resets its simulation; an
    integer Box got INT_MIN): the policy is named, in every environment, and nothing is sent."""
    env = RecordingEnv()
    env.action_space = gym.spaces.Box(-1, 2, (2,), dtype)
    single = GymEnvironment(env)
    single.reset()
    with pytest.raises(PolicyActionError, match=r"The policy gave non-finite actions \(\[0.5, "
                                                r"nan\]\) for the action space Box"):
        single.step(torch.tensor([0.5, float("nan")]))
    assert env.received == []
    vector = GymVectorEnvironment(RecordingEnv, 2)
    vector.reset(seed=0)
    with pytest.raises(PolicyActionError, match="The policy gave non-finite actions"):
        vector.step(torch.tensor([[0.5, 1.0], [float("inf"), 1.0]]))


class OwnEnvironment(Environment):
    """A user's own looprl ``Environment`` (no Gymnasium inside) that records its actions."""

    name = "OwnEnvironment"
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def __init__(self) -> None:
        self.received: list[Any] = []

    def reset(self, seed: int | None = None) -> State:
        self._state = State(torch.zeros(2))
        return self._state

    def step(self, action: Any) -> State:
        self.received.append(action)
        self._state = State(torch.zeros(2), reward=0.0)
        return self._state

    @property
    def state(self) -> State:
        return self._state

    def duplicate(self, n: int) -> Any:
        return DuplicateEnvironment([OwnEnvironment() for _ in range(n)])

    def close(self) -> None:
        pass


class OwnSRLEnvironment(SRLEnvironment):
    """Seed 004's environment of one agent, registered by name, that records its actions."""

    agent_count = 1
    received: list[Any] = []

    def reset(self) -> list[Any]:
        return [step_result({"obs": np.zeros(2, np.float32)}, 0.0, False)]

    def step(self, actions: list[Any]) -> list[Any]:
        OwnSRLEnvironment.received.append(actions)
        return self.reset()


@pytest.mark.parametrize("kind", ["looprl", "srl"])
def test_a_nan_action_is_refused_for_every_environment_the_collector_steps(kind, monkeypatch
                                                                           ) -> None:
    """Environments that do not wrap Gymnasium get the Gymnasium adapters' check: the
    collector, through which every run steps them, refuses the action and sends nothing."""
    monkeypatch.setattr(srl, "_REGISTRY", dict(srl._REGISTRY))
    register("own-nan-test", OwnSRLEnvironment)
    own = OwnEnvironment()
    runner = EnvRunner(DuplicateEnvironment([own]) if kind == "looprl" else "own-nan-test",
                       segment_length=None)
    runner.request()
    with pytest.raises(PolicyActionError, match=r"The policy gave non-finite actions \(\[\[0.5, "
                                                r"nan\]\]\): actions must be finite numbers"):
        runner.step(0, RolloutResult(action=torch.tensor([[0.5, float("nan")]])))
    assert own.received == [] and OwnSRLEnvironment.received == []
