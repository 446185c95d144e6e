"""The Ape-X DQN trainer on ``[T + 1, B]`` segments (the on-policy trainers: test_on_policy.py).

The policy is a small stand-in that follows the contract of ``looprl.agents.q_policy``
(``analyze(sample, target="q")``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from looprl.agents.srl_dqn import SRLDQNTrainer, n_step_bootstrap
from looprl.approximation import Approximation
from looprl.core import (
    NamedArray,
    Policy,
    RolloutResult,
    SampleBatch,
    Trainer,
)
from looprl.memory import make_sample_buffer
from looprl.nn import MLP

OBS, ACTIONS = 4, 3


class QStandIn(Policy):
    def __init__(self, seed=0):
        torch.manual_seed(seed)
        model = MLP(OBS, ACTIONS, hidden=(32,))
        self.approximation = Approximation(model, torch.optim.Adam(model.parameters(), lr=1e-2))
        self.device = torch.device("cpu")
        self.version = 0

    @property
    def module(self):
        return self.approximation.model

    def rollout(self, request, **kwargs):
        return RolloutResult(action=self.module(request.obs).argmax(-1))

    def analyze(self, sample, target=None, **kwargs):
        assert target == "q"
        return self.approximation(sample.obs.obs)


def make_sample(policy=None, rows=9, streams=6, seed=0, version=0) -> SampleBatch:
    """Random ``[rows, streams]`` segments with episode ends; log-probs and values from
    ``policy`` (so that they are on-policy) when given."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(rows, streams, OBS, generator=g)
    end = torch.rand(rows, streams, generator=g) < 0.2
    done = end & (torch.rand(rows, streams, generator=g) < 0.5)
    truncated = end & ~done
    reward = torch.randn(rows, streams, generator=g)
    reward[1:][end[:-1]] = 0.0
    sample = SampleBatch(
        obs=NamedArray(obs=obs),
        action=torch.randint(ACTIONS, (rows, streams), generator=g),
        reward=reward,
        done=done,
        truncated=truncated,
        log_prob=-torch.rand(rows, streams, generator=g) - 0.5,
        value=torch.randn(rows, streams, generator=g),
        policy_version=torch.full((rows, streams), version),
    )
    if policy is not None:
        with torch.no_grad():
            analysis = policy.analyze(sample, target="ppo")
        sample.log_prob, sample.value = analysis.log_prob, analysis.value
    return sample


def parameters(policy) -> list[torch.Tensor]:
    return [p.detach().clone() for p in policy.module.parameters()]


def changed(before, policy) -> bool:
    return any(not torch.equal(a, b) for a, b in zip(before, policy.module.parameters()))


def finite(stats: dict[str, float]) -> bool:
    return all(np.isfinite(v) for k, v in stats.items() if k != "explained_variance")


# -- DQN -------------------------------------------------------------------------------------


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


def test_dqn_targets_are_n_step_double_q():
    policy = QStandIn()
    trainer = SRLDQNTrainer(policy, discount_factor=0.9, n_step=2)
    with torch.no_grad():  # make the target network differ from the online one
        for p in trainer.target_policy.module.parameters():
            p.add_(0.1 * torch.randn_like(p))
    sample = make_sample(rows=7, streams=3, seed=7)
    values, targets = trainer._values_and_targets(sample)
    with torch.no_grad():
        online, target = policy.module(sample.obs.obs), trainer.target_policy.module(sample.obs.obs)
    returns, boot, discount = naive_n_step(sample.reward, sample.done, sample.truncated, 0.9, 2)
    for t in range(6):
        for b in range(3):
            row = int(boot[t, b])
            best = online[row, b].argmax()
            expected = returns[t, b] + discount[t, b] * target[row, b, best]
            assert targets[t, b] == pytest.approx(float(expected), abs=1e-5)
            q = online[t, b, sample.action[t, b]]
            assert float(values[t, b].detach()) == pytest.approx(float(q), abs=1e-6)


def test_dqn_step_priorities_version_and_target_updates():
    policy = QStandIn()
    trainer = Trainer(type_="dqn", policy=policy, args=dict(target_update=2, n_step=3))
    assert trainer.sample_buffer == "prioritized"
    sample = make_sample(rows=9, streams=4, seed=8)
    values, targets = trainer._values_and_targets(sample)
    mask = ~(sample.done | sample.truncated)[:-1]
    before = parameters(policy)
    result = trainer.step(sample, weights=torch.tensor([1.0, 0.5, 0.25, 1.0]))
    td = torch.where(mask, (targets - values).detach().abs(), 0.0)
    expected = 0.9 * td.max(0).values + 0.1 * td.sum(0) / mask.sum(0).clamp(min=1)
    assert result.priorities.shape == (4,) and torch.all(result.priorities > 0)
    torch.testing.assert_close(result.priorities, expected.clamp(min=1e-6))
    assert changed(before, policy) and policy.version == 1 and finite(result.stats)
    target = trainer.target_policy.module
    assert all(torch.equal(a, b) for a, b in zip(before, target.parameters()))
    trainer.step(sample)
    assert all(torch.equal(a, b) for a, b in zip(policy.module.parameters(), target.parameters()))
    with pytest.raises(ValueError, match=r"weights must be \[B=4\]"):
        trainer.step(sample, weights=torch.ones(3))


def test_dqn_importance_weights_scale_each_segment():
    sample = make_sample(rows=6, streams=2, seed=9)
    other = sample.clone()
    other.reward[:, 1] += 5.0  # only stream 1 differs
    policies = [QStandIn(seed=1) for _ in range(4)]
    trainers = [SRLDQNTrainer(p) for p in policies]
    trainers[0].step(sample, weights=torch.tensor([1.0, 0.0]))
    trainers[1].step(other, weights=torch.tensor([1.0, 0.0]))
    trainers[2].step(sample, weights=torch.tensor([1.0, 1.0]))
    trainers[3].step(other, weights=torch.tensor([1.0, 1.0]))
    params = [list(p.module.parameters()) for p in policies]
    assert all(torch.equal(a, b) for a, b in zip(params[0], params[1]))  # weight 0: ignored
    assert not all(torch.equal(a, b) for a, b in zip(params[2], params[3]))


def test_dqn_with_prioritized_segment_replay_round_trip():
    replay = make_sample_buffer(SRLDQNTrainer, capacity_segments=16, alpha=1.0, seed=0)
    trainer = SRLDQNTrainer(QStandIn(), n_step=2)
    for seed in range(3):
        replay.put(make_sample(rows=6, streams=4, seed=seed), current_version=0)
    batch, weights, indices = replay.sample(5)
    result = trainer.step(batch, weights=weights)
    replay.update_priorities(indices, result.priorities)
    last = {int(i): float(p) for i, p in zip(indices, result.priorities)}  # later duplicates win
    for index, priority in last.items():
        assert replay.tree[index] == pytest.approx(priority + replay.epsilon, rel=1e-6)
