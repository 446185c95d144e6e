"""``looprl.policies`` as an ALL user writes against ``all.policies`` (ALL 0.9.1): the
continuous policies called on ``State``/``StateArray`` objects, and ``GaussianPolicy``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.spaces import Box, Discrete
from torch.distributions import Independent, Normal

from looprl import nn
from looprl.core import State, StateArray
from looprl.policies import DeterministicPolicy, GaussianPolicy, SoftDeterministicPolicy

SPACE = Box(low=np.array([-2.0, 0.0], np.float32), high=np.array([2.0, 1.0], np.float32))
CENTER, SCALE = torch.tensor([0.0, 0.5]), torch.tensor([2.0, 0.5])


def _states() -> StateArray:
    torch.manual_seed(0)
    return StateArray({"observation": torch.randn(3, 4), "mask": torch.tensor([1.0, 1.0, 0.0])},
                      (3,))


def test_deterministic_policy_acts_on_states_as_alls() -> None:
    model = nn.Linear(4, 2)
    policy = DeterministicPolicy(model, torch.optim.Adam(model.parameters()), SPACE)
    states = _states()
    actions = policy(states)
    expected = torch.tanh(model(states.observation)) * SCALE + CENTER
    assert actions.shape == (3, 2)
    assert torch.allclose(actions[:2], expected[:2])
    assert torch.allclose(actions[2], CENTER)  # terminal: the model's output is zeroed first
    single = policy.mode(State(states.observation[0]))
    assert single.shape == (2,) and torch.allclose(single, expected[0])
    assert torch.allclose(policy.no_grad(states.observation), expected)  # tensors still work
    named = DeterministicPolicy(model, None, SPACE, "pi")  # ALL's (model, optimizer, space, name)
    assert named.name == "pi" and named.noise == 0.1


def test_soft_deterministic_policy_acts_on_states_as_alls() -> None:
    torch.manual_seed(1)
    model = nn.Linear(4, 4)
    policy = SoftDeterministicPolicy(model, None, SPACE)
    states = _states()
    actions, log_probs = policy(states)
    assert actions.shape == (3, 2) and log_probs.shape == (3,)
    low, high = torch.tensor(SPACE.low), torch.tensor(SPACE.high)
    assert torch.all(actions >= low) and torch.all(actions <= high)
    mode = policy.mode(states)
    mean = model(states.observation)[:, :2]
    assert torch.allclose(mode[:2], torch.tanh(mean[:2]) * SCALE + CENTER)


def test_soft_deterministic_policy_takes_alls_log_std_bounds() -> None:
    """(was: ``log_std_min``/``log_std_max``, ALL's keywords, raised a TypeError)"""
    model = nn.Linear(4, 4)
    with torch.no_grad():
        model.bias[2:] = 10.0  # a log-std far above either bound
        model.weight.zero_()
    policy = SoftDeterministicPolicy(model, None, SPACE, log_std_min=-5, log_std_max=-1)
    head = policy.model.head
    _, log_std = head.split(model(torch.zeros(1, 4)))
    assert torch.allclose(log_std, torch.full((1, 2), -1.0))
    assert (head.log_std_min, head.log_std_max) == (-5, -1)


@pytest.mark.parametrize(("policy", "outputs"), [
    (DeterministicPolicy, 1), (SoftDeterministicPolicy, 3), (SoftDeterministicPolicy, 2),
    (GaussianPolicy, 3), (GaussianPolicy, 2)])
def test_a_model_of_the_wrong_width_is_one_line(policy: type, outputs: int) -> None:
    """(was: outputs of the wrong width broadcast over the action dimensions: a model of
    ``action_dim`` outputs gave every dimension of a Gaussian the same mean, silently)"""
    with pytest.raises(ValueError, match=f"returned {outputs} outputs per state for a "
                                         "2-dimensional Box action space"):
        policy(nn.Linear(4, outputs), None, SPACE)(_states())


def test_gaussian_policy_returns_alls_distribution() -> None:
    torch.manual_seed(2)
    model = nn.Linear(4, 4)
    policy = GaussianPolicy(model, torch.optim.SGD(model.parameters(), lr=0.1), space=SPACE)
    states = _states()
    dist = policy(states)
    assert isinstance(dist, Independent) and isinstance(dist.base_dist, Normal)
    outputs = model(states.observation)
    outputs[2] = 0.0  # the terminal row, as RLNetwork masks it
    assert torch.allclose(dist.mean, outputs[:, :2] + CENTER)
    assert torch.allclose(dist.stddev, (0.5 * outputs[:, 2:]).exp() * SCALE)
    actions = dist.sample()
    assert actions.shape == (3, 2) and dist.log_prob(actions).shape == (3,)
    policy.reinforce(-dist.log_prob(actions).mean())
    assert policy.updates == 1
    with pytest.raises(TypeError, match="Box action space"):
        GaussianPolicy(model, None, space=None)
    for make in (DeterministicPolicy, SoftDeterministicPolicy):  # (was: AttributeError 'low')
        for space in (None, Discrete(2)):
            with pytest.raises(TypeError, match=f"{make.__name__} needs a Box action space"):
                make(model, None, space)


def test_bad_noise_and_log_std_bounds_are_one_line() -> None:
    """(was: a negative noise meant no noise, and log_std_min > log_std_max pinned every log
    std to the max, silently)"""
    with pytest.raises(ValueError, match="'noise' of DeterministicPolicy must be >= 0, got -0.1"):
        DeterministicPolicy(nn.Linear(3, 2), None, SPACE, noise=-0.1)
    with pytest.raises(ValueError, match="needs log_std_min < log_std_max, got 2 and -2"):
        SoftDeterministicPolicy(nn.Linear(3, 4), None, SPACE, log_std_min=2, log_std_max=-2)
