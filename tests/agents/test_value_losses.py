"""Hand-computed checks of the value-based losses added for DDQN, C51, Rainbow and PER."""

from __future__ import annotations

import math

import torch

from looprl.agents.losses.value import (
    c51_loss,
    categorical_cross_entropy,
    categorical_projection,
    double_q_target,
    n_step_bootstrap,
    td_target,
)
from looprl.memory.prioritized import importance_weights


def test_double_q_target_uses_online_argmax_and_target_values() -> None:
    rewards = torch.tensor([1.0, 2.0])
    online = torch.tensor([[3.0, 1.0], [2.0, 0.0]])  # online picks actions 0 and 0
    target = torch.tensor([[10.0, 20.0], [30.0, 40.0]])
    masks = torch.tensor([1.0, 0.0])
    # row 0: 1 + 0.9 * target[0, 0] = 1 + 9 = 10 (DQN's max would give 1 + 18 = 19)
    # row 1: terminal, so just the reward 2
    result = double_q_target(rewards, online, target, masks, 0.9)
    assert torch.allclose(result, torch.tensor([10.0, 2.0]))
    dqn = td_target(rewards, target.max(-1).values, masks, 0.9)
    assert torch.allclose(dqn, torch.tensor([19.0, 2.0]))


def test_double_q_target_with_per_sample_discount() -> None:
    online = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    target = torch.tensor([[5.0, 4.0], [2.0, 8.0]])
    discount = torch.tensor([0.5, 0.25])  # gamma^k of n-step transitions
    result = double_q_target(torch.zeros(2), online, target, torch.ones(2), discount)
    assert torch.allclose(result, torch.tensor([0.5 * 4.0, 0.25 * 2.0]))


ATOMS = torch.tensor([-1.0, 0.0, 1.0])  # v_min -1, v_max 1, dz 1
NEXT = torch.tensor([0.2, 0.3, 0.5])


def _project(reward: float, mask: float, discount: float) -> torch.Tensor:
    return categorical_projection(
        torch.tensor([reward]), torch.tensor([mask]), discount, NEXT.unsqueeze(0), ATOMS
    )[0]


def test_categorical_projection_splits_between_neighbours() -> None:
    # Tz = 0.5 + 0.5 * [-1, 0, 1] = [0, 0.5, 1]; b = Tz + 1 = [1, 1.5, 2]
    # p0 = 0.2 -> atom 1; p1 = 0.3 -> 0.15 to atom 1 and 0.15 to atom 2; p2 = 0.5 -> atom 2
    assert torch.allclose(_project(0.5, 1.0, 0.5), torch.tensor([0.0, 0.35, 0.65]))


def test_categorical_projection_clips_at_v_max_and_v_min() -> None:
    # Tz = 1.5 + [-0.5, 0, 0.5] = [1, 1.5, 2] -> clipped to 1: all mass on the top atom
    assert torch.allclose(_project(1.5, 1.0, 0.5), torch.tensor([0.0, 0.0, 1.0]))
    # Tz = -2 + [-0.5, 0, 0.5] -> clipped to -1: all mass on the bottom atom
    assert torch.allclose(_project(-2.0, 1.0, 0.5), torch.tensor([1.0, 0.0, 0.0]))


def test_categorical_projection_terminal_mask() -> None:
    # mask 0: every atom moves to r = 0.25, b = 1.25 -> 0.75 to atom 1, 0.25 to atom 2
    assert torch.allclose(_project(0.25, 0.0, 0.9), torch.tensor([0.0, 0.75, 0.25]))


def test_categorical_projection_batch_with_tensor_discount() -> None:
    rewards = torch.tensor([0.5, 0.25])
    masks = torch.tensor([1.0, 1.0])
    discount = torch.tensor([0.5, 0.0])  # the second row does not bootstrap at all
    result = categorical_projection(rewards, masks, discount, NEXT.repeat(2, 1), ATOMS)
    assert torch.allclose(result, torch.tensor([[0.0, 0.35, 0.65], [0.0, 0.75, 0.25]]))
    assert torch.allclose(result.sum(-1), torch.ones(2))


def test_c51_cross_entropy_and_weights() -> None:
    probs = torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])
    target = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.5, 0.5]])
    # row 0: -log 0.25 = 1.3863; row 1: -(0.5 log 0.1 + 0.5 log 0.8) = 1.2629
    expected = torch.tensor([-math.log(0.25), -(0.5 * math.log(0.1) + 0.5 * math.log(0.8))])
    assert torch.allclose(categorical_cross_entropy(probs, target), expected)
    weights = torch.tensor([1.0, 0.5])
    assert torch.isclose(c51_loss(probs, target, weights), (expected * weights).mean())
    assert torch.isclose(c51_loss(probs, target), expected.mean())


def test_n_step_bootstrap_full_window_termination_and_truncation() -> None:
    # three streams (columns) of [T + 1, B] rows: rewards 1, 2, 4 arrive with rows 1-3, gamma 0.5
    reward = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [4.0, 4.0, 4.0]])
    done = torch.zeros(4, 3, dtype=torch.bool)
    truncated = torch.zeros(4, 3, dtype=torch.bool)
    done[2, 1] = True  # column 1 terminates with row 2
    truncated[2, 2] = True  # column 2 is truncated with row 2
    returns, boot, discount = n_step_bootstrap(reward, done, truncated, 0.5, 3, rows=1)
    # column 0: no episode end: 1 + 0.5 * 2 + 0.25 * 4 = 3, from row 3 with gamma^3 = 0.125
    # column 1: terminated after 2 steps: 1 + 0.5 * 2 = 2, from row 2, no bootstrap (0)
    # column 2: truncated after 2 steps: 2, from row 2 with gamma^2 = 0.25 (still bootstraps)
    assert torch.equal(returns, torch.tensor([[3.0, 2.0, 2.0]]))
    assert torch.equal(boot, torch.tensor([[3, 2, 2]]))
    assert torch.equal(discount, torch.tensor([[0.125, 0.0, 0.25]]))


def test_per_importance_weights() -> None:
    probabilities = torch.tensor([0.5, 0.25, 0.25])
    # beta 1: (4 * P)^-1 = [0.5, 1, 1], max 1
    assert torch.allclose(importance_weights(probabilities, 4, 1.0), torch.tensor([0.5, 1, 1]))
    # beta 0.5: [2^-0.5, 1, 1]
    expected = torch.tensor([2**-0.5, 1.0, 1.0])
    assert torch.allclose(importance_weights(probabilities, 4, 0.5), expected)
    # beta 0: uniform
    assert torch.allclose(importance_weights(probabilities, 4, 0.0), torch.ones(3))
