"""ALL's test agents (``DQNTestAgent(policy)``, ``A2CTestAgent(features, policy)``...), as ALL's
preset files build them in ``test_agent()``: each acts as ALL's does, on a ``State`` or a
``StateArray``, and is the ``Actor`` in evaluation mode (no second evaluation path)."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch
from torch import nn

from looprl.agents import (
    A2CTestAgent,
    Actor,
    C51TestAgent,
    DDPGTestAgent,
    DDQNTestAgent,
    DQNTestAgent,
    PPOTestAgent,
    RainbowTestAgent,
    SACTestAgent,
    VACTestAgent,
    VPGTestAgent,
    VQNTestAgent,
    VSarsaTestAgent,
)
from looprl.approximation import FeatureNetwork, QDist, QNetwork
from looprl.core import State
from looprl.policies import (
    DeterministicPolicy,
    GreedyPolicy,
    SoftDeterministicPolicy,
    SoftmaxPolicy,
)

BOX = gym.spaces.Box(-2.0, 2.0, (1,))


def states(n: int = 16) -> State:
    torch.manual_seed(0)
    return State.array([State({"observation": torch.randn(4)}) for _ in range(n)])


def test_dqn_test_agent_is_greedy_at_the_policys_epsilon_as_alls() -> None:
    torch.manual_seed(0)
    q = QNetwork(nn.Linear(4, 3))
    batch = states()
    greedy = q.no_grad(batch.observation).argmax(-1)
    agent = DQNTestAgent(GreedyPolicy(q, 3, epsilon=0.0))
    assert isinstance(agent, Actor) and agent.evaluation
    assert torch.equal(agent.act(batch), greedy)
    assert int(agent.act(batch[0])) == int(greedy[0])  # (one State)
    random = DQNTestAgent(GreedyPolicy(q, 3, epsilon=1.0)).act(states(300))
    assert set(random.tolist()) == {0, 1, 2}  # (ALL's test_exploration: random at epsilon)
    assert DDQNTestAgent is VQNTestAgent is VSarsaTestAgent is DQNTestAgent


def test_c51_test_agent_takes_the_best_expected_return() -> None:
    torch.manual_seed(0)
    q_dist = QDist(nn.Linear(4, 2 * 11), None, 2, 11, v_min=-5, v_max=5)
    batch = states()
    expected = (q_dist.no_grad(batch.observation) * q_dist.atoms).sum(-1).argmax(-1)
    assert torch.equal(C51TestAgent(q_dist, 2).act(batch), expected)
    assert RainbowTestAgent is C51TestAgent


def test_ddpg_and_sac_test_agents_act_without_noise() -> None:
    torch.manual_seed(0)
    batch = states()
    ddpg = DeterministicPolicy(nn.Linear(4, 1), None, BOX, noise=0.5)
    assert torch.equal(DDPGTestAgent(ddpg).act(batch), ddpg.mode(batch.observation))
    sac = SoftDeterministicPolicy(nn.Linear(4, 2), None, BOX)
    assert torch.allclose(SACTestAgent(sac).act(batch), sac.mode(batch.observation))


def test_a2c_test_agent_samples_from_the_policy_on_the_features_as_alls() -> None:
    """ALL's ``policy.eval(features.eval(state)).sample()``: a sample, not the argmax."""
    torch.manual_seed(0)
    features = FeatureNetwork(nn.Sequential(nn.Linear(4, 8), nn.ReLU()))
    head = nn.Linear(8, 2)
    nn.init.zeros_(head.weight)
    nn.init.zeros_(head.bias)  # (uniform over both actions)
    actions = A2CTestAgent(features, SoftmaxPolicy(head)).act(states(200))
    assert 60 < int(actions.sum()) < 140
    with torch.no_grad():
        head.bias.copy_(torch.tensor([-20.0, 20.0]))
    assert bool((A2CTestAgent(features, SoftmaxPolicy(head)).act(states(50)) == 1).all())
    assert PPOTestAgent is VACTestAgent is VPGTestAgent is A2CTestAgent


def test_test_agents_given_other_objects_are_one_line() -> None:
    q = QNetwork(nn.Linear(4, 2))
    with pytest.raises(TypeError, match=r"^DQNTestAgent takes ALL's \(policy\): a GreedyPolicy"):
        DQNTestAgent(q)
    with pytest.raises(TypeError, match=r"^C51TestAgent takes ALL's \(q_dist, n_actions, "):
        C51TestAgent(q, 2)
    with pytest.raises(TypeError, match=r"^A2CTestAgent takes ALL's \(features, policy\): a "
                                        r"FeatureNetwork and a SoftmaxPolicy or GaussianPolicy, "
                                        r"got QNetwork and QNetwork$"):
        A2CTestAgent(q, q)
