"""Tests of Approximation: training, loss scaling, clipping, modes, errors and logging."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn, optim

from helpers import fit_sum
from looprl.approximation import Approximation, FixedTarget, JointApproximation, ProgressLR


class RecordingLogger:
    """Collects what an approximation logs."""

    def __init__(self):
        self.losses: list[tuple[str, float]] = []
        self.schedules: list[tuple[str, float]] = []

    def add_loss(self, name, value, step="frame"):
        self.losses.append((name, float(value)))

    def add_schedule(self, name, value, step="frame"):
        self.schedules.append((name, float(value)))


def _sgd_delta(loss_scaling: float, clip_grad: float = 0) -> torch.Tensor:
    """Parameter change of one SGD(lr=1) step, i.e. minus the (scaled, clipped) gradient."""
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    before = model.weight.detach().clone()
    f = Approximation(
        model,
        optim.SGD(model.parameters(), lr=1.0),
        loss_scaling=loss_scaling,
        clip_grad=clip_grad,
    )
    x = torch.ones(8, 4) * 3.0
    f.reinforce((f(x) - 100.0).pow(2).mean())
    return model.weight.detach() - before


def _fresh_mse(f: Approximation) -> float:
    x = torch.randn((1024, 16))
    return nn.functional.mse_loss(f.no_grad(x), x.sum(1, keepdim=True)).item()


def _train_sum(lr: float) -> tuple[Approximation, float]:
    """The seed's supervised example: 200 Adam steps fitting the sum of 16 features."""
    torch.manual_seed(0)
    model = nn.Linear(16, 1)
    optimizer = optim.Adam(model.parameters(), lr=lr)
    f = Approximation(model, optimizer)
    initial = _fresh_mse(f)
    fit_sum(f)
    return f, initial


def test_seed_supervised_example_learns_sum():
    # verbatim seed settings (lr=1e-2): Adam's ~lr-sized steps leave the weights short of 1
    # after 200 steps, so the error is small but not yet ~0
    f, initial = _train_sum(1e-2)
    final = _fresh_mse(f)
    assert final < 1.0
    assert final < 0.05 * initial
    assert f.updates == 200


def test_supervised_example_converges_with_larger_lr():
    f, _ = _train_sum(3e-2)
    assert _fresh_mse(f) < 0.05


def test_loss_scaling_doubles_gradients():
    assert torch.allclose(_sgd_delta(2.0), 2.0 * _sgd_delta(1.0))
    for bad in ("2", 0, -1.0, True):  # (text was taken, failing at the first update)
        with pytest.raises(ValueError, match="loss_scaling multiplies the loss, a number > 0"):
            _sgd_delta(bad)


def test_clip_grad_bounds_gradient_norm():
    unclipped = _sgd_delta(1.0)
    clipped = _sgd_delta(1.0, clip_grad=0.5)
    assert unclipped.norm() > 0.5
    # weight and bias together are clipped to 0.5, so the weight part is at most 0.5
    assert clipped.norm() <= 0.5 + 1e-5
    # the direction is preserved
    cos = nn.functional.cosine_similarity(clipped.flatten(), unclipped.flatten(), dim=0)
    assert cos > 0.999


@pytest.mark.parametrize("width", [8, 256])  # a small network's norm: one concatenated vector
def test_clipped_steps_are_clip_grad_norm_s(width):
    """An SGD step with ``clip_grad`` moves the parameters as ``clip_grad_norm_`` then SGD do,
    and ``grad_norm`` is the norm before clipping, for small and large networks."""
    def run(clip: bool) -> tuple[list[torch.Tensor], torch.Tensor]:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, width), nn.Tanh(), nn.Linear(width, width))
        f = Approximation(model, optim.SGD(model.parameters(), lr=0.1),
                          clip_grad=0.5 if clip else 0)
        x = torch.randn(16, 3)
        loss = f(x).square().sum()
        if clip:
            f.reinforce(loss)
            return [p.detach() for p in model.parameters()], f.grad_norm
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        f.step()
        return [p.detach() for p in model.parameters()], norm

    assert Approximation(nn.Linear(width, width))._small == (width == 8)
    (ours, norm), (reference, reference_norm) = run(True), run(False)
    assert float(norm) > 0.5
    torch.testing.assert_close(norm, reference_norm)
    for a, b in zip(ours, reference):
        torch.testing.assert_close(a, b)


def test_clipping_spreads_a_nan_and_zeroes_at_an_infinite_norm():
    """CPU clipping multiplies as ``clip_grad_norm_`` does: by NaN at a NaN norm, by 0 at an
    infinite one, not at all below ``max_norm``."""
    from looprl.approximation.approximation import _clip_gradients

    for small in (True, False):
        params = [nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(2, 2))]
        params[0].grad, params[1].grad = torch.ones(3), torch.full((2, 2), float("nan"))
        assert _clip_gradients(params, 0.5, True, small).isnan()
        assert params[0].grad.isnan().all()
        params[0].grad, params[1].grad = torch.ones(3), torch.full((2, 2), float("inf"))
        assert _clip_gradients(params, 0.5, True, small).isinf()
        assert torch.equal(params[0].grad, torch.zeros(3))
        params[0].grad, params[1].grad = torch.ones(3), torch.zeros(2, 2)
        torch.testing.assert_close(_clip_gradients(params, 5.0, True, small),
                                   torch.tensor(3.0).sqrt())  # below 5: left as they are
        assert torch.equal(params[0].grad, torch.ones(3))


@pytest.mark.parametrize("make", [lambda p: optim.SGD(p, lr=0.1), lambda p: optim.Adam(p)])
def test_clipping_a_non_finite_gradient_norm_raises_and_leaves_parameters(make):
    """A finite loss with an infinite gradient (``sqrt`` at 0) is a ``FloatingPointError`` at
    that update, nothing stepped, as ALL's ``clip_grad_norm_(error_if_nonfinite=True)`` (was:
    every parameter NaN, and the error one update later blamed the loss)."""
    model = nn.Linear(2, 1)
    nn.init.zeros_(model.weight), nn.init.zeros_(model.bias)
    f = Approximation(model, make(model.parameters()), clip_grad=1.0, name="q")
    loss = f(torch.ones(3, 2)).abs().sqrt().mean()
    assert loss.item() == 0.0
    with pytest.raises(FloatingPointError, match="'q': the gradient norm is nan at update 0"):
        f.reinforce(loss)
    assert torch.equal(model.weight, torch.zeros(1, 2)) and torch.equal(model.bias, torch.zeros(1))
    assert all(p.grad is None for p in model.parameters())


def test_step_clears_gradients_and_returns_self():
    model = nn.Linear(2, 1)
    f = Approximation(model, optim.SGD(model.parameters(), lr=0.1))
    assert f.reinforce(f(torch.ones(1, 2)).sum()) is f
    assert all(p.grad is None for p in model.parameters())


def test_no_grad_and_target_do_not_track_gradients():
    model = nn.Linear(2, 1)
    f = Approximation(model)
    x = torch.ones(3, 2)
    assert f(x).requires_grad
    assert not f.no_grad(x).requires_grad
    assert not f.target(x).requires_grad
    assert torch.equal(f.target(x), f.no_grad(x))


def test_eval_uses_eval_mode_and_restores_previous_mode():
    model = nn.Sequential(nn.Linear(4, 64), nn.Dropout(0.5))
    f = Approximation(model)
    x = torch.ones(2, 4)
    assert model.training
    out1, out2 = f.eval(x), f.eval(x)
    assert torch.equal(out1, out2)  # dropout is off
    assert not out1.requires_grad
    assert model.training
    model.eval()
    f.eval(x)
    assert not model.training


def test_reinforce_without_optimizer_raises():
    f = Approximation(nn.Linear(2, 1), name="critic")
    with pytest.raises(RuntimeError, match="critic.*no optimizer"):
        f.reinforce(f(torch.ones(1, 2)).sum())


def test_reinforce_of_a_loss_without_gradients_is_one_line():
    """(was: torch's "element 0 of tensors does not require grad" from ``backward``)"""
    model = nn.Linear(2, 1)
    f = Approximation(model, optim.SGD(model.parameters(), lr=0.1))
    x = torch.ones(3, 2)
    for loss in (f.no_grad(x).pow(2).mean(), f.target(x).sum(), 1.0):
        with pytest.raises(ValueError, match=r"reinforce\(loss\) takes a loss tensor with grad"):
            f.reinforce(loss)
    # a loss left per sample (reduction='none'; was: torch's "grad can be implicitly created
    # only for scalar outputs")
    with pytest.raises(ValueError, match=r"takes one number, got a loss of shape \(3, 1\): "
                       r"reduce it first \(loss.mean\(\)"):
        f.reinforce(nn.functional.mse_loss(f(x), torch.zeros(3, 1), reduction="none"))
    assert f.updates == 0
    f.reinforce(f(x)[:1, 0])  # (one element: torch takes it, and so does reinforce)
    assert f.updates == 1


def test_nan_loss_raises_helpful_error_and_leaves_parameters():
    model = nn.Linear(2, 1)
    f = Approximation(model, optim.SGD(model.parameters(), lr=0.1), name="q")
    before = copy.deepcopy(model.state_dict())
    loss = f(torch.ones(1, 2)).sum() * float("nan")
    with pytest.raises(FloatingPointError, match="'q'.*lower learning rate"):
        f.reinforce(loss)
    assert torch.equal(model.weight, before["weight"])
    assert all(p.grad is None for p in model.parameters())


def test_nan_check_runs_at_every_update_not_only_the_logged_ones():
    """A diverged loss between two logged updates stops training at once (was: it trained on
    until the next logged update, and a run that ended before that finished with NaN
    parameters and no error)."""
    model = nn.Linear(2, 1)
    f = Approximation(model, optim.SGD(model.parameters(), lr=0.1), log_every=100)
    f.reinforce(f(torch.ones(1, 2)).sum())  # update 0: logged, finite
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(FloatingPointError, match="update 1"):
        f.reinforce(f(torch.ones(1, 2)).sum() * float("inf"))  # update 1: not a logged one
    assert torch.equal(model.weight, before["weight"])
    losses = f(torch.ones(3, 2)).squeeze(1) * torch.tensor([1.0, float("nan"), 1.0])
    losses.sum().backward()
    with pytest.raises(FloatingPointError):  # (a loss of several elements too)
        f.step(losses)


def test_logs_unscaled_loss_and_lr_every_log_every_updates():
    model = nn.Linear(1, 1, bias=False)
    optimizer = optim.SGD(model.parameters(), lr=0.5)
    logger = RecordingLogger()
    f = Approximation(
        model,
        optimizer,
        name="v",
        logger=logger,
        log_every=2,
        loss_scaling=3.0,
        lr_scheduler=ProgressLR(optimizer, lambda progress: 0.5 * (1 - progress), 4),
    )
    for _ in range(5):
        with torch.no_grad():
            model.weight.fill_(1.0)
        f.reinforce(f(torch.ones(1, 1)).sum())
    assert logger.losses == [("v", 1.0)] * 3
    assert logger.schedules == [("v/lr", 0.5), ("v/lr", 0.25), ("v/lr", 0.0)]


def test_passthroughs_and_default_device():
    model = nn.Linear(3, 2)
    f = Approximation(model)
    assert f.device == torch.device("cpu")
    assert Approximation(nn.ReLU()).device == torch.device("cpu")
    assert [p.data_ptr() for p in f.parameters()] == [p.data_ptr() for p in model.parameters()]
    other = nn.Linear(3, 2)
    f.load_state_dict(other.state_dict())
    assert torch.equal(f.state_dict()["weight"], other.weight)
    with pytest.raises(ValueError, match="^Unknown device 'gpu': use 'cpu', 'cuda' or 'cuda:N'"):
        Approximation(model, device="gpu")


def test_zero_grad_clears_accumulated_gradients():
    model = nn.Linear(2, 1)
    f = Approximation(model, optim.SGD(model.parameters(), lr=0.1))
    f(torch.ones(1, 2)).sum().backward()
    assert model.weight.grad is not None
    f.zero_grad()
    assert model.weight.grad is None


def test_a_step_leaves_the_users_flush_denormal_on() -> None:
    """A user's ``torch.set_flush_denormal(True)`` stays on after a step (was: every step turned
    flushing off, for the rest of the process); off, it stays off."""
    def flushing_denormals() -> bool:
        return torch.tensor([1e-42]).mul(1.0).item() == 0.0  # (a float32 denormal)

    model = nn.Linear(2, 1)
    f = Approximation(model, optim.Adam(model.parameters()))
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush denormal floats")
    try:
        f.reinforce(f(torch.ones(1, 2)).sum())
        assert flushing_denormals()
        torch.set_flush_denormal(False)
        f.reinforce(f(torch.ones(1, 2)).sum())
        assert not flushing_denormals()
    finally:
        torch.set_flush_denormal(False)


def test_joint_approximation_steps_each_part_with_its_own_optimizer() -> None:
    """One backward pass, then each part's step (its optimizer, clipping and target), as ALL's
    agents train several networks; ``target`` is each part's; loading syncs the parts'."""
    torch.manual_seed(0)
    first, second = nn.Linear(2, 1), nn.Linear(2, 1)
    parts = [Approximation(first, optim.SGD(first.parameters(), lr=1.0), name="a",
                           target=FixedTarget(10)),
             Approximation(second, optim.SGD(second.parameters(), lr=0.5), name="b",
                           clip_grad=1e-3)]
    joint = JointApproximation(nn.ModuleList([first, second]), parts, "joint")
    before = [first.weight.detach().clone(), nn.utils.parameters_to_vector(second.parameters())]
    x = torch.ones(1, 2)
    joint.reinforce(first(x).sum() + 100.0 * second(x).sum())
    assert torch.allclose(first.weight, before[0] - 1.0)  # (lr 1, gradient 1)
    step = nn.utils.parameters_to_vector(second.parameters()) - before[1]
    assert torch.allclose(step.norm(), torch.tensor(0.5e-3), rtol=1e-3)  # (clipped to 1e-3)
    assert [part.updates for part in parts] == [1, 1] and joint.updates == 1
    targets = joint.target(x)
    assert len(targets) == 2 and not torch.equal(targets[0], first(x))  # (a's: not yet copied)
    assert set(joint.hyperparameters()) == {"hp/lr/a", "hp/lr/b", "hp/target_period"}
    joint.load_state_dict(joint.state_dict())
    assert torch.equal(joint.target(x)[0], first(x).detach())
