"""Tests of the pure loss functions in ``looprl.agents.losses`` against hand computations."""

from __future__ import annotations

import math

import pytest
import torch

from looprl.agents.losses import (
    dqn_loss,
    normalize,
    ppo_loss,
    ppo_policy_loss,
    td_target,
    value_loss,
)


def test_td_target() -> None:
    rewards = torch.tensor([1.0, 2.0, -1.0])
    next_values = torch.tensor([10.0, 5.0, 3.0])
    masks = torch.tensor([1.0, 0.0, 1.0])
    expected = torch.tensor([1.0 + 0.9 * 10.0, 2.0, -1.0 + 0.9 * 3.0])
    assert torch.allclose(td_target(rewards, next_values, masks, 0.9), expected)


def test_dqn_loss_huber_and_mse() -> None:
    values = torch.zeros(3)
    targets = torch.tensor([0.5, 2.0, -3.0])
    # Huber (beta 1): 0.5 * d^2 if |d| < 1 else |d| - 0.5
    huber = [0.5 * 0.5**2, 2.0 - 0.5, 3.0 - 0.5]
    assert torch.isclose(dqn_loss(values, targets), torch.tensor(sum(huber) / 3))
    mse = [0.25, 4.0, 9.0]
    assert torch.isclose(dqn_loss(values, targets, huber=False), torch.tensor(sum(mse) / 3))


def test_dqn_loss_weights() -> None:
    values = torch.zeros(3)
    targets = torch.tensor([0.5, 2.0, -3.0])
    weights = torch.tensor([1.0, 2.0, 0.0])
    expected_huber = (1.0 * 0.125 + 2.0 * 1.5 + 0.0 * 2.5) / 3
    assert torch.isclose(dqn_loss(values, targets, weights), torch.tensor(expected_huber))
    expected_mse = (1.0 * 0.25 + 2.0 * 4.0 + 0.0 * 9.0) / 3
    loss = dqn_loss(values, targets, weights, huber=False)
    assert torch.isclose(loss, torch.tensor(expected_mse))


def test_dqn_loss_does_not_backpropagate_into_targets() -> None:
    values = torch.zeros(2, requires_grad=True)
    targets = torch.ones(2, requires_grad=True)
    dqn_loss(values, targets, huber=False).backward()
    assert targets.grad is None
    assert torch.allclose(values.grad, torch.tensor([-1.0, -1.0]))  # d/dv mean((v-1)^2)


def test_ppo_policy_loss_exercises_every_clipping_branch() -> None:
    clip = 0.2
    ratio = torch.tensor([1.5, 0.5, 1.5, 0.5, 1.1])
    advantages = torch.tensor([2.0, -1.0, -1.0, 1.0, 3.0])
    old_log_probs = torch.tensor([-0.3, -1.2, -0.7, -2.0, -0.1])
    log_probs = old_log_probs + torch.log(ratio)
    terms = [
        1.2 * 2.0,  # A > 0, ratio above 1 + clip: clipped
        0.8 * -1.0,  # A < 0, ratio below 1 - clip: clipped
        1.5 * -1.0,  # A < 0, ratio above 1 + clip: unclipped (pessimistic)
        0.5 * 1.0,  # A > 0, ratio below 1 - clip: unclipped (pessimistic)
        1.1 * 3.0,  # inside the clip range
    ]
    expected = -sum(terms) / 5  # -0.78
    loss = ppo_policy_loss(log_probs, old_log_probs, advantages, clip)
    assert math.isclose(float(loss), expected, rel_tol=1e-5)
    assert math.isclose(float(loss), -0.78, rel_tol=1e-5)


def test_ppo_policy_loss_gradient_vanishes_where_clipped() -> None:
    advantages = torch.tensor([2.0, -1.0, -1.0])
    old = torch.zeros(3)
    log_probs = torch.log(torch.tensor([1.5, 0.5, 1.5])).requires_grad_()
    ppo_policy_loss(log_probs, old, advantages, 0.2).backward()
    # clipped branches have zero gradient; d(-r*A/3)/dlog r = -r*A/3 for the third
    assert torch.allclose(log_probs.grad, torch.tensor([0.0, 0.0, 1.5 / 3]))


def test_ppo_policy_loss_is_the_papers_min_in_value_and_gradient() -> None:
    """The one-bound clamp form gives the value and the gradients of
    ``-mean(min(ratio * A, clip(ratio) * A))``, also at ratios exactly on a bound and at A = 0."""
    torch.manual_seed(0)
    clip = 0.25  # 1 +- clip exact in float32: ties between the two terms really occur
    advantages = torch.cat([torch.randn(300), torch.tensor([1.0, 1.0, -1.0, -1.0] * 2)])
    advantages[:20] = 0.0
    old = torch.cat([torch.randn(300), torch.zeros(8)])
    ratios = torch.cat([torch.exp(torch.randn(300) * 0.3), torch.tensor([0.75, 1.25] * 4)])
    start = old + torch.log(ratios)
    # exp's last bit differs between CPUs (and between its vector and scalar paths), so the
    # last 8 log-probabilities step one float at a time until exp lands exactly on a bound
    for _ in range(32):
        off = torch.exp(start - old)[300:] - ratios[300:]
        if not off.any():
            break
        start[300:] = torch.nextafter(start[300:], start[300:] - off)
    assert (torch.exp(start - old)[300:] == ratios[300:]).all()

    def reference(log_probs: torch.Tensor) -> torch.Tensor:
        r = torch.exp(log_probs - old)
        return -torch.min(r * advantages, torch.clamp(r, 1 - clip, 1 + clip) * advantages).mean()

    grads = []
    for loss_fn in (reference, lambda lp: ppo_policy_loss(lp, old, advantages, clip)):
        log_probs = start.clone().requires_grad_()
        loss = loss_fn(log_probs)
        loss.backward()
        grads.append((loss.detach(), log_probs.grad))
    assert torch.allclose(grads[0][0], grads[1][0], rtol=1e-6)
    assert torch.allclose(grads[0][1], grads[1][1], rtol=1e-6, atol=1e-9)
    assert (grads[1][1][300:] != 0).all()  # on a bound the gradient still flows, as in min


def test_value_loss_with_and_without_clip() -> None:
    values = torch.tensor([1.0, 2.0, 3.0, -1.0])
    returns = torch.tensor([2.0, 2.0, 0.0, 1.0])
    old_values = torch.tensor([0.0, 2.0, 2.8, -0.2])
    unclipped = [1.0, 0.0, 9.0, 4.0]
    assert math.isclose(float(value_loss(values, returns)), sum(unclipped) / 4, rel_tol=1e-6)
    # clipped predictions: old + clamp(v - old, -0.5, 0.5) = [0.5, 2.0, 3.0, -0.7]
    clipped = [(0.5 - 2.0) ** 2, 0.0, (3.0 - 0.0) ** 2, (-0.7 - 1.0) ** 2]
    expected = sum(max(u, c) for u, c in zip(unclipped, clipped)) / 4  # 15.25 / 4
    loss = value_loss(values, returns, old_values, clip=0.5)
    assert math.isclose(float(loss), expected, rel_tol=1e-6)
    assert math.isclose(float(loss), 3.8125, rel_tol=1e-6)
    # clip without old values (or old values without clip) is plain MSE
    assert math.isclose(float(value_loss(values, returns, clip=0.5)), 3.5, rel_tol=1e-6)
    assert math.isclose(float(value_loss(values, returns, old_values)), 3.5, rel_tol=1e-6)


def test_normalize() -> None:
    assert torch.allclose(normalize(torch.tensor([1.0, 2.0, 3.0])), torch.tensor([-1.0, 0.0, 1.0]))
    x = torch.tensor([3.0, -1.0, 7.0, 0.5])
    y = normalize(x)
    assert abs(float(y.mean())) < 1e-6
    assert math.isclose(float(y.std()), 1.0, rel_tol=1e-6)


def test_ppo_loss_total_is_weighted_sum_of_parts() -> None:
    log_probs = torch.log(torch.tensor([1.5, 0.5, 1.0]))
    old = torch.zeros(3)
    advantages = torch.tensor([2.0, -1.0, 1.0])
    values = torch.tensor([1.0, 0.0, 2.0])
    returns = torch.tensor([0.0, 0.0, 0.0])
    entropy = torch.tensor([0.6, 0.3, 0.9])
    total, parts = ppo_loss(
        log_probs, old, advantages, values, returns, entropy, 0.2,
        value_coef=0.5, entropy_coef=0.01,
    )
    policy = -(1.2 * 2.0 + 0.8 * -1.0 + 1.0 * 1.0) / 3
    value = (1.0 + 0.0 + 4.0) / 3
    entropy_mean = 0.6
    assert math.isclose(float(parts["policy"]), policy, rel_tol=1e-5)
    assert math.isclose(float(parts["value"]), value, rel_tol=1e-5)
    assert math.isclose(float(parts["entropy"]), entropy_mean, rel_tol=1e-5)
    expected = policy + 0.5 * value - 0.01 * entropy_mean
    assert math.isclose(float(total), expected, rel_tol=1e-5)
    assert all(not p.requires_grad for p in parts.values())


def test_ppo_loss_without_an_entropy_has_no_entropy_part_unless_it_is_weighed() -> None:
    args = (torch.log(torch.tensor([1.5, 0.5])), torch.zeros(2), torch.tensor([1.0, -1.0]),
            torch.tensor([1.0, 0.0]), torch.zeros(2))
    with_entropy = ppo_loss(*args, torch.tensor([0.6, 0.2]), 0.2)
    without = ppo_loss(*args, None, 0.2)
    assert torch.equal(with_entropy[0], without[0])
    assert without[1].keys() == {"policy", "value"} and "entropy" in with_entropy[1]
    with pytest.raises(ValueError, match="entropy_coef is 0.01 but no entropy"):
        ppo_loss(*args, None, 0.2, entropy_coef=0.01)


def test_ppo_loss_value_clip_is_passed_through() -> None:
    args = (torch.zeros(2), torch.zeros(2), torch.ones(2))
    values, returns = torch.tensor([2.0, 0.0]), torch.tensor([0.0, 0.0])
    old_values = torch.tensor([0.0, 0.0])
    _, plain = ppo_loss(*args, values, returns, torch.zeros(2), 0.2)
    _, clipped = ppo_loss(
        *args, values, returns, torch.zeros(2), 0.2, old_values=old_values, value_clip=0.5
    )
    assert math.isclose(float(plain["value"]), 2.0)
    assert math.isclose(float(clipped["value"]), 2.0)  # max(4, 0.25) / 2: unclipped wins
    values = torch.tensor([0.2, 0.0])
    returns = torch.tensor([1.0, 0.0])
    old_values = torch.tensor([-1.0, 0.0])
    _, clipped = ppo_loss(
        *args, values, returns, torch.zeros(2), 0.2, old_values=old_values, value_clip=0.5
    )
    # clipped prediction -0.5: (1.5)^2 = 2.25 > (0.8)^2 = 0.64
    assert math.isclose(float(clipped["value"]), 2.25 / 2, rel_tol=1e-6)
