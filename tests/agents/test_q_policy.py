"""Tests of the ready-made Q-network policy: ``Policy(type_="q-network")`` (seed 004)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
import torch

import looprl.agents  # noqa: F401 -- registers the policies
from looprl.agents.dqn import MASKED_Q, DQNPolicy
from looprl.core import NamedArray, Policy, RolloutRequest, RolloutResult, SampleBatch


def _policy(**args) -> DQNPolicy:
    args = {"obs_dim": {"obs": 4}, "action_dim": 3, "seed": 0, **args}
    return Policy(type_="q-network", args=args)


def _obs(rows: int, seed: int = 0) -> NamedArray:
    rng = np.random.default_rng(seed)
    return NamedArray(obs=rng.standard_normal((rows, 4)).astype(np.float32))


@pytest.mark.parametrize("dueling", [False, True])
@pytest.mark.parametrize("rows", [1, 7])
def test_rollout_shapes_dtypes_and_values(rows: int, dueling: bool) -> None:
    policy = _policy(dueling=dueling, epsilon=0.0)
    assert isinstance(policy, DQNPolicy) and policy.default_policy_state is None
    obs = _obs(rows)
    result = policy.rollout(RolloutRequest(obs=obs))
    assert isinstance(result, RolloutResult) and result.policy_state is None
    assert result.action.shape == (rows,) and result.action.dtype == torch.int64
    q = policy.analyze(NamedArray(obs=obs))
    assert q.shape == (rows, 3)
    assert torch.equal(result.action, q.argmax(-1))  # epsilon 0: greedy
    assert result.value is None  # (the trainers compute their own targets)


def test_rollout_tells_meta_components_which_rows_explored() -> None:
    """The exploration policy notes which rows explored (``explored``, bool per row): what
    the hub gives a component on the collector (local runs, Ray actors) as
    ``metrics['explored']``."""
    policy = _policy(epsilon=0.0)
    obs = _obs(400)
    eps = np.where(np.arange(400) < 200, 1.0, 0.0).astype(np.float32)
    result = policy.rollout(RolloutRequest(obs=obs, exploration=eps))
    explored = policy.exploration.explored
    assert explored.shape == (400,) and explored.dtype == torch.bool
    assert not explored[200:].any() and explored[:200].all()
    greedy = policy.analyze(NamedArray(obs=obs)).argmax(-1)
    assert torch.equal(result.action[~explored], greedy[~explored])


def test_per_row_epsilon_and_evaluation_rows() -> None:
    policy = _policy(epsilon=0.0)
    rows = 3000
    obs = _obs(rows)
    greedy = policy.analyze(NamedArray(obs=obs)).argmax(-1)
    eps = np.where(np.arange(rows) % 2 == 0, 1.0, 0.0).astype(np.float32)
    result = policy.rollout(RolloutRequest(obs=obs, exploration=eps))
    random_rows = torch.as_tensor(eps == 1.0)
    assert torch.equal(result.action[~random_rows], greedy[~random_rows])
    # eps=1 rows are uniform: each action about a third of the time, about 2/3 not greedy
    counts = torch.bincount(result.action[random_rows], minlength=3).float() / (rows / 2)
    assert torch.allclose(counts, torch.full((3,), 1 / 3), atol=0.05)
    differs = (result.action[random_rows] != greedy[random_rows]).float().mean()
    assert 0.55 < float(differs) < 0.78
    # evaluation rows are greedy even with eps=1
    evaluation = np.arange(rows) % 3 == 0
    mixed = policy.rollout(
        RolloutRequest(obs=obs, exploration=np.ones(rows), is_evaluation=evaluation)
    )
    assert torch.equal(mixed.action[evaluation], greedy[evaluation])
    assert not torch.equal(mixed.action[~evaluation], greedy[~evaluation])


def test_srl_evaluation_flags_of_shape_b_1_and_of_other_rows() -> None:
    """SRL's ``is_evaluation`` is ``[B, 1]``: one action per row (was ``[B, B]``); flags of
    another row count are refused even when they all agree (was: taken)."""
    policy = _policy(epsilon=1.0)
    obs = _obs(5)
    flags = (np.arange(5) % 2 == 0).reshape(5, 1)
    action = policy.rollout(RolloutRequest(obs=obs, is_evaluation=flags)).action
    greedy = policy.analyze(NamedArray(obs=obs)).argmax(-1)
    assert action.shape == (5,) and torch.equal(action[::2], greedy[::2])
    with pytest.raises(ValueError, match="is_evaluation has 4 rows, obs 5"):
        policy.rollout(_set_later(obs, is_evaluation=np.ones(4, dtype=bool)))


def test_default_epsilon_and_scalar_exploration() -> None:
    obs = _obs(500)
    explorer = _policy(epsilon=1.0)
    greedy = explorer.analyze(NamedArray(obs=obs)).argmax(-1)
    assert not torch.equal(explorer.rollout(RolloutRequest(obs=obs)).action, greedy)
    assert torch.equal(explorer.rollout(RolloutRequest(obs=obs, exploration=0.0)).action, greedy)
    assert torch.equal(explorer.rollout(RolloutRequest(obs=obs, is_evaluation=True)).action, greedy)
    with pytest.raises(ValueError, match="exploration has 3 rates for 500 rows"):
        explorer.rollout(_set_later(obs, exploration=np.zeros(3)))


@pytest.mark.parametrize("kind", ["boltzmann", "ez_greedy"])
def test_an_exploration_policy_acts_on_rows_without_a_rate(kind: str) -> None:
    """Boltzmann and ez-greedy exploration are ``GreedyPolicy`` subclasses; the rollout lets
    them take the rows without a rate instead of acting epsilon-greedily, from the Q-values it
    computed (one forward pass)."""
    from looprl.policies import BoltzmannPolicy, EZGreedyPolicy

    policy = _policy(epsilon=0.0)
    policy.greedy = (BoltzmannPolicy(policy.q, 3, temperature=100.0, seed=0) if kind ==
                     "boltzmann" else EZGreedyPolicy(policy.q, 3, epsilon=1.0, seed=0))
    obs = _obs(600)
    greedy = policy.analyze(NamedArray(obs=obs)).argmax(-1)
    calls = []
    policy.module.register_forward_hook(lambda *args: calls.append(1))
    action = policy.rollout(RolloutRequest(obs=obs)).action
    assert len(calls) == 1
    assert 0.55 < float((action != greedy).float().mean()) < 0.78  # near uniform
    evaluation = np.arange(600) % 2 == 0
    mixed = policy.rollout(RolloutRequest(obs=obs, is_evaluation=evaluation)).action
    assert torch.equal(mixed[evaluation], greedy[evaluation])
    assert torch.equal(policy.rollout(RolloutRequest(obs=obs, exploration=0.0)).action, greedy)
    policy.evaluation_epsilon = 1.0  # evaluation rows at their own rate, as without the policy
    mixed = policy.rollout(RolloutRequest(obs=obs, is_evaluation=evaluation)).action
    assert 0.55 < float((mixed[evaluation] != greedy[evaluation]).float().mean()) < 0.78


def test_ez_greedy_options_end_on_the_rows_whose_episode_ended() -> None:
    """On the collector, an ez-greedy option ends with its episode (the rows ``request.done``
    marks), as in ``act``: it does not run on into the env copy's next episode."""
    from looprl.policies import EZGreedyPolicy

    policy = _policy(epsilon=0.0)
    policy.greedy = EZGreedyPolicy(policy.q, 3, epsilon=1.0, mu=1.01, seed=0)
    obs = _obs(400)
    greedy = policy.analyze(NamedArray(obs=obs)).argmax(-1)
    first = policy.rollout(RolloutRequest(obs=obs)).action
    policy.greedy.epsilon = 0.0  # no new option: the running ones go on where not ended
    ended = np.arange(400) % 2 == 0
    action = policy.rollout(RolloutRequest(obs=obs, done=ended)).action
    assert torch.equal(action[ended], greedy[ended])
    assert (action[~ended] == first[~ended]).float().mean() > 0.7
    assert (first != greedy).float().mean() > 0.5  # (the options' actions are not greedy)
    with pytest.raises(ValueError, match="done has 3 rows, obs 400"):
        policy.rollout(_set_later(obs, done=np.zeros(3, dtype=bool)))


def test_action_mask_restricts_greedy_and_random_actions() -> None:
    policy = _policy(action_dim=4)
    rows = 400
    mask = np.zeros((rows, 4), dtype=bool)
    mask[np.arange(rows), np.arange(rows) % 4] = True
    mask[np.arange(rows), (np.arange(rows) + 1) % 4] = True  # two valid actions per row
    obs = NamedArray(obs=_obs(rows).obs, action_mask=mask)
    for eps in (0.0, 1.0):
        action = policy.rollout(RolloutRequest(obs=obs, exploration=eps)).action
        assert mask[np.arange(rows), action.numpy()].all()
    q = policy.analyze(NamedArray(obs=obs))
    assert (q[torch.as_tensor(~mask)] == MASKED_Q).all()


def test_analyze_any_leading_shape_with_gradients() -> None:
    policy = _policy(dueling=True)
    sample = SampleBatch(obs=NamedArray(obs=np.zeros((5, 2, 4), dtype=np.float32)))
    q = policy.analyze(sample, target="q")
    assert q.shape == (5, 2, 3) and q.requires_grad
    q.sum().backward()
    assert all(p.grad is not None for p in policy.module.parameters())
    before = [p.detach().clone() for p in policy.module.parameters()]
    policy.approximation.reinforce(policy.analyze(sample).sum())  # it has an optimizer
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.module.parameters()))
    with pytest.raises(ValueError, match="unknown analyze target 'ppo'"):
        policy.analyze(sample, target="ppo")
    with pytest.raises(ValueError, match="obs field 'obs' has shape"):
        policy.analyze(NamedArray(obs=np.zeros((5, 3))))


def test_checkpoint_round_trip() -> None:
    policy = _policy()
    policy.version = 4
    buffer = io.BytesIO()
    torch.save(policy.get_checkpoint(), buffer)
    other = _policy(seed=1)
    obs = NamedArray(obs=_obs(6).obs)
    assert not torch.allclose(other.analyze(obs), policy.analyze(obs))
    other.load_checkpoint(torch.load(io.BytesIO(buffer.getvalue())))
    assert other.version == 4
    assert torch.equal(other.analyze(obs), policy.analyze(obs))


def _set_later(obs: Any, **fields: Any) -> RolloutRequest:
    """A request whose ``fields`` were put in behind its back (built or set with them, rows
    that differ are the request's own one line): what the policy's own checks are for."""
    with pytest.raises(ValueError, match="must share their leading"):
        RolloutRequest(obs=obs, **fields)
    request = RolloutRequest(obs=obs)
    for name, value in fields.items():
        with pytest.raises(ValueError, match="must share their leading"):
            setattr(request, name, value)
        request.__dict__[name] = value
    return request
