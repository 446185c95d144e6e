"""``looprl.nn`` as an ALL user writes against ``all.nn`` (ALL 0.9.1): a superset of
``torch.nn`` with ALL's own layers and signatures."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium.spaces import Box

from looprl import nn
from looprl.approximation import QNetwork
from looprl.core import StateArray


def test_torch_nn_names_work_through_looprl_nn() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
    assert isinstance(model, nn.Module) and isinstance(model, torch.nn.Module)
    q = QNetwork(model, torch.optim.Adam(model.parameters(), lr=1e-2))
    states = StateArray({"observation": torch.randn(5, 4)}, (5,))
    values = q(states)
    assert values.shape == (5, 2)
    loss = nn.functional.mse_loss(values, torch.zeros(5, 2))
    assert torch.equal(loss, nn.F.mse_loss(values, torch.zeros(5, 2)))
    q.reinforce(loss)
    assert q.updates == 1
    assert nn.init is torch.nn.init and nn.utils is torch.nn.utils
    assert nn.Conv2d is torch.nn.Conv2d and "Sequential" in nn.__all__


def test_looprl_names_win_and_flatten_behaves_as_alls() -> None:
    assert nn.Flatten.__module__ == "looprl.nn.layers"
    x = torch.arange(24.0).view(2, 3, 4)
    assert torch.equal(nn.Flatten()(x), x.view(x.size()[0], -1))  # ALL's Flatten


def test_tanh_action_bound_squashes_into_the_box() -> None:
    space = Box(low=np.array([-2.0, 0.0], np.float32), high=np.array([2.0, 1.0], np.float32))
    bound = nn.TanhActionBound(space)
    out = bound(torch.tensor([[0.0, 0.0], [50.0, -50.0], [0.5, 0.5]]))
    assert torch.allclose(out[0], torch.tensor([0.0, 0.5]))
    assert torch.allclose(out[1], torch.tensor([2.0, 0.0]))
    expected = torch.tanh(torch.tensor(0.5)) * torch.tensor([2.0, 0.5]) + torch.tensor([0.0, 0.5])
    assert torch.allclose(out[2], expected)
    with pytest.raises(TypeError, match="Box action space"):
        nn.TanhActionBound(3)
    unbounded = Box(low=np.array([-np.inf, 0.0], np.float32),
                    high=np.array([np.inf, 1.0], np.float32))
    out = nn.TanhActionBound(unbounded)(torch.tensor([[0.5, 0.0]]))
    assert torch.allclose(out, torch.tensor([[math.tanh(0.5), 0.5]]))  # (not NaN)


def test_rlnetwork_takes_alls_second_argument_and_reports_its_device() -> None:
    net = nn.RLNetwork(nn.Linear(4, 2), (4,))
    assert net.device == torch.device("cpu")
    states = StateArray({"observation": torch.ones(3, 4), "mask": torch.tensor([1.0, 0.0, 1.0])},
                        (3,))
    out = net(states)
    assert out.shape == (3, 2) and torch.all(out[1] == 0)


def test_categorical_dueling_has_alls_signature_and_flat_logits() -> None:
    torch.manual_seed(0)
    value, advantage = nn.Linear(3, 5), nn.Linear(3, 2 * 5)
    head = nn.CategoricalDueling(value, advantage)
    x = torch.randn(4, 3)
    out = head(x)
    assert out.shape == (4, 10)
    v, a = value(x).view(4, 1, 5), advantage(x).view(4, 2, 5)
    assert torch.allclose(out, (v + a - a.mean(1, keepdim=True)).view(4, 10))


def test_weighted_losses_and_td_loss_match_hand_computed_values() -> None:
    estimate = torch.tensor([1.0, 2.0, 4.0])
    target = torch.tensor([1.5, 0.0, 4.0])
    weight = torch.tensor([2.0, 1.0, 3.0])
    assert torch.isclose(nn.weighted_mse_loss(estimate, target, weight),
                         torch.tensor((2 * 0.25 + 4.0) / 3))
    # Huber: 0.5 * 0.5^2 = 0.125 (|e| < 1), |e| - 0.5 = 1.5 (|e| = 2)
    assert torch.isclose(nn.weighted_smooth_l1_loss(estimate, target, weight, reduction="sum"),
                         torch.tensor(2 * 0.125 + 1.5))
    loss = nn.td_loss(nn.functional.mse_loss)
    assert torch.isclose(loss(estimate, torch.tensor([1.0, -1.0, 0.0])), torch.tensor(2 / 3))
    with pytest.raises(ValueError, match="reduction"):
        nn.weighted_mse_loss(estimate, target, weight, reduction="none")


def test_dueling_scale_and_float() -> None:
    dueling = nn.Dueling(nn.Linear(2, 1), nn.Linear(2, 3))
    assert isinstance(dueling.aggregation, nn.Aggregation)
    assert torch.equal(nn.Scale(0.5)(torch.tensor([2.0, 4.0])), torch.tensor([1.0, 2.0]))
    assert nn.Float()(torch.tensor([1], dtype=torch.uint8)).dtype == torch.float32


def test_tanh_action_bound_is_the_policies_action_bounds_map() -> None:
    """One map onto a ``Box``'s bounds: ``TanhActionBound`` applies ``ActionBounds.to_env`` to
    ``tanh``, its buffers shaped as the space (a 2-D box here)."""
    from looprl.nn.layers import ActionBounds
    from looprl.policies import ActionBounds as PolicyActionBounds

    assert PolicyActionBounds is ActionBounds
    low = np.array([[-2.0, 0.0], [-np.inf, -1.0]], dtype=np.float32)
    space = Box(low=low, high=np.array([[2.0, 1.0], [np.inf, 3.0]], dtype=np.float32))
    bound = nn.TanhActionBound(space)
    assert bound.weight.shape == bound.bias.shape == (2, 2)
    x = torch.randn(5, 2, 2, generator=torch.Generator().manual_seed(0))
    expected = ActionBounds(space.low, space.high).to_env(torch.tanh(x).reshape(5, 4))
    torch.testing.assert_close(bound(x), expected.reshape(5, 2, 2))
    assert set(bound.state_dict()) == {"weight", "bias"}
