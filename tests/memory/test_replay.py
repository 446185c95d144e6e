"""Tests of ``ExperienceReplayBuffer`` (looprl.memory.replay)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tests.helpers import fail_allocations

from looprl.core import SampleBatch, State, StateArray
from looprl.memory import ExperienceReplayBuffer
from looprl.memory.replay import transitions


def _state(i: int, **kwargs) -> State:
    return State(torch.full((2,), float(i)), **kwargs)


def _fill(buffer: ExperienceReplayBuffer, n: int) -> None:
    """Store transitions i -> i+1 with action i % 2 and reward i."""
    for i in range(n):
        buffer.store(_state(i), i % 2, _state(i + 1, reward=float(i)))


def test_store_none_is_skipped() -> None:
    buffer = ExperienceReplayBuffer(10)
    buffer.store(None, None, _state(0))
    assert len(buffer) == 0


def test_sample_shapes_and_types() -> None:
    buffer = ExperienceReplayBuffer(10, generator=torch.Generator().manual_seed(0))
    _fill(buffer, 4)
    states, actions, rewards, next_states, weights = buffer.sample(7)
    assert isinstance(states, StateArray) and states.shape == (7,)
    assert isinstance(next_states, StateArray) and next_states.shape == (7,)
    assert states.observation.shape == (7, 2)
    assert next_states.observation.shape == (7, 2)
    assert actions.shape == (7,) and actions.dtype == torch.int64
    assert rewards.shape == (7,) and rewards.dtype == torch.float32
    assert torch.equal(weights, torch.ones(7))
    # every sampled transition is one of the stored ones: next = obs + 1, reward = obs
    assert torch.equal(next_states.observation, states.observation + 1)
    assert torch.equal(rewards, states.observation[:, 0])
    assert torch.equal(actions, states.observation[:, 0].long() % 2)
    assert torch.equal(next_states.reward, rewards)


def test_gather_values_in_store_order() -> None:
    buffer = ExperienceReplayBuffer(10)
    _fill(buffer, 3)
    states, actions, rewards, next_states, _ = transitions(buffer.gather(torch.arange(3)))
    assert torch.equal(states.observation[:, 0], torch.tensor([0.0, 1.0, 2.0]))
    assert torch.equal(actions, torch.tensor([0, 1, 0]))
    assert torch.equal(rewards, torch.tensor([0.0, 1.0, 2.0]))
    assert torch.equal(next_states.observation[:, 1], torch.tensor([1.0, 2.0, 3.0]))
    assert torch.equal(next_states.mask, torch.ones(3))


def test_transitions_out_of_done_states_are_skipped() -> None:
    buffer = ExperienceReplayBuffer(10)
    buffer.store(_state(0, done=True), 1, _state(1))
    terminal = State.from_gym((np.zeros(2), 1.0, False, True, {}))  # truncated: done too
    buffer.store(terminal, 1, _state(1))
    assert len(buffer) == 0


def test_next_states_mask_termination_vs_truncation() -> None:
    buffer = ExperienceReplayBuffer(10)
    terminated = State.from_gym((np.ones(2), 2.0, True, False, {}))
    truncated = State.from_gym((np.ones(2), 3.0, False, True, {}))
    buffer.store(_state(0), 0, terminated)
    buffer.store(_state(0), 1, truncated)
    _, actions, rewards, next_states, _ = transitions(buffer.gather(torch.arange(2)))
    assert torch.equal(actions, torch.tensor([0, 1]))
    assert torch.equal(rewards, torch.tensor([2.0, 3.0]))
    assert torch.equal(next_states.mask, torch.tensor([0.0, 1.0]))
    assert torch.equal(next_states.done, torch.tensor([True, True]))
    assert torch.equal(next_states.terminated, torch.tensor([True, False]))
    assert torch.equal(next_states.truncated, torch.tensor([False, True]))


def test_ring_overwrites_oldest() -> None:
    buffer = ExperienceReplayBuffer(3)
    _fill(buffer, 5)
    assert len(buffer) == 3
    states, actions, rewards, _, _ = transitions(buffer.gather(torch.arange(3)))
    # slots 0 and 1 were overwritten by transitions 3 and 4; slot 2 still holds 2
    assert torch.equal(states.observation[:, 0], torch.tensor([3.0, 4.0, 2.0]))
    assert torch.equal(rewards, torch.tensor([3.0, 4.0, 2.0]))
    assert torch.equal(actions, torch.tensor([1, 0, 0]))
    sampled = buffer.sample(50)[0].observation[:, 0]
    assert set(sampled.tolist()) <= {2.0, 3.0, 4.0}


def test_batch_store_skips_done_rows() -> None:
    buffer = ExperienceReplayBuffer(100)
    state = StateArray(
        {
            "observation": torch.arange(4.0).unsqueeze(1),
            "done": torch.tensor([False, True, False, False]),
        },
        (4,),
    )
    next_state = StateArray(
        {
            "observation": torch.arange(4.0).unsqueeze(1) + 10,
            "reward": torch.tensor([1.0, 2.0, 3.0, 4.0]),
            "mask": torch.tensor([1.0, 1.0, 0.0, 1.0]),
            "done": torch.tensor([False, False, True, False]),
        },
        (4,),
    )
    buffer.store(state, torch.tensor([0, 1, 2, 3]), next_state)
    assert len(buffer) == 3
    states, actions, rewards, next_states, _ = transitions(buffer.gather(torch.arange(3)))
    assert torch.equal(states.observation.squeeze(1), torch.tensor([0.0, 2.0, 3.0]))
    assert torch.equal(actions, torch.tensor([0, 2, 3]))
    assert torch.equal(rewards, torch.tensor([1.0, 3.0, 4.0]))
    assert torch.equal(next_states.observation.squeeze(1), torch.tensor([10.0, 12.0, 13.0]))
    assert torch.equal(next_states.mask, torch.tensor([1.0, 0.0, 1.0]))


def test_batch_store_all_done_stores_nothing() -> None:
    buffer = ExperienceReplayBuffer(10)
    state = StateArray({"observation": torch.zeros(2, 1), "done": torch.ones(2, dtype=bool)}, (2,))
    buffer.store(state, torch.zeros(2, dtype=torch.long), state)
    assert len(buffer) == 0


def test_batch_store_wraps_around() -> None:
    buffer = ExperienceReplayBuffer(4)
    _fill(buffer, 3)  # position 3
    state = StateArray({"observation": torch.full((2, 2), 7.0)}, (2,))
    next_state = StateArray({"observation": torch.full((2, 2), 8.0)}, (2,))
    buffer.store(state, torch.tensor([1, 1]), next_state)
    assert len(buffer) == 4
    states = transitions(buffer.gather(torch.arange(4)))[0]
    assert torch.equal(states.observation[:, 0], torch.tensor([7.0, 1.0, 2.0, 7.0]))


def test_stores_of_batches_and_of_single_states_keep_their_order() -> None:
    """``StateArray`` steps are gathered and windowed later; a single state's store writes
    them first, so that the ring holds transitions in the order they came."""
    buffer = ExperienceReplayBuffer(10)
    state = StateArray({"observation": torch.full((2, 2), 7.0)}, (2,))
    buffer.store(state, torch.tensor([1, 1]), StateArray({"observation": torch.full((2, 2), 8.0)},
                                                         (2,)))
    _fill(buffer, 2)
    states = transitions(buffer.gather(torch.arange(4)))[0]
    assert torch.equal(states.observation[:, 0], torch.tensor([7.0, 7.0, 0.0, 1.0]))


def test_invalid_size_and_empty_sample() -> None:
    with pytest.raises(ValueError):
        ExperienceReplayBuffer(0)
    with pytest.raises(RuntimeError, match="empty"):
        ExperienceReplayBuffer(3).sample(2)


def test_generator_makes_sampling_reproducible() -> None:
    def draw() -> torch.Tensor:
        buffer = ExperienceReplayBuffer(20, generator=torch.Generator().manual_seed(5))
        _fill(buffer, 20)
        return buffer.sample(10)[0].observation

    assert torch.equal(draw(), draw())


def test_single_stores_into_numpy_views_match_the_segments_put_and_copies_keep_their_own() -> None:
    """A one-step replay in CPU memory writes a single state's transition into NumPy views of
    its storage at once; without views (e.g. on a GPU) the steps are ``put`` as segments: the
    same windows (terminal and truncated ends, tensor and int actions). A deep copy writes into
    its own storage, and ``gather`` returns the rows advanced indexing would."""
    import copy

    def fill(buffer: ExperienceReplayBuffer, start: int, n: int) -> None:
        for i in range(start, start + n):
            end = {"done": True, "mask": 0.0} if i % 5 == 4 else \
                {"done": True} if i % 7 == 6 else {}
            action = torch.tensor(i % 3) if i % 2 else i % 3
            buffer.store(_state(i), action, _state(i + 1, reward=0.5 * i, **end))

    numpy_rows, put_rows = ExperienceReplayBuffer(8), ExperienceReplayBuffer(8)
    put_rows._numpy_views = dict  # no views: every step through put
    for buffer in (numpy_rows, put_rows):
        fill(buffer, 0, 1)
        assert len(buffer) == 1  # (the first put allocates the storage)
        fill(buffer, 1, 10)
    assert numpy_rows._views and not numpy_rows._steps  # written at once
    assert not put_rows._views and put_rows._steps
    assert len(numpy_rows) == len(put_rows) == 8
    for key, rows in (("obs", slice(0, 2)), ("action", 0), ("reward", 1), ("done", 1),
                      ("truncated", 1)):  # what a one-step window holds
        assert torch.equal(numpy_rows._storage[key][:, rows], put_rows._storage[key][:, rows])
    index = torch.tensor([3, 0, 7, 3])
    batch = numpy_rows.gather(index)
    for key, value in numpy_rows._storage.items():
        assert torch.equal(getattr(batch, key), value[index].transpose(0, 1)), key
    copied = copy.deepcopy(numpy_rows)
    fill(copied, 100, 1)
    position = (numpy_rows._pos - 1) % 8
    assert float(copied._storage["obs"][numpy_rows._pos, 0, 0]) == 100.0
    assert float(numpy_rows._storage["obs"][position, 0, 0]) == 10.0
    assert torch.equal(numpy_rows._storage["obs"], put_rows._storage["obs"])


def test_gathered_steps_after_an_episode_end_start_a_new_sequence() -> None:
    """Steps gathered for ``put`` (n-step windows, or no NumPy views) go on in one sequence
    only from the state the last one reached, not from a new episode's first state that
    looks like the last one's final state (a constant observation: one-step episodes)."""
    for n in (1, 3):
        buffer = ExperienceReplayBuffer(20, n_step=n)
        buffer._numpy_views = dict
        for i in range(6):  # every step ends its episode
            buffer.store(_state(0), i, _state(0, reward=float(i), done=True, mask=0.0))
        assert len(buffer) == 6
        _, actions, rewards, next_states, _ = transitions(buffer.gather(torch.arange(6)), 0.5)
        assert actions.tolist() == list(range(6)) and rewards.tolist() == list(range(6))
        assert next_states.mask.tolist() == [0.0] * 6


def test_put_of_numpy_one_step_segments_writes_what_the_windowing_path_writes() -> None:
    """The collector's NumPy segments go straight into a one-step replay's storage (its fast
    path); the same segments as tensors go through ``n_step_windows``: same contents."""
    rng = np.random.default_rng(0)
    segments = []
    for _ in range(6):  # [T + 1, B] = [4, 3] rows, some episode ends (done or truncated)
        ends = rng.random((4, 3)) < 0.25
        terminal = rng.random((4, 3)) < 0.5
        segments.append(SampleBatch(
            obs=rng.standard_normal((4, 3, 2)).astype(np.float32),
            action=rng.integers(0, 5, (4, 3)), reward=rng.standard_normal((4, 3)).astype(
                np.float32), done=ends & terminal, truncated=ends & ~terminal))
    fast, windowed = ExperienceReplayBuffer(40), ExperienceReplayBuffer(40)
    fast.put(segments[0].to("cpu"))  # (allocates the storage: the fast path writes into it)
    windowed.put(segments[0].to("cpu"))
    for segment in segments[1:]:
        fast.put(segment)  # NumPy: the fast path
        windowed.put(segment.to("cpu"))
    assert len(fast) == len(windowed) > 0
    for key in ("obs", "action", "reward", "done", "truncated"):
        assert torch.equal(fast._storage[key], windowed._storage[key]), key


def test_a_storage_that_cannot_be_allocated_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Was torch's allocator traceback (or the kernel's OOM killer) at the first write, steps
    into a run; now one line with the bytes and what to lower, and the buffer stays empty."""
    fail_allocations(monkeypatch, "zeros", 10**9)
    buffer = ExperienceReplayBuffer(10**9)
    state = State({"observation": torch.zeros(4), "reward": 0.0, "done": False})
    with pytest.raises(ValueError, match=r"^ExperienceReplayBuffer: 1,000,000,000 items of 60 "
                                         r"bytes need 55.9 GiB on cpu, which could not be "
                                         r"allocated \(.*\); lower its size \(a preset's "
                                         r"replay_buffer_size\)$"):
        buffer.store(state, torch.tensor(1), state)
        len(buffer)
    assert buffer._storage is None and len(buffer) == 0


@pytest.mark.parametrize("n_step, batched", [(1, False), (1, True), (3, False)])
def test_a_later_action_of_another_dtype_is_cast_or_one_line_if_it_would_be_cut(
        n_step: int, batched: bool) -> None:
    """The storage keeps the first action's dtype: a later one of another dtype that fits (int32
    then int64, whole floats) is stored as it (was, n-step: torch's "Index put requires the
    source and destination dtypes match"), one with a fraction is one line (was: 1.7 stored
    as 1, silently, or that same torch error)."""
    def store(buffer: ExperienceReplayBuffer, first: int, action: object) -> None:
        for i in range(first, first + 2):
            if batched:  # (numpy segments put as they come: the NumPy views' path)
                buffer.put(SampleBatch(
                    obs=np.array([[i], [i + 1]], np.float32), reward=np.zeros((2, 1), np.float32),
                    action=np.array([[action], [action]]), done=np.zeros((2, 1), bool),
                    truncated=np.zeros((2, 1), bool)))
            else:
                buffer.store(_state(i), action, _state(i + 1))
        len(buffer)  # (the steps gathered are stored)

    buffer = ExperienceReplayBuffer(50, n_step=n_step)
    store(buffer, 0, np.int32(1))
    store(buffer, 2, torch.tensor(3))
    store(buffer, 4, 2.0)
    with pytest.raises(TypeError, match=r"^ExperienceReplayBuffer: actions of float(32|64) with a "
                                        r"fraction \(\[1\.7.*\]\) after actions of int32: .*"
                                        r"give the actions one dtype"):
        store(buffer, 6, torch.tensor(1.7))
    actions = buffer.gather(torch.arange(len(buffer))).action[0]
    assert actions.dtype == torch.int32 and {1, 3} <= set(actions.tolist()) <= {1, 2, 3}


@pytest.mark.parametrize("n_step", [1, 3])
def test_a_later_observation_or_action_of_another_shape_is_one_line(n_step: int) -> None:
    """The storage keeps the first transitions' shapes: a later observation or action of
    another shape is one line naming both (was: NumPy's "could not broadcast input array from
    shape (3,) into shape (2,)" or "all input arrays must have the same shape")."""
    for later, what, shapes in (
            (lambda i: (State(torch.zeros(3)), 1), "observations", r"\[\(2,\), \(3,\)\]"),
            (lambda i: (_state(i), torch.tensor([1, 2])), "actions", r"\[\(2,\)\]")):
        buffer = ExperienceReplayBuffer(50, n_step=n_step)
        for i in range(3):
            buffer.store(_state(i), 1, _state(i + 1))
        assert len(buffer) == (3 if n_step == 1 else 1)
        state, action = later(3)
        with pytest.raises(ValueError, match=rf"^ExperienceReplayBuffer.store: the {what} come "
                                             rf"in shapes {shapes} after ones of shape \(2?,?\) "
                                             r"were stored; .*give them one shape$"):
            buffer.store(_state(3), action, state)
            len(buffer)


def test_gather_of_a_cpu_replay_takes_numpy_rows_as_index_select_would(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU replay gathers through its NumPy views (``take``: a third of ``index_select``'s
    instructions, once per gradient step): the same values, dtypes, shapes and strides as the
    storage's ``index_select`` gives, from a tensor index or a list; a bfloat16 replay (no
    views) still gathers with torch."""
    buffer = ExperienceReplayBuffer(10)
    _fill(buffer, 6)
    assert len(buffer) == 6  # (stored: the steps gathered are put)
    index = torch.tensor([4, 0, 4, 2])
    expected = {key: value.index_select(0, index).transpose(0, 1)
                for key, value in buffer._storage.items()}
    monkeypatch.setattr(torch.Tensor, "index_select", None)  # (was: called for every field)
    for given in (index, index.tolist()):
        batch = buffer.gather(given)
        for key, value in expected.items():
            got = batch[key]
            assert got.dtype == value.dtype and got.stride() == value.stride()
            assert torch.equal(got, value)
    monkeypatch.undo()
    wide = ExperienceReplayBuffer(4)
    obs = torch.tensor([[[1.0, 1.0]], [[0.0, 0.0]]], dtype=torch.bfloat16)
    wide.put(SampleBatch(obs=obs, action=torch.ones(2, 1, dtype=torch.long),
                         reward=torch.zeros(2, 1), done=torch.zeros(2, 1, dtype=torch.bool),
                         truncated=torch.zeros(2, 1, dtype=torch.bool)))
    assert torch.equal(wide.gather(torch.tensor([0])).obs, obs)


def test_a_bfloat16_observation_is_one_line() -> None:
    """NumPy has no bfloat16: a bfloat16 observation is one ``TypeError`` line saying to give
    float32 (was: torch's ``Got unsupported ScalarType BFloat16`` from the buffer's insides)."""
    buffer = ExperienceReplayBuffer(100)
    state = State({"observation": torch.zeros(3, dtype=torch.bfloat16)})
    buffer.store(state, torch.tensor(1), state.update(reward=1.0))
    with pytest.raises(TypeError, match=r"^a torch.bfloat16 tensor has no NumPy dtype, .*give "
                                        r"them as float32"):
        buffer.sample(1)
