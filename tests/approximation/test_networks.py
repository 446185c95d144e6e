"""Tests of QNetwork, VNetwork and FeatureNetwork on State and StateArray."""

from __future__ import annotations

import torch
from torch import nn, optim

from looprl.approximation import (
    FeatureNetwork,
    FixedTarget,
    QContinuous,
    QNetwork,
    VNetwork,
    project_distribution,
)
from looprl.core import State, StateArray


def _states(obs: torch.Tensor, mask: torch.Tensor) -> StateArray:
    return StateArray({"observation": obs, "mask": mask}, tuple(mask.shape))


def test_qnetwork_returns_masked_values_and_gathers_actions():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    q = QNetwork(model, target=FixedTarget(10))
    obs = torch.randn(5, 4)
    mask = torch.tensor([1.0, 1.0, 0.0, 1.0, 1.0])
    states = _states(obs, mask)
    values = q(states)
    assert values.shape == (5, 3)
    assert torch.all(values[2] == 0)
    assert torch.allclose(values[0], model(obs[0]))
    actions = torch.tensor([0, 2, 1, 1, 0])
    chosen = q(states, actions)
    assert chosen.shape == (5,)
    assert torch.allclose(chosen, values[torch.arange(5), actions])
    assert torch.allclose(q.no_grad(states, [0, 2, 1, 1, 0]), chosen)
    assert torch.allclose(q.target(states, actions), chosen)
    assert torch.allclose(q.eval(states), values)


def test_qnetwork_multidimensional_batch_and_single_state():
    q = QNetwork(nn.Linear(4, 3))
    states = _states(torch.randn(2, 6, 4), torch.ones(2, 6))
    actions = torch.zeros(2, 6, dtype=torch.long)
    assert q(states).shape == (2, 6, 3)
    assert q(states, actions).shape == (2, 6)
    single = State(torch.randn(4))
    assert q(single).shape == (3,)
    assert q(single, torch.tensor(1)).shape == ()
    assert q(single, 2).item() == q(single)[2].item()


def test_qnetwork_dqn_update_moves_towards_target():
    torch.manual_seed(0)
    model = nn.Linear(2, 2)
    q = QNetwork(model, optim.SGD(model.parameters(), lr=0.1))
    states = _states(torch.ones(4, 2), torch.ones(4))
    actions = torch.tensor([0, 1, 0, 1])
    targets = torch.full((4,), 5.0)
    before = nn.functional.mse_loss(q.no_grad(states, actions), targets)
    for _ in range(20):
        q.reinforce(nn.functional.mse_loss(q(states, actions), targets))
    assert nn.functional.mse_loss(q.no_grad(states, actions), targets) < 0.01 * before


def test_vnetwork_shapes_and_masking():
    v = VNetwork(nn.Linear(4, 1))
    states = _states(torch.randn(3, 2, 4), torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]))
    values = v(states)
    assert values.shape == (3, 2)
    assert values[0, 1] == 0 and values[2, 0] == 0
    assert v(State(torch.randn(4))).shape == ()
    assert v.target(states).shape == (3, 2)


def test_feature_network_chain_trains_both():
    torch.manual_seed(0)
    body, head = nn.Linear(4, 8), nn.Linear(8, 1)
    f = FeatureNetwork(body, optim.SGD(body.parameters(), lr=0.01))
    v = VNetwork(head, optim.SGD(head.parameters(), lr=0.01))
    states = _states(torch.randn(6, 4), torch.ones(6))
    features = f(states)
    assert isinstance(features, StateArray)
    assert features.observation.shape == (6, 8)
    assert states.observation.shape == (6, 4)  # the input state is unchanged
    body_before, head_before = body.weight.clone(), head.weight.clone()
    v.reinforce(v(features).pow(2).mean())
    assert body.weight.grad is not None  # gradients flowed into the body ...
    assert torch.equal(body.weight, body_before)  # ... but only f applies them
    assert not torch.equal(head.weight, head_before)
    f.reinforce()
    assert not torch.equal(body.weight, body_before)
    assert body.weight.grad is None


class FieldsModel(nn.Module):
    """Reads two observation fields."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 3), nn.Linear(2, 3)

    def forward(self, obs):
        return self.a(obs.a) + self.b(obs.b)


def test_q_approximations_take_observations_as_their_model_does():
    """Observations in place of a state go to the model as they are (a tensor, or fields), the
    result equal to that of a ``StateArray`` of them that ends no episode."""
    from looprl.approximation import QDist
    from looprl.core import NamedArray

    torch.manual_seed(0)
    obs, actions = torch.randn(5, 4), torch.tensor([0, 2, 1, 1, 0])
    states = _states(obs, torch.ones(5))
    for q in (QNetwork(nn.Linear(4, 3)), QDist(nn.Linear(4, 3 * 7), None, 3, 7)):
        assert torch.equal(q(obs), q(states))
        assert torch.equal(q.target(obs, actions), q.target(states, actions))
    fields = NamedArray(a=obs, b=torch.randn(5, 2))
    model = FieldsModel()
    assert torch.equal(QNetwork(model)(fields, actions),
                       model(fields).gather(-1, actions.unsqueeze(-1)).squeeze(-1))


def test_v_feature_softmax_and_q_continuous_take_observations_as_q_does():
    """(was: an ``AttributeError`` ('Tensor' object has no attribute 'apply'), where ``QNetwork``,
    ``QDist`` and the continuous policies take the tensor)"""
    from looprl.policies import SoftmaxPolicy

    torch.manual_seed(0)
    obs = torch.randn(5, 4)
    states = _states(obs, torch.ones(5))
    v, features = VNetwork(nn.Linear(4, 1), None), FeatureNetwork(nn.Linear(4, 4))
    assert torch.equal(v(obs), v(states))
    assert torch.equal(features(obs), features(states).observation)
    assert torch.equal(v(features(obs)), v(features(states)))
    policy = SoftmaxPolicy(nn.Linear(4, 3))
    assert torch.equal(policy(obs).logits, policy(states).logits)
    q, actions = QContinuous(nn.Linear(6, 1), None), torch.randn(5, 2)
    assert torch.equal(q(obs, actions), q(states, actions))


def test_project_distribution_onto_atoms_of_another_number():
    """``probs`` ``(..., n)`` onto ``len(atoms) != n`` atoms: was torch's "index 2 is out of
    bounds" (the result had ``n`` entries)."""
    probs, support = torch.tensor([[0.5, 0.5]]), torch.tensor([[0.0, 0.75]])
    target = project_distribution(probs, support, torch.tensor([0.0, 0.5, 1.0]))
    torch.testing.assert_close(target, torch.tensor([[0.5, 0.25, 0.25]]))
    atoms = torch.linspace(-1.0, 1.0, 5)  # (n == len(atoms), as C51's: unchanged)
    torch.testing.assert_close(project_distribution(torch.full((2, 5), 0.2), atoms.expand(2, 5),
                                                    atoms), torch.full((2, 5), 0.2))
