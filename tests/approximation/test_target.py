"""Tests of target networks: trivial, fixed (hard updates) and Polyak (soft updates)."""

from __future__ import annotations

import pytest
import torch
from torch import nn, optim

from looprl.approximation import Approximation, FixedTarget, PolyakTarget, TrivialTarget


def _shift(model: nn.Module, amount: float) -> None:
    with torch.no_grad():
        for param in model.parameters():
            param.add_(amount)


def test_trivial_target_is_the_model():
    model = nn.Linear(2, 2)
    target = TrivialTarget()
    target.init(model)
    x = torch.ones(1, 2)
    _shift(model, 1.0)
    target.update()
    assert torch.equal(target(x), model(x))


def test_fixed_target_changes_only_every_n_updates():
    model = nn.Linear(2, 2)
    target = FixedTarget(3)
    target.init(model)
    x = torch.ones(1, 2)
    initial = target(x)
    _shift(model, 1.0)
    for _ in range(2):
        target.update()
        assert torch.equal(target(x), initial)
    target.update()
    assert torch.equal(target(x), model(x).detach())
    assert not any(p.requires_grad for p in target._target.parameters())


def test_fixed_target_through_approximation():
    torch.manual_seed(0)
    model = nn.Linear(2, 1)
    f = Approximation(model, optim.SGD(model.parameters(), lr=0.1), target=FixedTarget(2))
    x = torch.ones(4, 2)
    initial = f.target(x)
    f.reinforce(f(x).pow(2).mean())
    assert torch.equal(f.target(x), initial)
    assert not torch.equal(f.no_grad(x), initial)
    f.reinforce(f(x).pow(2).mean())
    assert torch.equal(f.target(x), f.no_grad(x))


def test_polyak_target_moves_by_rate_of_the_difference():
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    target = PolyakTarget(0.1)
    target.init(model)
    old = {k: v.clone() for k, v in target._target.state_dict().items()}
    _shift(model, 1.0)
    with torch.no_grad():
        model[1].running_mean.fill_(2.0)
    model[1].num_batches_tracked.fill_(7)
    target.update()
    new = target._target.state_dict()
    source = model.state_dict()
    for key in ("0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean"):
        expected = old[key] + 0.1 * (source[key] - old[key])
        assert torch.allclose(new[key], expected, atol=1e-6), key
    assert new["1.num_batches_tracked"].item() == 7


def test_load_state_dict_syncs_copy_targets():
    model = nn.Linear(2, 2)
    f = Approximation(model, target=PolyakTarget(0.01))
    other = nn.Linear(2, 2)
    f.load_state_dict(other.state_dict())
    x = torch.ones(1, 2)
    assert torch.allclose(f.target(x), other(x))


@pytest.mark.parametrize("make", [lambda: FixedTarget(0), lambda: PolyakTarget(0.0),
                                  lambda: PolyakTarget("0.1"), lambda: PolyakTarget(True)])
def test_invalid_arguments(make):
    with pytest.raises(ValueError):
        make()
