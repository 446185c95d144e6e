"""Continuous-control losses (looprl.agents.losses.continuous) against hand-computed numbers."""

from __future__ import annotations

import math

import torch

from looprl.agents.losses.continuous import (
    critic_loss,
    deterministic_actor_loss,
    sac_actor_loss,
    sac_target,
    sac_temperature_loss,
    smoothed_target_action,
    td3_target,
    twin_critic_loss,
)


def t(*values: float) -> torch.Tensor:
    return torch.tensor(values)


def test_critic_loss_is_mse_onto_detached_targets() -> None:
    values = t(1.0, 2.0).requires_grad_()
    targets = t(0.0, 4.0).requires_grad_()
    loss = critic_loss(values, targets)
    assert torch.isclose(loss, torch.tensor((1.0**2 + 2.0**2) / 2))  # 2.5
    loss.backward()
    assert torch.allclose(values.grad, t(1.0, -2.0))  # 2 * (Q - y) / n
    assert targets.grad is None


def test_twin_critic_loss_sums_both_critics() -> None:
    # Q1 errors (1, -2): mean 2.5; Q2 errors (0, -1): mean 0.5
    loss = twin_critic_loss(t(1.0, 2.0), t(0.0, 3.0), t(0.0, 4.0))
    assert torch.isclose(loss, torch.tensor(3.0))


def test_deterministic_actor_loss_maximizes_q() -> None:
    assert torch.isclose(deterministic_actor_loss(t(1.0, 3.0)), torch.tensor(-2.0))


def test_td3_smoothing_clips_the_noise_and_the_action() -> None:
    scale, low, high = t(1.0, 2.0), t(-1.0, -2.0), t(1.0, 2.0)
    target_actions = torch.tensor([[0.5, -1.9], [0.0, 0.0]])
    noise = torch.tensor([[3.0, -1.0], [-1.0, 0.5]])
    smoothed = smoothed_target_action(target_actions, noise, 0.2, 0.5, scale, low, high)
    # row 0: sigma * eps = (0.6, -0.2) -> clipped to (0.5, -0.2) -> times scale (0.5, -0.4)
    #        -> (1.0, -2.3) -> clipped to the bounds (1.0, -2.0)
    # row 1: sigma * eps = (-0.2, 0.1), inside the clip -> times scale (-0.2, 0.2)
    expected = torch.tensor([[1.0, -2.0], [-0.2, 0.2]])
    assert torch.allclose(smoothed, expected)


def test_td3_target_takes_the_minimum_of_the_twin_critics() -> None:
    # min(Q1', Q2') = (3, 1); second transition terminal: 1 + 0.5 * 3 = 2.5 and 2 + 0 = 2
    target = td3_target(t(1.0, 2.0), t(3.0, 5.0), t(4.0, 1.0), t(1.0, 0.0), 0.5)
    assert torch.allclose(target, t(2.5, 2.0))


def test_sac_target_subtracts_the_entropy_term() -> None:
    # soft values: min(3, 4) - 0.1 * (-1) = 3.1 and min(5, 6) - 0.1 * 2 = 4.8
    target = sac_target(t(1.0, 2.0), t(3.0, 5.0), t(4.0, 6.0), t(-1.0, 2.0), t(1.0, 1.0), 0.5, 0.1)
    assert torch.allclose(target, t(1.0 + 0.5 * 3.1, 2.0 + 0.5 * 4.8))  # (2.55, 4.4)
    terminal = sac_target(
        t(1.0, 2.0), t(3.0, 5.0), t(4.0, 6.0), t(-1.0, 2.0), t(1.0, 0.0), 0.5, torch.tensor(0.1)
    )
    assert torch.allclose(terminal, t(2.55, 2.0))


def test_sac_actor_loss() -> None:
    # alpha * log pi - min(Q1, Q2) = (0.2 * -1 - 1, 0.2 * 0.5 - 3) = (-1.2, -2.9); mean -2.05
    loss = sac_actor_loss(t(1.0, 4.0), t(2.0, 3.0), t(-1.0, 0.5), 0.2)
    assert torch.isclose(loss, torch.tensor(-2.05))


def test_sac_temperature_loss_and_its_gradient() -> None:
    log_alpha = torch.tensor(math.log(0.5), requires_grad=True)
    log_probs = t(-0.5, -1.5).requires_grad_()
    # log pi + target_entropy = (-1.5, -2.5), mean -2 -> loss = -log(0.5) * -2 = 2 log(0.5)
    loss = sac_temperature_loss(log_alpha, log_probs, target_entropy=-1.0)
    assert torch.isclose(loss, torch.tensor(2 * math.log(0.5)))
    loss.backward()
    # entropy 1.0 is above the target -1: a positive gradient, so alpha decreases
    assert torch.isclose(log_alpha.grad, torch.tensor(2.0))
    assert log_probs.grad is None


def test_sac_temperature_rises_when_entropy_is_below_target() -> None:
    log_alpha = torch.tensor(0.0, requires_grad=True)
    # entropy -2 < target -1: log pi + target = 1, gradient -1, so alpha increases
    sac_temperature_loss(log_alpha, t(2.0, 2.0), target_entropy=-1.0).backward()
    assert torch.isclose(log_alpha.grad, torch.tensor(-1.0))
