"""Hand-computed checks of the VPG, VAC, A2C and PPG losses (agents.losses.policy_gradient)."""

from __future__ import annotations

import math

import torch

from looprl.agents.losses import generalized_advantage_estimate
from looprl.agents.losses.policy_gradient import (
    a2c_loss,
    categorical_kl,
    policy_gradient_loss,
    ppg_aux_loss,
)


def test_policy_gradient_loss_value_and_gradient() -> None:
    log_probs = torch.tensor([-0.5, -1.0, -2.0], requires_grad=True)
    advantages = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    loss = policy_gradient_loss(log_probs, advantages)
    # -(-0.5 * 1 + -1 * -2 + -2 * 0.5) / 3 = -(-0.5 + 2 - 1) / 3 = -0.5 / 3
    assert math.isclose(float(loss.detach()), -0.5 / 3, rel_tol=1e-6)
    loss.backward()
    # d/dlogp = -A / 3; no gradient reaches the advantages
    assert torch.allclose(log_probs.grad, torch.tensor([-1 / 3, 2 / 3, -0.5 / 3]))
    assert advantages.grad is None


def test_a2c_loss_total_is_weighted_sum_of_parts() -> None:
    log_probs = torch.tensor([-0.5, -1.0, -2.0])
    advantages = torch.tensor([1.0, -2.0, 0.5])
    values = torch.tensor([1.0, 0.0, 2.0])
    returns = torch.tensor([2.0, 1.0, 2.0])
    entropy = torch.tensor([0.6, 0.4, 0.2])
    total, parts = a2c_loss(
        log_probs, advantages, values, returns, entropy, value_coef=0.5, entropy_coef=0.01
    )
    policy = -0.5 / 3  # as in the test above
    value = ((1 - 2) ** 2 + (0 - 1) ** 2 + (2 - 2) ** 2) / 3  # 2 / 3
    entropy_mean = (0.6 + 0.4 + 0.2) / 3  # 0.4
    assert math.isclose(float(parts["policy"]), policy, rel_tol=1e-6)
    assert math.isclose(float(parts["value"]), value, rel_tol=1e-6)
    assert math.isclose(float(parts["entropy"]), entropy_mean, rel_tol=1e-6)
    expected = policy + 0.5 * value - 0.01 * entropy_mean  # 0.162666...
    assert math.isclose(float(total), expected, rel_tol=1e-6)
    assert math.isclose(float(total), 0.1626667, rel_tol=1e-5)
    assert all(not p.requires_grad for p in parts.values())


def test_a2c_loss_value_gradient_and_no_entropy_term() -> None:
    values = torch.tensor([1.0, 0.0], requires_grad=True)
    returns = torch.tensor([2.0, 0.0], requires_grad=True)
    entropy = torch.tensor([0.5, 0.5], requires_grad=True)
    total, _ = a2c_loss(torch.zeros(2), torch.zeros(2), values, returns, entropy, 0.5, 0.0)
    assert math.isclose(float(total.detach()), 0.5 * 0.5)  # 0.5 * mean([1, 0])
    total.backward()
    # d/dV 0.5 * mean((V - R)^2) = (V - R) / 2; returns and entropy get no gradient
    assert torch.allclose(values.grad, torch.tensor([-0.5, 0.0]))
    assert returns.grad is None and entropy.grad is None


def test_gae_with_lambda_one_gives_n_step_returns_by_hand() -> None:
    gamma = 0.5
    # env 0 terminates after step 1; env 1 is truncated after step 1 (mask stays 1)
    rewards = torch.tensor([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0], [4.0, 1.0]])
    next_values = torch.tensor([[10.0, 5.0], [20.0, 8.0], [30.0, 0.0], [40.0, 2.0]])
    values = torch.tensor([[0.0, 0.0], [10.0, 5.0], [0.0, 0.0], [30.0, 0.0]])  # V(s_t)
    next_masks = torch.tensor([[1.0, 1.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    next_dones = torch.tensor([[False, False], [True, True], [False, False], [False, False]])
    advantages = generalized_advantage_estimate(
        rewards, values, next_values, next_masks, next_dones, gamma, 1.0
    )
    env0 = [
        1 + 0.5 * 2,  # R0 = r0 + g * R1 = 2
        2.0,  # terminal: no bootstrap
        3 + 0.5 * 24,  # R2 = r2 + g * R3 = 15
        4 + 0.5 * 40,  # end of rollout: bootstrap V = 40 -> 24
    ]
    env1 = [
        1 + 0.5 * 5,  # 3.5
        1 + 0.5 * 8,  # truncated: bootstrap from the final observation's value -> 5
        1 + 0.5 * 2,  # 2
        1 + 0.5 * 2,  # 2
    ]
    assert torch.allclose(advantages + values, torch.tensor([env0, env1]).T)


def test_categorical_kl_by_hand() -> None:
    # row 0: p_old = [1/4, 3/4], p = [1/2, 1/2]; row 1: identical distributions
    old_logits = torch.tensor([[0.0, math.log(3.0)], [1.0, 2.0]])
    logits = torch.tensor([[0.0, 0.0], [5.0, 6.0]])  # same softmax as [1, 2]
    kl = categorical_kl(old_logits, logits)
    row0 = 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)  # 0.130812
    assert math.isclose(float(kl[0]), row0, rel_tol=1e-5)
    assert math.isclose(row0, 0.1308120, rel_tol=1e-5)
    assert abs(float(kl[1])) < 1e-6
    # KL is not symmetric: KL(p || p_old) = 0.5 ln(0.5/0.25) + 0.5 ln(0.5/0.75) = 0.143841
    assert math.isclose(float(categorical_kl(logits, old_logits)[0]), 0.1438410, rel_tol=1e-5)


def test_ppg_aux_loss_by_hand() -> None:
    aux_values = torch.tensor([1.0, 3.0], requires_grad=True)
    returns = torch.tensor([2.0, 2.0])
    old_logits = torch.tensor([[0.0, math.log(3.0)], [1.0, 2.0]])
    logits = torch.tensor([[0.0, 0.0], [1.0, 2.0]], requires_grad=True)
    total, parts = ppg_aux_loss(aux_values, returns, old_logits, logits, beta_clone=2.0)
    aux = 0.5 * ((1 - 2) ** 2 + (3 - 2) ** 2) / 2  # 0.5
    kl = (0.25 * math.log(0.5) + 0.75 * math.log(1.5) + 0.0) / 2  # 0.065406
    assert math.isclose(float(parts["aux_value"]), aux, rel_tol=1e-6)
    assert math.isclose(float(parts["kl"]), kl, rel_tol=1e-5)
    assert math.isclose(float(total.detach()), aux + 2.0 * kl, rel_tol=1e-5)
    assert math.isclose(float(total.detach()), 0.6308120, rel_tol=1e-5)
    total.backward()
    # d/dV_aux 0.5 * mean((V - R)^2) = (V - R) / 2
    assert torch.allclose(aux_values.grad, torch.tensor([-0.5, 0.5]))
    # d KL / d logits = p - p_old per row; times beta / rows = 2 / 2
    expected = torch.tensor([[0.5 - 0.25, 0.5 - 0.75], [0.0, 0.0]])
    assert torch.allclose(logits.grad, expected, atol=1e-6)


# -- generalized advantage estimation ------------------------------------------------------

GAMMA, LAM = 0.9, 0.8


def _col(*values: float) -> torch.Tensor:
    """A (T, 1) column: T time steps of one environment."""
    return torch.tensor(values).unsqueeze(1)


def test_gae_with_termination() -> None:
    # step 1 ends in a terminal state: no bootstrap and no recursion past it
    rewards, values = _col(1.0, 2.0, 3.0), _col(0.5, 1.0, 1.5)
    next_values = _col(1.0, 1.5, 2.0)
    next_masks, next_dones = _col(1.0, 0.0, 1.0), _col(0.0, 1.0, 0.0).bool()
    d0 = 1.0 + 0.9 * 1.0 * 1.0 - 0.5  # 1.4
    d1 = 2.0 + 0.9 * 0.0 * 1.5 - 1.0  # 1.0
    d2 = 3.0 + 0.9 * 1.0 * 2.0 - 1.5  # 3.3
    a2 = d2
    a1 = d1 + 0.9 * 0.8 * 0.0 * a2
    a0 = d0 + 0.9 * 0.8 * 1.0 * a1  # 2.12
    advantages = generalized_advantage_estimate(
        rewards, values, next_values, next_masks, next_dones, GAMMA, LAM
    )
    assert advantages.shape == (3, 1)
    assert torch.allclose(advantages, _col(a0, a1, a2))
    assert torch.allclose(advantages, _col(2.12, 1.0, 3.3))


def test_gae_with_truncation() -> None:
    # step 1 is truncated: bootstrap from V(final observation) but stop the recursion
    rewards, values = _col(1.0, 2.0, 3.0), _col(0.5, 1.0, 1.5)
    next_values = _col(1.0, 1.5, 2.0)
    next_masks, next_dones = _col(1.0, 1.0, 1.0), _col(0.0, 1.0, 0.0).bool()
    d0 = 1.0 + 0.9 * 1.0 - 0.5  # 1.4
    d1 = 2.0 + 0.9 * 1.5 - 1.0  # 2.35
    d2 = 3.0 + 0.9 * 2.0 - 1.5  # 3.3
    a2 = d2
    a1 = d1
    a0 = d0 + 0.9 * 0.8 * a1  # 3.092
    advantages = generalized_advantage_estimate(
        rewards, values, next_values, next_masks, next_dones, GAMMA, LAM
    )
    assert torch.allclose(advantages, _col(a0, a1, a2))
    assert torch.allclose(advantages, _col(3.092, 2.35, 3.3))


def test_gae_without_episode_end_matches_discounted_sum() -> None:
    rewards, values = _col(1.0, 1.0, 1.0), _col(0.0, 0.0, 0.0)
    ones = torch.ones(3, 1)
    advantages = generalized_advantage_estimate(
        rewards, values, torch.zeros(3, 1), ones, torch.zeros(3, 1, dtype=torch.bool), 1.0, 1.0
    )
    assert torch.allclose(advantages, _col(3.0, 2.0, 1.0))
