"""Tests of ``generalized_advantage_estimate`` and ``RolloutBuffer`` (looprl.memory.rollout)."""

from __future__ import annotations

import pytest
import torch

from looprl.memory import RolloutBuffer, generalized_advantage_estimate

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


def _two_env_rollout() -> RolloutBuffer:
    """3 steps x 2 envs; env 1 terminates after step 0 and is reset at step 1."""
    buffer = RolloutBuffer(n_steps=3, n_envs=2)
    values = [(1.0, 0.5), (2.0, 7.0), (3.0, 1.5)]
    observed_done = [(False, False), (False, True), (False, False)]
    outcomes = [  # reward, done, mask of the next state
        ((1.0, 5.0), (False, True), (1.0, 0.0)),
        ((1.0, 0.0), (False, False), (1.0, 1.0)),  # env 1: reset after a done state
        ((1.0, 2.0), (False, False), (1.0, 1.0)),
    ]
    for t in range(3):
        assert not buffer.full
        buffer.store(
            torch.tensor(observed_done[t]),
            observation=torch.tensor([[10.0 * t], [10.0 * t + 1]]),
            action=torch.tensor([t, t + 1]),
            log_prob=torch.tensor([-0.1 * t, -0.2 * t]),
            value=torch.tensor(values[t]),
        )
        reward, done, mask = outcomes[t]
        buffer.store_outcome(torch.tensor(reward), torch.tensor(done), torch.tensor(mask))
    return buffer


def test_rollout_compute_drops_rows_leaving_done_states_and_bootstraps() -> None:
    buffer = _two_env_rollout()
    assert buffer.full and len(buffer) == 6
    batch = buffer.compute(torch.tensor([4.0, 10.0]), GAMMA, LAM)
    # env 0: next values 2, 3, last_value 4
    e0_d = [1.0 + 0.9 * 2.0 - 1.0, 1.0 + 0.9 * 3.0 - 2.0, 1.0 + 0.9 * 4.0 - 3.0]
    e0_a2 = e0_d[2]
    e0_a1 = e0_d[1] + 0.72 * e0_a2
    e0_a0 = e0_d[0] + 0.72 * e0_a1
    # env 1: step 0 terminates (reward 5, mask 0); step 1 leaves the done state (dropped);
    # step 2 bootstraps from last_value 10
    e1_a0 = 5.0 + 0.9 * 0.0 * 7.0 - 0.5
    e1_a2 = 2.0 + 0.9 * 10.0 - 1.5
    # flattened time-major: (t0,e0) (t0,e1) (t1,e0) [(t1,e1) dropped] (t2,e0) (t2,e1)
    expected_adv = torch.tensor([e0_a0, e1_a0, e0_a1, e0_a2, e1_a2])
    expected_values = torch.tensor([1.0, 0.5, 2.0, 3.0, 1.5])
    assert torch.allclose(batch.advantage, expected_adv)
    assert torch.allclose(batch.advantage, torch.tensor([3.85344, 4.5, 2.852, 1.6, 9.5]))
    assert torch.allclose(batch.value, expected_values)
    assert torch.allclose(batch.returns, expected_adv + expected_values)
    assert torch.equal(batch.observation.squeeze(1), torch.tensor([0.0, 1.0, 10.0, 20.0, 21.0]))
    assert torch.equal(batch.action, torch.tensor([0, 1, 1, 2, 3]))
    assert torch.allclose(batch.log_prob, torch.tensor([0.0, 0.0, -0.1, -0.2, -0.4]))


def test_rollout_compute_requires_full_buffer_and_clear_reuses() -> None:
    buffer = RolloutBuffer(n_steps=2, n_envs=1)
    buffer.store(torch.tensor([False]), observation=torch.zeros(1, 1), value=torch.zeros(1))
    with pytest.raises(RuntimeError, match="0 of 2"):
        buffer.compute(torch.zeros(1), GAMMA, LAM)
    buffer.store_outcome(torch.ones(1), torch.tensor([False]), torch.ones(1))
    buffer.store(torch.tensor([False]), observation=torch.ones(1, 1), value=torch.zeros(1))
    buffer.store_outcome(torch.ones(1), torch.tensor([False]), torch.ones(1))
    batch = buffer.compute(torch.zeros(1), 1.0, 1.0)
    assert torch.allclose(batch.advantage, torch.tensor([2.0, 1.0]))
    buffer.clear()
    assert not buffer.full and len(buffer) == 0
