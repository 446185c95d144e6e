"""Tests of the sum tree and ``PrioritizedReplayBuffer`` (looprl.memory.prioritized)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tests.helpers import fail_allocations

from looprl.approximation import LinearScheduler
from looprl.core import State, StateArray
from looprl.memory.prioritized import PrioritizedReplayBuffer, SumTree, importance_weights
from looprl.memory.replay import transitions


def test_sum_tree_totals_updates_and_find() -> None:
    tree = SumTree(5)
    assert tree.capacity == 8
    tree.update([0, 1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0, 0.0])
    assert tree.total == 10.0
    # prefix sums: [0, 1) -> 0, [1, 3) -> 1, [3, 6) -> 2, [6, 10) -> 3; leaf 4 has priority 0
    found = tree.find(np.array([0.0, 0.99, 1.0, 2.5, 3.0, 6.0, 9.99, 10.0, 12.0]))
    assert found.tolist() == [0, 0, 1, 1, 2, 3, 3, 3, 3]
    tree.update([1, 1], [5.0, 0.5])  # the later duplicate wins
    assert tree.total == 1.0 + 0.5 + 3.0 + 4.0
    assert tree[[0, 1, 4]].tolist() == [1.0, 0.5, 0.0]
    assert tree.tree[2] == 1.0 + 0.5 + 3.0 + 4.0  # left half of the root


def test_sum_tree_sampling_proportions() -> None:
    tree = SumTree(4)
    tree.update(np.arange(4), [1.0, 2.0, 3.0, 4.0])
    rng = np.random.default_rng(0)
    leaves = tree.find(rng.uniform(0, tree.total, 40_000))
    frequencies = np.bincount(leaves, minlength=4) / leaves.size
    assert np.allclose(frequencies, [0.1, 0.2, 0.3, 0.4], atol=0.01)


def _buffer(alpha: float = 1.0, beta=1.0, size: int = 8) -> PrioritizedReplayBuffer:
    generator = torch.Generator().manual_seed(0)
    return PrioritizedReplayBuffer(size, alpha=alpha, beta=beta, epsilon=0.0, generator=generator)


def _fill(buffer: PrioritizedReplayBuffer, n: int) -> None:
    for i in range(n):
        buffer.store(State(torch.full((2,), float(i))), i % 2, State(torch.full((2,), i + 1.0)))


def _frequencies(buffer: PrioritizedReplayBuffer, n: int, draws: int = 200) -> np.ndarray:
    counts = np.zeros(n)
    for _ in range(draws):
        index = buffer.sample_indices(64).numpy()
        counts += np.bincount(index, minlength=n)
    return counts / counts.sum()


def test_new_transitions_enter_at_max_priority_and_sample_uniformly() -> None:
    buffer = _buffer()
    _fill(buffer, 4)
    assert len(buffer) == 4 and buffer.tree.total == 4.0
    states, actions, rewards, next_states, weights = buffer.sample(16)
    assert states.shape == (16,) and actions.shape == (16,) and next_states.shape == (16,)
    assert torch.equal(next_states.observation, states.observation + 1)
    assert torch.allclose(weights, torch.ones(16))  # equal priorities: equal weights
    assert np.allclose(_frequencies(buffer, 4), 0.25, atol=0.02)


def test_update_priorities_changes_sampling_and_weights() -> None:
    buffer = _buffer(alpha=1.0, beta=1.0)
    _fill(buffer, 4)
    buffer.gather(torch.tensor([0, 1, 2, 3]))
    buffer.update_priorities(torch.tensor([1.0, -1.0, 1.0, 5.0]))  # |td| is the priority
    assert buffer.tree[[0, 1, 2, 3]].tolist() == [1.0, 1.0, 1.0, 5.0]
    assert buffer.max_priority == 5.0
    assert np.allclose(_frequencies(buffer, 4), [1 / 8, 1 / 8, 1 / 8, 5 / 8], atol=0.02)
    _, _, _, _, weights = transitions(buffer.gather(torch.tensor([0, 3])))
    # P = [1/8, 5/8], N = 4: (4 P)^-1 = [2, 0.4], divided by the max 2 -> [1, 0.2]
    assert torch.allclose(weights, torch.tensor([1.0, 0.2]))
    _fill(buffer, 1)  # a new transition gets the max priority seen so far
    assert buffer.tree[4] == 5.0


def test_alpha_flattens_priorities_and_beta_schedule_advances() -> None:
    beta = LinearScheduler(0.4, 1.0, 0, 2)
    buffer = _buffer(alpha=0.5, beta=beta)
    _fill(buffer, 2)
    buffer.gather(torch.tensor([0, 1]))
    buffer.update_priorities(torch.tensor([1.0, 4.0]))
    assert buffer.tree[[0, 1]].tolist() == [1.0, 2.0]  # p^alpha
    _, _, _, _, weights = transitions(buffer.gather(torch.tensor([0, 1])))  # beta read: 0.7
    expected = importance_weights(torch.tensor([1 / 3, 2 / 3], dtype=torch.float64), 2, 0.7)
    assert torch.allclose(weights, expected.float())
    assert beta.step == 2


def test_store_batches_skip_rows_leaving_done_states() -> None:
    buffer = _buffer()
    states = StateArray(
        {"observation": torch.zeros(3, 2), "done": torch.tensor([False, True, False])}, (3,)
    )
    next_states = StateArray({"observation": torch.ones(3, 2)}, (3,))
    buffer.store(states, torch.tensor([0, 1, 0]), next_states)
    assert len(buffer) == 2 and buffer.tree.total == 2.0


@pytest.mark.parametrize("args", [(-1.0, 0.4, 1e-5), (0.6, -0.4, 1e-5), (0.6, 0.4, -0.5)])
def test_negative_alpha_beta_or_epsilon_is_one_line(args: tuple[float, float, float]) -> None:
    """(was: a negative beta or epsilon was taken: with epsilon -0.5 small TD errors became
    negative priorities, NaN after ``** alpha``, and every later sample and weight was NaN)"""
    name = ("alpha", "beta", "epsilon")[[a < 0 for a in args].index(True)]
    with pytest.raises(ValueError, match=f"{name} must be >= 0"):
        PrioritizedReplayBuffer(8, *args)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_priorities_that_sum_to_zero_or_past_float64_are_one_line() -> None:
    """(was: TD errors of 0 with epsilon=0, or priorities whose sum overflowed, gave every
    importance weight as NaN, silently: a later NaN loss was taken for divergence)"""
    buffer = _buffer()
    _fill(buffer, 2)
    buffer.gather(torch.tensor([0, 1]))
    buffer.update_priorities(torch.zeros(2))
    with pytest.raises(ValueError, match="every priority is 0 .*give epsilon > 0"):
        buffer.sample(4)
    buffer.update_priorities(np.full(2, 1e308), [0, 1])
    with pytest.raises(FloatingPointError, match="sum past float64's range: training diverged"):
        buffer.sample(4)


def test_update_priorities_needs_a_sample() -> None:
    with pytest.raises(RuntimeError, match="sample"):
        _buffer().update_priorities(torch.ones(2))


def test_a_sum_tree_that_cannot_be_allocated_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """``PrioritizedReplayBuffer(10**11)`` built by hand (no preset's memory check) ended in
    NumPy's bare ``MemoryError`` allocating its 2 TiB sum tree; now the replay's one line."""
    fail_allocations(monkeypatch, "zeros", 2 * 2**37, module=np)
    with pytest.raises(ValueError, match=r"^PrioritizedReplayBuffer: 100,000,000,000 items of 22 "
                                         r"bytes need 2,048.9 GiB on cpu, which could not be "
                                         r"allocated \(.*\); lower its size"):
        PrioritizedReplayBuffer(10**11)
    assert len(PrioritizedReplayBuffer(1000).tree.tree) == 2048  # (other sizes allocate)
