"""Tests of SoftmaxPolicy."""

from __future__ import annotations

import torch
from torch import nn, optim
from torch.distributions import Categorical

from looprl.core import State, StateArray
from looprl.policies import SoftmaxPolicy


def test_returns_categorical_with_batch_shape():
    model = nn.Linear(4, 3)
    policy = SoftmaxPolicy(model)
    states = StateArray({"observation": torch.randn(2, 5, 4)}, (2, 5))
    dist = policy(states)
    assert isinstance(dist, Categorical)
    assert dist.batch_shape == (2, 5)
    assert dist.probs.shape == (2, 5, 3)
    assert dist.sample().shape == (2, 5)
    assert torch.allclose(dist.probs.sum(-1), torch.ones(2, 5))
    expected = torch.softmax(model(states.observation[1, 2]), -1)
    assert torch.allclose(dist.probs[1, 2], expected)
    single = policy.no_grad(State(torch.randn(4)))
    assert single.batch_shape == () and single.sample().shape == ()


def test_terminal_states_get_uniform_distribution():
    policy = SoftmaxPolicy(nn.Linear(4, 4))
    states = StateArray({"observation": torch.randn(2, 4), "mask": torch.tensor([1.0, 0.0])}, (2,))
    assert torch.allclose(policy.eval(states).probs[1], torch.full((4,), 0.25))


def test_reinforce_increases_probability_of_rewarded_action():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    policy = SoftmaxPolicy(model, optim.SGD(model.parameters(), lr=0.5))
    states = StateArray({"observation": torch.randn(8, 4)}, (8,))
    actions = torch.full((8,), 2)
    before = policy.no_grad(states).probs[:, 2].mean()
    for _ in range(10):
        loss = -policy(states).log_prob(actions).mean()
        policy.reinforce(loss)
    assert policy.no_grad(states).probs[:, 2].mean() > before + 0.2
