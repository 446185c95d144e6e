"""``OptimizerStep``: a fused Adam's kernels called directly give exactly ``optimizer.step()``
(up to rounding with a gradient factor)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from looprl.approximation import Approximation
from looprl.approximation.optimizer_step import OptimizerStep


def _pair(make_optimizer):
    """Two identical models, each with its optimizer made by ``make_optimizer(params)``."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    twin = copy.deepcopy(model)
    return (model, make_optimizer(model.parameters())), (twin, make_optimizer(twin.parameters()))


def _backward(model: nn.Module, x: torch.Tensor) -> None:
    model(x).square().mean().backward()


def _assert_same(a: torch.optim.Optimizer, b: torch.optim.Optimizer, ma, mb) -> None:
    for p, q in zip(ma.parameters(), mb.parameters()):
        assert torch.equal(p, q)
        for key, value in a.state[p].items():
            assert torch.equal(value, b.state[q][key]), key


@pytest.mark.parametrize("make_optimizer", [
    lambda p: torch.optim.Adam(p, lr=1e-2, fused=True),
    lambda p: torch.optim.Adam(p, lr=1e-2, fused=True, amsgrad=True, weight_decay=0.1),
    lambda p: torch.optim.AdamW(p, lr=1e-2, fused=True),
    lambda p: torch.optim.Adam(p, lr=1e-2),  # not fused: always optimizer.step()
    lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9),
], ids=["adam", "amsgrad-decay", "adamw", "adam-foreach", "sgd"])
def test_same_parameters_and_state_as_optimizer_step(make_optimizer):
    (model, optimizer), (twin, reference) = _pair(make_optimizer)
    step = OptimizerStep(optimizer)
    generator = torch.Generator().manual_seed(1)
    for i in range(12):
        x = torch.randn(5, 3, generator=generator)
        if i == 4:  # a learning-rate schedule sets the groups' lr between steps
            for group in optimizer.param_groups + reference.param_groups:
                group["lr"] = 3e-3
        if i == 7:  # a parameter without a gradient: Adam leaves it out
            model[0].weight.requires_grad_(False)
            twin[0].weight.requires_grad_(False)
        _backward(model, x)
        _backward(twin, x)
        step()
        reference.step()
        for p in [*model.parameters(), *twin.parameters()]:
            p.grad = None
        _assert_same(optimizer, reference, model, twin)


def test_fused_adam_takes_the_kernels_and_follows_load_state_dict():
    (model, optimizer), (twin, reference) = _pair(
        lambda p: torch.optim.Adam(p, lr=1e-2, fused=True))
    step = OptimizerStep(optimizer)
    x = torch.randn(5, 3)

    def steps(n: int) -> None:
        for _ in range(n):
            _backward(model, x)
            step()
            model.zero_grad(set_to_none=True)

    steps(2)
    assert step._groups, "the lean path was not taken after the first step"
    saved = copy.deepcopy((model.state_dict(), optimizer.state_dict()))
    steps(1)
    model.load_state_dict(saved[0])
    optimizer.load_state_dict(saved[1])  # new state tensors: the lists are made again
    steps(2)
    for _ in range(4):
        _backward(twin, x)
        reference.step()
        twin.zero_grad(set_to_none=True)
    _assert_same(optimizer, reference, model, twin)


def test_step_hooks_take_the_full_step():
    (model, optimizer), _ = _pair(lambda p: torch.optim.Adam(p, fused=True))
    calls = []
    optimizer.register_step_post_hook(lambda *args: calls.append(1))
    step = OptimizerStep(optimizer)
    for _ in range(3):
        _backward(model, torch.randn(4, 3))
        step()
    assert len(calls) == 3


def test_approximation_trains_as_with_optimizer_step(monkeypatch):
    """``Approximation.step`` through ``OptimizerStep`` ends where ``optimizer.step()`` does
    (with clipping and denormal flushing; up to the rounding of the kernel's division by the
    inverse clipping factor), and a deep copy steps on its own state."""
    def run(lean: bool) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1))
        f = Approximation(model, torch.optim.Adam(model.parameters(), lr=1e-2, fused=True),
                          clip_grad=0.5)
        if not lean:
            monkeypatch.setattr(OptimizerStep, "_ready", lambda self: False)
        x = torch.randn(32, 3)
        for i in range(20):
            f.reinforce((f(x) - x.sum(1, keepdim=True)).square().mean())
            if i == 10:
                f = copy.deepcopy(f)
        monkeypatch.undo()
        return [p.detach().clone() for p in f.model.parameters()]

    lean, full = run(True), run(False)
    for a, b in zip(lean, full):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("factor", ["number", "tensor", "subset"])
def test_grad_factor_steps_as_multiplied_gradients(factor):
    """``step(grad_factor)`` is ``optimizer.step()`` on the gradients times the factor: in the
    kernel (a number or a tensor; up to rounding), or multiplied first where the scaled
    parameters are not all the optimizer's (exactly). Factors change between steps (as
    clipping's do), so that Adam's moments see them; 0 zeroes the gradients."""
    (model, optimizer), (twin, reference) = _pair(
        lambda p: torch.optim.Adam(p, lr=1e-2, fused=True))
    scaled = list(model.parameters()) + ([nn.Parameter(torch.ones(2))] if factor == "subset"
                                         else [])
    step = OptimizerStep(optimizer, scaled)
    generator = torch.Generator().manual_seed(1)
    for i, value in enumerate([1.0, 0.3, 2.5, 0.05, 0.0, 0.7, 1.3]):
        x = torch.randn(5, 3, generator=generator)
        _backward(model, x)
        _backward(twin, x)
        step(torch.tensor(value) if factor == "tensor" else value)
        torch._foreach_mul_([p.grad for p in twin.parameters()], value)
        reference.step()
        model.zero_grad(set_to_none=True)
        twin.zero_grad(set_to_none=True)
        assert bool(step._groups) == (i > 0)  # the kernel from the second step on
        if factor == "subset":
            _assert_same(optimizer, reference, model, twin)
            continue
        for p, q in zip(model.parameters(), twin.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
            for key, value in optimizer.state[p].items():
                torch.testing.assert_close(value, reference.state[q][key], rtol=1e-6,
                                           atol=1e-9)


def _step_side_by_side(n, step, model, reference, twin, x) -> None:
    """``n`` steps of ``step`` on ``model`` and of ``reference.step()`` on ``twin``."""
    for _ in range(n):
        _backward(model, x)
        step()
        model.zero_grad(set_to_none=True)
        _backward(twin, x)
        reference.step()
        twin.zero_grad(set_to_none=True)


def test_saved_and_loaded_state_steps_on_like_the_reference():
    """The step counts are views of one tensor once the lean path runs: ``torch.save`` of
    the state dict and a fresh optimizer loading it go on as ``optimizer.step()`` does."""
    import io

    (model, optimizer), (twin, reference) = _pair(
        lambda p: torch.optim.Adam(p, lr=1e-2, fused=True))
    step, x = OptimizerStep(optimizer), torch.randn(5, 3)
    _step_side_by_side(3, step, model, reference, twin, x)
    file = io.BytesIO()
    torch.save(optimizer.state_dict(), file)
    file.seek(0)
    loaded = torch.optim.Adam(model.parameters(), lr=1e-2, fused=True)
    loaded.load_state_dict(torch.load(file))
    step = OptimizerStep(loaded)
    _step_side_by_side(2, step, model, reference, twin, x)
    _assert_same(loaded, reference, model, twin)
    assert [float(s["step"]) for s in loaded.state.values()] == [5.0] * 4
