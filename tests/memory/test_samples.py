"""Trainer-side buffers of ``[T + 1, B]`` sample segments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from looprl.core import NamedArray, SampleBatch
from looprl.memory import (
    OnPolicyBuffer,
    PrioritizedSegmentReplay,
    make_sample_buffer,
)


def segment(streams: int, rows: int = 5, version: int = 0, start: float = 0.0, numpy=False):
    """A segment whose ``reward[t, b] = start + b`` tags each stream, with a nested
    observation and a recurrent ``policy_state``."""
    column = start + torch.arange(streams, dtype=torch.float32)
    sample = SampleBatch(
        obs=NamedArray(obs=column.view(1, -1, 1).expand(rows, streams, 3).clone()),
        action=torch.zeros(rows, streams, dtype=torch.int64),
        reward=column.expand(rows, streams).clone(),
        done=torch.zeros(rows, streams, dtype=torch.bool),
        truncated=torch.zeros(rows, streams, dtype=torch.bool),
        policy_state=NamedArray(hx=torch.zeros(rows, streams, 1, 1, 2)),
        policy_version=torch.full((rows, streams), version),
    )
    return sample.to_numpy() if numpy else sample


def test_on_policy_buffer_drops_samples_beyond_max_lag():
    buffer = OnPolicyBuffer(batch_streams=2, max_lag=5)
    old = segment(2, version=3)
    old.policy_version[0, 0] = 1  # the oldest row decides
    assert not buffer.put(old, current_version=7)
    assert buffer.put(segment(2, version=2), current_version=7)
    assert (buffer.received, buffer.dropped, len(buffer)) == (2, 1, 2)
    no_limit = OnPolicyBuffer(batch_streams=2)
    assert no_limit.put(segment(2, version=0), current_version=1000)


@pytest.mark.parametrize("numpy", [False, True])
def test_on_policy_buffer_concatenates_streams(numpy):
    buffer = OnPolicyBuffer(batch_streams=4)
    buffer.put(segment(3, start=0.0, numpy=numpy), 0)
    assert not buffer.ready()
    with pytest.raises(RuntimeError, match="3 of 4"):
        buffer.get()
    buffer.put(segment(2, start=10.0, numpy=numpy), 0)
    assert buffer.ready()
    batch = buffer.get()
    assert batch.reward.shape == (5, 4) and batch.obs.obs.shape == (5, 4, 3)
    assert batch.policy_state.hx.shape == (5, 4, 1, 1, 2)
    assert np.asarray(batch.reward[0]).tolist() == [0.0, 1.0, 2.0, 10.0]
    assert len(buffer) == 1 and not buffer.ready()
    buffer.put(segment(3, start=20.0, numpy=numpy), 0)
    assert np.asarray(buffer.get().reward[0]).tolist() == [11.0, 20.0, 21.0, 22.0]


def test_on_policy_buffer_rejects_other_segment_lengths():
    buffer = OnPolicyBuffer(batch_streams=4)
    buffer.put(segment(2, rows=5), 0)
    with pytest.raises(ValueError, match="T \\+ 1 = 5"):
        buffer.put(segment(2, rows=6), 0)


@pytest.mark.parametrize("numpy", [False, True])
def test_replay_samples_time_major_segments_with_weights(numpy):
    replay = PrioritizedSegmentReplay(capacity_segments=8, seed=0)
    assert not replay.ready(1)
    replay.put(segment(3, start=0.0, numpy=numpy), current_version=0)
    replay.put(segment(2, start=10.0, numpy=numpy), current_version=0)
    assert len(replay) == 5 and replay.ready(5)
    batch, weights, indices = replay.sample(4)
    assert batch.reward.shape == (5, 4) and batch.obs.obs.shape == (5, 4, 3)
    assert batch.policy_state.hx.shape == (5, 4, 1, 1, 2)
    assert weights.shape == (4,) and weights.dtype == torch.float32
    torch.testing.assert_close(weights, torch.ones(4))  # equal priorities: uniform
    stored = [0.0, 1.0, 2.0, 10.0, 11.0]
    assert np.asarray(batch.reward[0]).tolist() == [stored[i] for i in indices]


def test_replay_priorities_change_sampling_and_weights():
    replay = PrioritizedSegmentReplay(capacity_segments=4, alpha=1.0, beta=1.0, seed=0)
    replay.put(segment(4), current_version=0)
    replay.update_priorities([0, 1, 2, 3], torch.tensor([1.0, 1.0, 1.0, 97.0]))
    counts = np.zeros(4)
    for _ in range(50):
        _, weights, indices = replay.sample(4)
        np.add.at(counts, indices, 1)
    assert counts[3] > 0.9 * counts.sum()  # P(3) = 0.97
    _, weights, indices = replay.sample(64)
    common = weights[torch.from_numpy(indices == 3)]
    rare = weights[torch.from_numpy(indices != 3)]
    assert rare.numel() > 0 and common.max() < rare.min()  # frequent items weigh less
    # new items enter at the largest priority seen so far
    replay.put(segment(1, start=5.0), current_version=0)
    assert replay.tree[0] == pytest.approx(97.0, rel=1e-4)
    with pytest.raises(ValueError, match="2 indices but 1 priorities"):
        replay.update_priorities([0, 1], [1.0])


def test_replay_overwrites_the_oldest_streams():
    replay = PrioritizedSegmentReplay(capacity_segments=3, seed=0)
    replay.put(segment(2, start=0.0), 0)
    replay.put(segment(2, start=10.0), 0)
    assert len(replay) == 3
    assert replay._storage.reward[:, 0].tolist() == [11.0, 1.0, 10.0]
    with pytest.raises(ValueError, match="T \\+ 1 = 5"):
        replay.put(segment(1, rows=4), 0)
    with pytest.raises(RuntimeError, match="empty"):
        PrioritizedSegmentReplay(4).sample(2)


def test_make_sample_buffer_by_trainer_or_kind():
    from looprl.agents import PPOTrainer
    from looprl.agents.srl_dqn import SRLDQNTrainer

    assert isinstance(make_sample_buffer(PPOTrainer, batch_streams=2), OnPolicyBuffer)
    replay = make_sample_buffer(SRLDQNTrainer, capacity_segments=4)
    assert isinstance(replay, PrioritizedSegmentReplay)
    assert isinstance(make_sample_buffer("on_policy", batch_streams=1), OnPolicyBuffer)
    with pytest.raises(KeyError, match="on_policy"):
        make_sample_buffer("fifo")


def test_on_policy_segments_that_aged_while_waiting_are_dropped_before_training():
    from looprl.memory.samples import OnPolicyBuffer

    buffer = OnPolicyBuffer(batch_streams=1, max_lag=1)
    for _ in range(3):
        assert buffer.put(segment(1, version=0), current_version=0)
    assert buffer.drop_stale(current_version=1) == 0  # lag 1: still fresh enough
    assert buffer.drop_stale(current_version=4) == 3 and not buffer.ready()
    assert buffer.dropped == 3
