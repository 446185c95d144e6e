"""Tests of GreedyPolicy (ParallelGreedyPolicy: ALL's name of it)."""

from __future__ import annotations

import collections
import copy

import torch
from torch import nn

from looprl.approximation import LinearScheduler, QNetwork
from looprl.core import State, StateArray
from looprl.policies import BoltzmannPolicy, EZGreedyPolicy, GreedyPolicy, ParallelGreedyPolicy


class CountingQ(QNetwork):
    """A QNetwork that counts its forward passes."""

    def __init__(self, model):
        super().__init__(model)
        self.calls = 0

    def no_grad(self, *inputs):
        self.calls += 1
        return super().no_grad(*inputs)


def _q(num_actions: int = 4) -> CountingQ:
    torch.manual_seed(0)
    return CountingQ(nn.Linear(3, num_actions))


def _array(n: int) -> StateArray:
    return StateArray({"observation": torch.randn(n, 3)}, (n,))


def test_epsilon_zero_picks_argmax_for_state_and_array():
    q = _q()
    policy = GreedyPolicy(q, 4, epsilon=0.0)
    state = State(torch.randn(3))
    action = policy(state)
    assert action.shape == () and action.dtype == torch.long
    assert action.item() == q.no_grad(state).argmax().item()
    states = _array(10)
    actions = policy.no_grad(states)
    assert actions.shape == (10,) and actions.dtype == torch.long
    assert torch.equal(actions, q.no_grad(states).argmax(-1))


def test_epsilon_one_is_roughly_uniform():
    policy = GreedyPolicy(_q(), 4, epsilon=1.0, seed=123)
    state = State(torch.randn(3))
    counts = collections.Counter(policy(state).item() for _ in range(4000))
    assert set(counts) == {0, 1, 2, 3}
    assert all(850 < c < 1150 for c in counts.values())


def test_a_single_state_acts_as_a_batch_of_one():
    """A ``State`` goes the batch's way (a batch of no dimensions): a seeded policy draws the
    same coins and random actions for it as for a ``StateArray`` of it alone, every policy."""
    state = State(torch.randn(3), done=False)
    array = State.array([state])
    for make in (lambda: GreedyPolicy(_q(), 4, epsilon=0.5, seed=7),
                 lambda: EZGreedyPolicy(_q(), 4, epsilon=0.3, seed=7),
                 lambda: BoltzmannPolicy(_q(), 4, temperature=0.5, seed=7)):
        single, batch = make(), make()
        actions = [single(state) for _ in range(60)]
        assert all(action.shape == () for action in actions)
        assert [a.item() for a in actions] == [batch(array).item() for _ in range(60)]
        assert len(set(a.item() for a in actions)) > 1  # it explores


def test_seeded_policies_are_reproducible():
    state = State(torch.randn(3))
    runs = []
    for _ in range(2):
        policy = GreedyPolicy(_q(), 4, epsilon=0.5, seed=7)
        runs.append([policy(state).item() for _ in range(50)])
    assert runs[0] == runs[1]


def test_eval_is_greedy_even_with_full_exploration():
    q = _q()
    policy = GreedyPolicy(q, 4, epsilon=1.0)
    states = _array(8)
    assert torch.equal(policy.eval(states), q.no_grad(states).argmax(-1))


def test_scheduled_epsilon_advances_once_per_action():
    epsilon = LinearScheduler(1.0, 0.0, 0, 10)
    policy = GreedyPolicy(_q(), 4, epsilon=epsilon, seed=0)
    state = State(torch.randn(3))
    for _ in range(5):
        policy(state)
    assert epsilon.step == 5
    policy.no_grad(_array(6))
    assert epsilon.step == 6
    policy.eval(state)
    assert epsilon.step == 6
    policy.epsilon = 0.0
    assert policy(state).item() == policy.eval(state).item()


def test_parallel_policy_explores_per_row():
    q = _q()
    policy = ParallelGreedyPolicy(q, 4, epsilon=0.5, seed=0)
    states = _array(4000)
    greedy = q.no_grad(states).argmax(-1)
    actions = policy(states)
    assert actions.shape == (4000,) and actions.dtype == torch.long
    # explore half of the rows, a quarter of which pick the greedy action anyway
    agreement = (actions == greedy).float().mean().item()
    assert 0.58 < agreement < 0.67
    assert ParallelGreedyPolicy(q, 4, epsilon=0.0)(states).equal(greedy)
    assert policy(State(torch.randn(3))).shape == ()


def test_policy_with_seed_can_be_deep_copied():
    policy = GreedyPolicy(_q(), 4, epsilon=0.5, seed=1)
    policy(_array(3))
    clone = copy.deepcopy(policy)
    assert clone(_array(3)).shape == (3,)
    assert copy.deepcopy(GreedyPolicy(_q(), 4, epsilon=0.5)).num_actions == 4


def test_an_epsilon_that_is_no_probability_is_one_line():
    """(was: taken, an epsilon of 2 exploring as 1, and text or NaN failing at the first act)"""
    import pytest

    for epsilon in (2.0, -0.1, float("nan"), [0.5, 1.5]):
        with pytest.raises(ValueError, match=r"epsilon is a probability in \[0, 1\]"):
            GreedyPolicy(_q(), 4, epsilon=epsilon)
    with pytest.raises(TypeError, match="epsilon must be a float, a schedule or one float"):
        GreedyPolicy(_q(), 4, epsilon="a")
    policy = GreedyPolicy(_q(), 4, epsilon=[0.0, 1.0])
    with pytest.raises(ValueError, match=r"got 1.5"):
        policy.epsilon = 1.5
    policy.epsilon = LinearScheduler(1.0, 0.1, 0, 10)  # (a schedule's values are its own)
    assert policy.hyperparameters()["hp/epsilon"].get() == 1.0
    # (ALL's Schedulable: the attribute reads as the schedule's value; was the schedule)
    assert policy.epsilon == 1.0 and f"{policy.epsilon:.2f}" == "1.00"
    assert policy.epsilon_schedule.step == 0  # (reading it does not advance the schedule)


def test_a_number_of_actions_that_is_no_whole_number_is_one_line():
    """(was: text taken, failing at the first explored action)"""
    import pytest

    for num_actions in ("4", 0, 2.5):
        with pytest.raises(ValueError, match="num_actions must be positive"):
            GreedyPolicy(_q(), num_actions)
    assert GreedyPolicy(_q(), 4.0).num_actions == 4


def test_a_number_of_actions_other_than_qs_is_one_line():
    """(was: ignored, the random actions drawn among q's; ALL's drew among num_actions)"""
    import pytest

    for policy in (GreedyPolicy(_q(4), 5, epsilon=1.0), BoltzmannPolicy(_q(4), 3)):
        with pytest.raises(ValueError, match=r"num_actions=\d\) over a q that gives 4 action"):
            policy(_array(2))
    assert GreedyPolicy(_q(4), 4, epsilon=1.0)(_array(2)).shape == (2,)


def test_a_bare_module_for_q_is_one_line():
    """(was: "'Linear' object has no attribute 'no_grad'"; ALL's takes an approximation too)"""
    import pytest

    for policy in (GreedyPolicy, EZGreedyPolicy, BoltzmannPolicy):
        with pytest.raises(TypeError, match=rf"^{policy.__name__} takes a Q approximation \(a "
                                            r"QNetwork\), got a Linear: wrap the module"):
            policy(torch.nn.Linear(3, 2), 2)


def test_boltzmann_at_a_tiny_temperature_is_greedy():
    q = _q()
    states = _array(8)
    greedy = q.no_grad(states).argmax(-1)
    # (was: Q / temperature overflowed to inf, and torch's multinomial raised on NaN)
    assert torch.equal(BoltzmannPolicy(q, 4, temperature=1e-45, seed=0).choose(states), greedy)



def test_rows_that_all_explore_take_the_random_actions_as_they_are(monkeypatch) -> None:
    """``epsilon_greedy`` where every row explores (one env copy's, or epsilon 1) returns the
    random actions without a ``torch.where`` over the greedy ones (one op less an acting
    step): the actions ``random_actions`` draws after the coins."""
    from looprl.policies.greedy import epsilon_greedy, random_actions

    values = torch.tensor([[0.0, 1.0, 2.0], [3.0, 2.0, 1.0], [1.0, 1.0, 1.0]])
    generator = torch.Generator().manual_seed(0)
    torch.rand(3, generator=generator)  # (the coins)
    expected = random_actions(values, generator)
    monkeypatch.setattr(torch, "where", None)  # (was: called whenever a row explored)
    actions, explored = epsilon_greedy(values, 1.0, torch.Generator().manual_seed(0))
    assert explored.all() and torch.equal(actions, expected)
