"""Rainbow's evaluation agent plays the noise-free (mean) network; epsilon applies on top."""

from __future__ import annotations

import pytest
import torch

from looprl.core import RolloutRequest, StateArray
from looprl.environments import GymEnvironment
from looprl.experiments.experiment import seed_everything
from looprl.presets.classic_control import rainbow

N = 256


def _actions(agent, observations: torch.Tensor) -> torch.Tensor:
    return agent.act(StateArray({"observation": observations}, (len(observations),)))


def _mean_network_actions(agent, observations: torch.Tensor) -> torch.Tensor:
    return agent.policy.greedy.eval(StateArray({"observation": observations}, (N,)))


@pytest.mark.parametrize("epsilon", [0.0, 0.05])
def test_classic_rainbow_test_agent_is_noise_free(epsilon: float) -> None:
    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    builder = rainbow.env(env).hyperparameters(hidden=32, test_exploration=epsilon)
    preset = builder.device("cpu").build()
    agent = preset.test_agent()
    observations = torch.randn(N, 4) * 2
    mean = _mean_network_actions(agent, observations)
    first, second = _actions(agent, observations), _actions(agent, observations)
    # only the epsilon-random rows may differ from the mean network (about 2 * 0.05 * 0.5 * N)
    limit = 0 if epsilon == 0 else N // 8
    assert (first != mean).sum() <= limit and (second != mean).sum() <= limit
    if epsilon == 0:
        assert torch.equal(first, second)
    # single states too, and the network is left in training mode for the training agent
    single = agent.act(GymEnvironment("CartPole-v1", seed=0).reset())
    assert single.shape == () and preset.model.training
    # Ray's evaluation builds the preset's policy and asks it for evaluation actions: the same
    remote = preset.policy(copy_model=True)
    assert remote.evaluation_epsilon == agent.policy.evaluation_epsilon == epsilon
    if epsilon == 0:
        request = RolloutRequest(obs=observations, is_evaluation=True)
        assert torch.equal(remote.rollout(request).action, first)


def test_atari_rainbow_test_agent_is_noise_free_at_its_default_epsilon() -> None:
    pytest.importorskip("ale_py")
    from looprl.environments.atari import AtariEnvironment
    from looprl.presets.atari import rainbow as atari_rainbow

    seed_everything(0)
    env = AtariEnvironment("Breakout", device="cpu")
    preset = atari_rainbow.env(env).device("cpu").hyperparameters(hidden=64).build()
    assert preset.hyperparameters["test_exploration"] == 0.001
    agent = preset.test_agent()
    observations = torch.randint(0, 256, (N, 4, 84, 84), dtype=torch.uint8)
    mean = _mean_network_actions(agent, observations)
    first, second = _actions(agent, observations), _actions(agent, observations)
    # with noisy weights two calls disagreed on 159 of 256 states; now only epsilon's rows can
    assert (first != mean).sum() <= 4 and (first != second).sum() <= 4
