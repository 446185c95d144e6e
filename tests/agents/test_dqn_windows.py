"""``DQNTrainer`` on ``SampleBatch`` windows: n-step double-Q targets, priorities, importance
weights, and the replay that cuts actors' segments into windows (Ape-X)."""

from __future__ import annotations

import pytest
import torch

from looprl.agents.dqn import DQNTrainer, q_network_policy, row_weights
from looprl.agents.losses import n_step_bootstrap
from looprl.core import NamedArray, SampleBatch, StateArray, Trainer
from looprl.memory import PrioritizedReplayBuffer, make_sample_buffer

OBS, ACTIONS = 4, 3


def make_sample(rows=9, streams=6, seed=0) -> SampleBatch:
    """Random ``[rows, streams]`` segments with episode ends (next-step autoreset)."""
    g = torch.Generator().manual_seed(seed)
    end = torch.rand(rows, streams, generator=g) < 0.2
    done = end & (torch.rand(rows, streams, generator=g) < 0.5)
    reward = torch.randn(rows, streams, generator=g)
    reward[1:][end[:-1]] = 0.0
    return SampleBatch(obs=NamedArray(obs=torch.randn(rows, streams, OBS, generator=g)),
                       action=torch.randint(ACTIONS, (rows, streams), generator=g),
                       reward=reward, done=done, truncated=end & ~done)


def naive_n_step(reward, done, truncated, gamma, n):
    rows, streams = reward.shape[0] - 1, reward.shape[1]
    end = done | truncated
    out = torch.zeros(3, rows, streams)
    for b in range(streams):
        for t in range(rows):
            total, k = 0.0, 0
            while k < n and t + k < rows:
                total += gamma**k * reward[t + k + 1, b]
                k += 1
                if end[t + k, b]:
                    break
            out[:, t, b] = torch.tensor([total, t + k, 0.0 if done[t + k, b] else gamma**k])
    return out


def test_n_step_bootstrap_matches_a_naive_loop():
    sample = make_sample(rows=10, streams=5, seed=6)
    returns, boot, discount = n_step_bootstrap(sample.reward, sample.done, sample.truncated, 0.9, 3)
    expected = naive_n_step(sample.reward, sample.done, sample.truncated, 0.9, 3)
    torch.testing.assert_close(returns, expected[0])
    assert torch.equal(boot, expected[1].long())
    torch.testing.assert_close(discount, expected[2])
    first = n_step_bootstrap(sample.reward, sample.done, sample.truncated, 0.9, 3, rows=1)
    assert all(torch.equal(a, b[:1]) for a, b in zip(first, (returns, boot, discount)))


def _policy(target_update=1000, seed=0):
    policy = q_network_policy({"obs": OBS}, ACTIONS, hidden_dim=32, lr=1e-2, clip_grad=0.0,
                              target_update=target_update, seed=seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # make the online network differ from the target network
        for p in policy.module.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    return policy


def _windows(n_step=2, seed=7) -> SampleBatch:
    replay = PrioritizedReplayBuffer(100, n_step=n_step)
    replay.put(make_sample(rows=7, streams=3, seed=seed))
    return replay.gather(torch.arange(len(replay)))


def test_dqn_targets_are_n_step_double_q():
    policy = _policy()
    trainer = DQNTrainer(policy, discount_factor=0.9, n_step=2, double_q=True)
    batch = _windows()
    values, targets, weights = trainer._values_and_targets(batch)
    obs = batch.obs.obs
    states = StateArray({"observation": NamedArray(obs=obs)}, tuple(obs.shape[:2]))
    online, target = policy.q.no_grad(states), policy.q.target(states)
    returns, boot, discount = naive_n_step(batch.reward, batch.done, batch.truncated, 0.9, 2)
    for b in range(batch.reward.shape[1]):
        row = int(boot[0, b])
        best = online[row, b].argmax()
        expected = returns[0, b] + discount[0, b] * target[row, b, best]
        assert targets[b] == pytest.approx(float(expected), abs=1e-5)
        q = online[0, b, batch.action[0, b]]
        assert float(values[b].detach()) == pytest.approx(float(q), abs=1e-6)
    torch.testing.assert_close(weights, batch.weight[0])


def test_dqn_step_priorities_version_and_target_updates():
    policy = _policy(target_update=2)
    trainer = Trainer(type_="dqn", policy=policy, args=dict(n_step=3, double_q=True))
    assert isinstance(trainer, DQNTrainer) and trainer.sample_buffer == "prioritized"
    batch = _windows(n_step=3, seed=8)
    values, targets, _ = trainer._values_and_targets(batch)
    before = [p.detach().clone() for p in policy.module.parameters()]
    target = policy.q._target._target
    result = trainer.step(batch)
    torch.testing.assert_close(result.priorities, (targets - values).detach().abs())
    assert result.step == 1 and policy.version == 1
    assert all(torch.isfinite(torch.as_tensor(v)) for v in result.stats.values())
    assert not all(torch.equal(a, b) for a, b in zip(before, policy.module.parameters()))
    assert not all(torch.equal(a, b) for a, b in zip(policy.module.parameters(),
                                                     target.parameters()))
    trainer.step(batch)  # the second update copies the online network into the target
    assert all(torch.equal(a, b) for a, b in zip(policy.module.parameters(), target.parameters()))


def test_dqn_importance_weights_scale_each_column():
    batch = _windows(seed=9)
    other = batch.clone()
    other.reward[:, 1] += 5.0  # only column 1 differs
    zero = torch.ones_like(batch.weight)
    zero[:, 1] = 0.0
    policies = [_policy(seed=1) for _ in range(4)]
    for policy, sample, weight in zip(policies, (batch, other, batch, other),
                                      (zero, zero, None, None)):
        sample.weight = weight
        DQNTrainer(policy, n_step=2).step(sample.clone())
    params = [list(p.module.parameters()) for p in policies]
    assert all(torch.equal(a, b) for a, b in zip(params[0], params[1]))  # weight 0: ignored
    assert not all(torch.equal(a, b) for a, b in zip(params[2], params[3]))


def test_dqn_with_prioritized_replay_round_trip():
    replay = make_sample_buffer(DQNTrainer.sample_buffer, size=64, alpha=1.0, n_step=2)
    trainer = DQNTrainer(_policy(), n_step=2)
    for seed in range(3):
        replay.put(make_sample(rows=6, streams=4, seed=seed), current_version=0)
    index = replay.sample_indices(5)
    result = trainer.step(replay.gather(index))
    replay.update_priorities(result.priorities, index)
    last = {int(i): float(p) for i, p in zip(index, result.priorities)}  # later duplicates win
    for slot, priority in last.items():
        assert replay.tree[slot] == pytest.approx(priority + replay.epsilon, rel=1e-5)


def test_row_weights_are_none_only_where_all_would_be_one():
    batch = _windows(n_step=1)
    ended = batch.done[0] | batch.truncated[0]
    plain = SampleBatch(obs=batch.obs, action=batch.action, reward=batch.reward,
                        done=batch.done, truncated=batch.truncated)
    weights = row_weights(plain)
    if ended.any():
        assert weights is not None and torch.equal(weights == 0, ended)
    clean = plain.done.clone(), plain.truncated.clone()
    clean[0][0], clean[1][0] = False, False
    ones = SampleBatch(obs=batch.obs, action=batch.action, reward=batch.reward, done=clean[0],
                       truncated=clean[1])
    assert row_weights(ones) is None
    assert row_weights(batch) is not None  # (importance weights: always given)
