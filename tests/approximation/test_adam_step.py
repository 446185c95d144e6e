"""Tests of AdamStep: Approximation's functional step of a plain Adam/AdamW is
``optimizer.step()``'s arithmetic and state, through copies, checkpoints and fallbacks."""

from __future__ import annotations

import copy
import io
import pickle

import pytest
import torch
from torch import nn, optim

from looprl.approximation import Approximation


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))


def _batches(n: int, seed: int = 1) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(32, 4, generator=generator) for _ in range(n)]


def _train(f: Approximation, batches: list[torch.Tensor]) -> None:
    for x in batches:
        f.reinforce((f(x) - 1.0).square().mean() * 1000.0)  # (large gradients: clipping acts)


def _flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def _assert_same_state(a: optim.Optimizer, b: optim.Optimizer, atol: float) -> None:
    sa, sb = a.state_dict()["state"], b.state_dict()["state"]
    assert sa.keys() == sb.keys()
    for index in sa:
        assert sa[index].keys() == sb[index].keys()
        assert torch.equal(sa[index]["step"], sb[index]["step"])
        for key in sa[index]:
            torch.testing.assert_close(sa[index][key], sb[index][key], atol=atol, rtol=0)


@pytest.mark.parametrize("kind", [optim.Adam, optim.AdamW])
@pytest.mark.parametrize("fused", [True, None])
@pytest.mark.parametrize("clip_grad", [0.0, 0.5])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_functional_step_is_optimizer_step(kind, fused, clip_grad, amsgrad):
    """50 steps move the parameters and the optimizer state as ``optimizer.step()`` does:
    exactly, up to the rounding of the clipping factor a fused kernel divides by (1e-6)."""
    runs = []
    for functional in (True, False):
        model = _model()
        optimizer = kind(model.parameters(), lr=1e-2, weight_decay=0.01, amsgrad=amsgrad,
                         fused=fused)
        f = Approximation(model, optimizer, clip_grad=clip_grad, functional_step=functional)
        _train(f, _batches(50))
        runs.append((model, optimizer, f.grad_norm))
    (ours, our_optimizer, our_norm), (plain, plain_optimizer, plain_norm) = runs
    atol = 1e-6 if fused and clip_grad else 0.0
    torch.testing.assert_close(_flat(ours), _flat(plain), atol=atol, rtol=0)
    _assert_same_state(our_optimizer, plain_optimizer, atol)
    if clip_grad:
        assert float(our_norm) > clip_grad  # (the factor did act)
        torch.testing.assert_close(our_norm, plain_norm, atol=0, rtol=1e-5 if atol else 0)


def _count_steps(optimizer: optim.Optimizer) -> list[int]:
    calls = [0]
    optimizer.register_step_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls


def test_plain_adam_steps_without_optimizer_step_after_its_first():
    """The first step makes the optimizer's state through ``optimizer.step()``; later ones are
    functional (its step hooks do not run) unless ``functional_step=False``, and an Adam
    subclass always steps itself."""
    class MyAdam(optim.Adam):
        pass

    for kind, functional, expected in ((optim.Adam, True, 1), (optim.AdamW, True, 1),
                                       (optim.Adam, False, 10), (MyAdam, True, 10)):
        model = _model()
        optimizer = kind(model.parameters(), lr=1e-2)
        calls = _count_steps(optimizer)
        _train(Approximation(model, optimizer, functional_step=functional), _batches(10))
        assert calls[0] == expected, (kind, functional)


def test_parameters_without_gradients_are_left_as_adam_leaves_them():
    """A step where a parameter has no gradient is ``optimizer.step()`` (Adam skips it): a
    layer left out of the loss after 5 steps neither moves nor steps its state later, the
    others train as with Adam."""
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.head = nn.Linear(4, 3), nn.Linear(4, 3)
            self.use_head = True

        def forward(self, x):
            return self.body(x) + self.head(x) if self.use_head else self.body(x)

    runs = []
    for functional in (True, False):
        torch.manual_seed(0)
        model = TwoHeads()
        optimizer = optim.Adam(model.parameters(), lr=1e-2, fused=True)
        f = Approximation(model, optimizer, functional_step=functional)
        _train(f, _batches(5))
        model.use_head = False
        before = _flat(model.head)
        _train(f, _batches(5, seed=2))
        assert torch.equal(_flat(model.head), before)
        assert all(float(optimizer.state[p]["step"]) == 5 for p in model.head.parameters())
        runs.append(_flat(model))
    assert torch.equal(*runs)


def test_learning_rate_set_between_steps_applies():
    """A learning rate set in the parameter groups (schedules, ``hp/lr``) applies at the next
    functional step: at 0 the parameters stay."""
    model = _model()
    optimizer = optim.Adam(model.parameters(), lr=1e-2, fused=True)
    f = Approximation(model, optimizer, clip_grad=0.5)
    _train(f, _batches(3))
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    before = _flat(model)
    _train(f, _batches(3, seed=2))
    assert torch.equal(_flat(model), before)


def _trained(fused: bool | None = True) -> Approximation:
    model = _model()
    f = Approximation(model, optim.Adam(model.parameters(), lr=1e-2, fused=fused), clip_grad=0.5)
    _train(f, _batches(10))
    return f


def _reference() -> torch.Tensor:
    """The parameters after 10 + 10 steps of one approximation."""
    f = _trained()
    _train(f, _batches(10, seed=2))
    return _flat(f.model)


def test_loaded_checkpoint_continues_as_the_original():
    """The model's and optimizer's state_dicts (through torch.save, weights only) loaded into
    a fresh approximation continue training exactly as the original does."""
    f = _trained()
    buffer = io.BytesIO()
    torch.save({"model": f.model.state_dict(), "optimizer": f.optimizer.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    g = _trained()  # (state already made, on other batches, then replaced: its step lists
    _train(g, _batches(5, seed=3))  # must be rebuilt)
    g.load_state_dict(saved["model"])
    g.optimizer.load_state_dict(saved["optimizer"])
    _train(g, _batches(10, seed=2))
    assert torch.equal(_flat(g.model), _reference())


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copies_continue_as_the_original(how):
    """A deep copy or an unpickled copy of an approximation trains on its own copies of the
    parameters and optimizer state, exactly as the original would; the original is left."""
    f = _trained()
    g = copy.deepcopy(f) if how == "deepcopy" else pickle.loads(pickle.dumps(f))
    before = _flat(f.model)
    _train(g, _batches(10, seed=2))
    assert torch.equal(_flat(f.model), before)
    assert torch.equal(_flat(g.model), _reference())
