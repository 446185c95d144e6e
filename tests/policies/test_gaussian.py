"""Gaussian action distributions (looprl.policies.distributions) against torch.distributions."""

from __future__ import annotations

import copy
import math
import pickle

import torch
from torch.distributions import Normal, TanhTransform, TransformedDistribution

from looprl.policies.distributions import (
    ActionBounds,
    GaussianActor,
    GaussianHead,
    TanhGaussianHead,
    tanh_log_det,
)

LOW, HIGH = [-2.0, 0.0], [2.0, 1.0]  # center (0, 0.5), scale (2, 0.5)


def _params(n: int = 6, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    mean = torch.randn(n, 2, generator=generator)
    log_std = torch.randn(n, 2, generator=generator) * 0.5
    return torch.cat((mean, log_std), -1), mean, log_std


def test_action_bounds_map_unit_actions_onto_the_box() -> None:
    bounds = ActionBounds(LOW, HIGH)
    unit = torch.tensor([[-1.0, -1.0], [0.0, 0.0], [1.0, 1.0]])
    assert torch.allclose(bounds.to_env(unit), torch.tensor([[-2.0, 0.0], [0.0, 0.5], [2.0, 1.0]]))
    assert torch.allclose(bounds.to_unit(bounds.to_env(unit)), unit)
    assert torch.allclose(bounds.clip(torch.tensor([[3.0, -1.0]])), torch.tensor([[2.0, 0.0]]))
    unbounded = ActionBounds([-math.inf], [math.inf])
    assert torch.equal(unbounded.to_env(torch.tensor([[5.0]])), torch.tensor([[5.0]]))
    bounds.to_env(unit)  # fills the per-device cache
    assert pickle.loads(pickle.dumps(bounds))._cache == {}


def test_gaussian_log_prob_and_entropy_match_torch() -> None:
    head = GaussianHead(LOW, HIGH)
    params, mean, log_std = _params()
    actions = head.sample(params)
    reference = Normal(mean, log_std.exp())
    unit = (actions - torch.tensor([0.0, 0.5])) / torch.tensor([2.0, 0.5])
    expected = reference.log_prob(unit).sum(-1)
    assert torch.allclose(head.log_prob(params, actions), expected, atol=1e-5)
    log_prob, entropy = head.log_prob_and_entropy(params, actions)
    assert torch.allclose(log_prob, expected, atol=1e-5)
    assert torch.allclose(entropy, reference.entropy().sum(-1), atol=1e-5)


def test_gaussian_hand_computed_log_prob() -> None:
    head = GaussianHead([-1.0], [1.0])
    # mean 0, log_std log 2 (std 2), action 1: -0.5 * (1/2)^2 - log 2 - 0.5 log(2 pi)
    params = torch.tensor([[0.0, math.log(2.0)]])
    expected = -0.125 - math.log(2.0) - 0.5 * math.log(2 * math.pi)
    assert math.isclose(float(head.log_prob(params, torch.tensor([[1.0]]))), expected, rel_tol=1e-6)


def test_gaussian_sample_statistics_and_mode() -> None:
    head = GaussianHead(LOW, HIGH)
    params = torch.tensor([[0.5, -0.2, math.log(0.1), math.log(0.2)]]).expand(20_000, 4)
    torch.manual_seed(0)
    samples = head.sample(params)
    # unit mean (0.5, -0.2) -> (1.0, 0.4); unit std (0.1, 0.2) -> (0.2, 0.1)
    assert torch.allclose(samples.mean(0), torch.tensor([1.0, 0.4]), atol=0.01)
    assert torch.allclose(samples.std(0), torch.tensor([0.2, 0.1]), atol=0.01)
    assert torch.allclose(head.mode(params[:1]), torch.tensor([[1.0, 0.4]]))
    clamped = head.mode(torch.tensor([[9.0, -9.0, 0.0, 0.0]]))
    assert torch.allclose(clamped, torch.tensor([[2.0, 0.0]]))


def test_gaussian_log_std_is_clamped() -> None:
    head = GaussianHead([-1.0], [1.0], log_std_min=-1.0, log_std_max=0.5)
    _, log_std = head.split(torch.tensor([[0.0, -5.0], [0.0, 3.0]]))
    assert torch.equal(log_std, torch.tensor([[-1.0], [0.5]]))


def test_gaussian_actor_has_a_state_independent_log_std() -> None:
    actor = GaussianActor(torch.nn.Linear(3, 2), 2, log_std_init=-0.5)
    params = actor(torch.randn(4, 3))
    assert params.shape == (4, 4)
    assert torch.equal(params[:, 2:], torch.full((4, 2), -0.5))
    params.sum().backward()
    assert torch.equal(actor.log_std.grad, torch.full((2,), 4.0))


def test_tanh_log_det_is_stable_and_exact() -> None:
    u = torch.tensor([[-3.0, -0.5, 0.0, 0.5, 3.0]])
    direct = torch.log(1 - torch.tanh(u) ** 2).sum(-1)
    assert torch.allclose(tanh_log_det(u), direct, atol=1e-5)
    assert torch.isfinite(tanh_log_det(torch.tensor([[50.0, -50.0]]))).all()


def test_tanh_gaussian_rsample_matches_torch_transformed_distribution() -> None:
    head = TanhGaussianHead(LOW, HIGH)
    params, mean, log_std = _params()
    torch.manual_seed(1)
    actions, log_prob = head.rsample(params)
    reference = TransformedDistribution(Normal(mean, log_std.exp()), [TanhTransform()])
    unit = (actions - torch.tensor([0.0, 0.5])) / torch.tensor([2.0, 0.5])
    assert (unit.abs() < 1).all()
    expected = reference.log_prob(unit.clamp(-1 + 1e-6, 1 - 1e-6)).sum(-1)
    assert torch.allclose(log_prob, expected, atol=1e-3)
    # re-evaluating the same actions through atanh gives the same log-probs
    assert torch.allclose(head.log_prob(params, actions), log_prob, atol=1e-3)


def test_tanh_gaussian_hand_computed_log_prob() -> None:
    head = TanhGaussianHead([-1.0], [1.0])
    # mean 0, std 1, u = 0.5: log N(0.5; 0, 1) - log(1 - tanh(0.5)^2)
    action = torch.tensor([[math.tanh(0.5)]])
    expected = -0.125 - 0.5 * math.log(2 * math.pi) - math.log(1 - math.tanh(0.5) ** 2)
    log_prob = head.log_prob(torch.tensor([[0.0, 0.0]]), action)
    assert math.isclose(float(log_prob), expected, rel_tol=1e-5)


def test_tanh_gaussian_actions_stay_in_bounds_and_gradients_flow() -> None:
    head = TanhGaussianHead(LOW, HIGH)
    params = (torch.randn(1000, 4) * 3).requires_grad_()
    actions, log_prob = head.rsample(params)
    assert (actions >= torch.tensor(LOW)).all() and (actions <= torch.tensor(HIGH)).all()
    (actions.sum() + log_prob.sum()).backward()
    assert torch.isfinite(params.grad).all() and params.grad.abs().sum() > 0
    mode = head.mode(torch.tensor([[0.0, 0.0, 0.0, 0.0]]))
    assert torch.allclose(mode, torch.tensor([[0.0, 0.5]]))
    _, entropy = head.log_prob_and_entropy(params.detach(), actions.detach())
    assert entropy.shape == (1000,)


def test_heads_copy_and_pickle() -> None:
    head = TanhGaussianHead(LOW, HIGH)
    head.mode(torch.zeros(1, 4))
    clone = pickle.loads(pickle.dumps(copy.deepcopy(head)))
    assert torch.equal(clone.mode(torch.zeros(1, 4)), head.mode(torch.zeros(1, 4)))
