"""Trainer-side buffers of ``[T + 1, B]`` sample segments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from looprl.core import NamedArray, SampleBatch
from looprl.memory import (
    ExperienceReplayBuffer,
    OnPolicyBuffer,
    PrioritizedReplayBuffer,
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
    assert len(buffer) == 2
    no_limit = OnPolicyBuffer(batch_streams=2)
    assert no_limit.put(segment(2, version=0), current_version=1000)


def test_on_policy_buffer_of_one_stream_takes_segments_of_any_length():
    """VPG's segments of whole episodes differ in length: one stream per batch takes them
    as they come; batches of several streams need equal lengths (a one-line error)."""
    buffer = OnPolicyBuffer(batch_streams=1)
    buffer.put(segment(2, rows=5), 0)
    buffer.put(segment(1, rows=9, start=7.0), 0)
    shapes = [tuple(buffer.get().reward.shape) for _ in range(3)]
    assert shapes == [(5, 1), (5, 1), (9, 1)] and not buffer.ready()
    several = OnPolicyBuffer(batch_streams=2)
    several.put(segment(1, rows=5), 0)
    with pytest.raises(ValueError, match=r"^segments batched 2 at a time must all have "
                                         r"T \+ 1 = 5 rows, got 9 .*batch_streams=1"):
        several.put(segment(1, rows=9), 0)

def test_on_policy_batches_are_writable_where_ray_delivered_read_only_arrays():
    """A trainer may edit its batch in place on Ray as locally (SRL's reward scaling): the
    read-only arrays of Ray's zero-copy transfer come as copies (was: "assignment destination
    is read-only" in the trainer worker); writable ones are not copied."""
    buffer = OnPolicyBuffer(batch_streams=2)
    received = segment(2, numpy=True)
    for leaf in (received.reward, received.obs.obs):
        leaf.flags.writeable = False
    buffer.put(received, 0)
    batch = buffer.get()
    batch.reward[:] = batch.reward * 2.0
    np.clip(batch.obs.obs, 0, 0.5, out=batch.obs.obs)
    assert batch.reward[0].tolist() == [0.0, 2.0] and received.reward[0].tolist() == [0.0, 1.0]
    assert batch.action is received.action  # (writable: as it came)


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
def test_replay_put_cuts_segments_into_weighted_n_step_windows(numpy):
    """The trainer worker's replay (the local buffer): each training row of a segment is one
    n-step window, cut (truncated) at the segment's end."""
    replay = PrioritizedReplayBuffer(size=64, n_step=2, generator=torch.Generator().manual_seed(0))
    assert len(replay) == 0
    sample = segment(3, start=0.0, numpy=numpy)
    sample.reward[:] = np.arange(5).reshape(5, 1) if numpy else torch.arange(5.0).view(5, 1)
    sample.done[2, 1] = True  # stream 1 ends at row 2: row 2 is no training row
    replay.put(sample, current_version=0)
    assert len(replay) == 4 + 3 + 4
    batch = replay.sample_batch(8)
    assert batch.reward.shape == (3, 8) and batch.obs.obs.shape == (3, 8, 3)
    assert batch.weight.shape == (3, 8) and batch.weight.dtype == torch.float32
    torch.testing.assert_close(batch.weight, torch.ones(3, 8))  # equal priorities: uniform
    stored = replay._storage
    starts = stored["reward"][:11, 0].tolist()  # the row each window starts at
    assert sorted(starts) == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3]
    last = [i for i in range(11) if starts[i] == 3]  # rows 3, 4 and the repeated row 4
    assert all(stored["reward"][i].tolist() == [3, 4, 4] for i in last)
    assert all(stored["truncated"][i].tolist() == [False, True, True] for i in last)
    ended = [int(stored["done"][i].nonzero()) for i in range(11) if stored["done"][i].any()]
    assert sorted(ended) == [1, 2]  # the windows from rows 0 and 1 of stream 1 reach row 2


def test_replay_priorities_change_sampling_and_weights():
    replay = PrioritizedReplayBuffer(size=4, alpha=1.0, beta=1.0)
    replay.put(segment(4, rows=2), current_version=0)
    replay.update_priorities(torch.tensor([1.0, 1.0, 1.0, 97.0]), [0, 1, 2, 3])
    counts = np.zeros(4)
    for _ in range(50):
        index = replay.sample_indices(4)
        np.add.at(counts, index.numpy(), 1)
    assert counts[3] > 0.9 * counts.sum()  # P(3) = 0.97
    index = replay.sample_indices(64)
    weights = replay.gather(index).weight[0]
    common, rare = weights[index == 3], weights[index != 3]
    assert rare.numel() > 0 and common.max() < rare.min()  # frequent items weigh less
    # new items enter at the largest priority seen so far
    replay.put(segment(1, rows=2, start=5.0), current_version=0)
    assert replay.tree[0] == pytest.approx(97.0, rel=1e-4)


def test_replay_overwrites_the_oldest_transitions():
    replay = ExperienceReplayBuffer(3)
    replay.put(segment(2, rows=2, start=0.0), 0)
    replay.put(segment(2, rows=2, start=10.0), 0)
    assert len(replay) == 3
    assert replay._storage["obs"].obs[:, 0, 0].tolist() == [11.0, 1.0, 10.0]
    with pytest.raises(RuntimeError, match="empty"):
        ExperienceReplayBuffer(4).sample_batch(2)


def test_make_sample_buffer_of_the_kind_a_trainer_names():
    from looprl.agents import PPOTrainer
    from looprl.agents.dqn import DQNTrainer

    on_policy = make_sample_buffer(PPOTrainer.sample_buffer, batch_streams=2)
    assert isinstance(on_policy, OnPolicyBuffer) and on_policy.batch_streams == 2
    replay = make_sample_buffer(DQNTrainer.sample_buffer, size=4)
    assert isinstance(replay, PrioritizedReplayBuffer) and replay.size == 4
    assert type(make_sample_buffer("uniform", size=4)) is ExperienceReplayBuffer
    assert isinstance(make_sample_buffer("on_policy", batch_streams=1), OnPolicyBuffer)
    with pytest.raises(ValueError, match="Unknown sample buffer 'fifo'.* Valid: .*on_policy"):
        make_sample_buffer("fifo")
    with pytest.raises(ValueError, match="Unknown sample buffer <class"):
        make_sample_buffer(DQNTrainer, size=4)  # a kind, not the trainer


def test_on_policy_segments_that_aged_while_waiting_are_dropped_before_training():
    from looprl.memory.samples import OnPolicyBuffer

    buffer = OnPolicyBuffer(batch_streams=1, max_lag=1)
    for _ in range(3):
        assert buffer.put(segment(1, version=0), current_version=0)
    assert buffer.drop_stale(current_version=1) == 0  # lag 1: still fresh enough
    assert buffer.drop_stale(current_version=4) == 3 and not buffer.ready()
