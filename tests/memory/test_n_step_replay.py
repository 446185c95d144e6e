"""Tests of n-step replay windows (``ExperienceReplayBuffer`` with ``n_step > 1``): through
``store`` (seed 003's loop) and through ``put`` (the collectors' segments), which cut them in
one function, ``n_step_windows``."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from tests.agents.test_dqn_windows import naive_n_step

from looprl.core import SampleBatch, State, StateArray
from looprl.memory.prioritized import PrioritizedReplayBuffer
from looprl.memory.replay import ExperienceReplayBuffer, transitions
from looprl.memory.store import n_step_windows

GAMMA = 0.5


def _s(i: float, **kwargs) -> State:
    return State(torch.full((2,), float(i)), **kwargs)


def _all(buffer: ExperienceReplayBuffer) -> tuple:
    """Every stored transition, sorted by the first feature of the starting observation."""
    states = buffer.gather(torch.arange(len(buffer))).obs[0]
    return transitions(buffer.gather(states[:, 0].argsort()), GAMMA)


def test_single_stream_termination() -> None:
    buffer = ExperienceReplayBuffer(100, n_step=3)
    # states 0 -> 1 -> 2 -> 3 -> 4 (terminal), rewards 1, 2, 4, 8
    states = [_s(0), _s(1, reward=1.0), _s(2, reward=2.0), _s(3, reward=4.0)]
    states.append(_s(4, reward=8.0, done=True))  # mask 0
    for t in range(4):
        buffer.store(states[t], t % 2, states[t + 1])
    assert len(buffer) == 4
    obs, actions, returns, next_states, _ = _all(buffer)
    # t=0 is written when 3 steps old, t=1, 2, 3 at the termination
    assert obs.observation[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert actions.tolist() == [0, 1, 0, 1]
    # R_0 = 1 + 0.5*2 + 0.25*4 = 3; R_1 = 2 + 0.5*4 + 0.25*8 = 6; R_2 = 4 + 0.5*8 = 8; R_3 = 8
    assert returns.tolist() == [3.0, 6.0, 8.0, 8.0]
    assert next_states.observation[:, 0].tolist() == [3.0, 4.0, 4.0, 4.0]
    assert next_states.mask.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert next_states["discount"].tolist() == [0.125, 0.125, 0.25, 0.5]


def test_truncation_keeps_bootstrapping_with_the_discount_used() -> None:
    buffer = ExperienceReplayBuffer(100, n_step=3)
    states = [_s(0), _s(1, reward=1.0), _s(2, reward=2.0, done=True, mask=1.0)]  # truncated
    states += [_s(10), _s(11, reward=3.0)]  # new episode (the step out of done is skipped)
    for t in range(4):
        buffer.store(states[t], 0, states[t + 1])
    obs, _, returns, next_states, _ = _all(buffer)
    assert obs.observation[:, 0].tolist() == [0.0, 1.0]  # state 10's transition is pending
    assert returns.tolist() == [1.0 + 0.5 * 2.0, 2.0]
    assert next_states.mask.tolist() == [1.0, 1.0]
    assert next_states["discount"].tolist() == [0.25, 0.5]
    assert next_states.observation[:, 0].tolist() == [2.0, 2.0]


def test_parallel_streams_match_a_naive_n_step_loop() -> None:
    n, steps, rows = 3, 12, 3
    generator = torch.Generator().manual_seed(0)
    rewards = torch.randint(1, 5, (steps, rows), generator=generator).float()
    dones = torch.zeros(steps, rows, dtype=torch.bool)
    masks = torch.ones(steps, rows)
    dones[4, 0] = True  # stream 0 terminates at step 4
    masks[4, 0] = 0.0
    dones[6, 1] = True  # stream 1 is truncated at step 6
    buffer = ExperienceReplayBuffer(100, n_step=n)
    state = StateArray({"observation": torch.zeros(rows, 1)}, (rows,))
    for t in range(steps):
        nxt = StateArray(
            {"observation": torch.full((rows, 1), t + 1.0), "reward": rewards[t],
             "done": dones[t], "mask": masks[t]},
            (rows,),
        )
        buffer.store(state, torch.arange(rows), nxt)
        state = nxt
    obs, actions, returns, next_states, _ = _all(buffer)
    # the same steps as [T + 1, B] rows (row t + 1: what arrived with step t), looped naively
    first = torch.zeros(1, rows, dtype=torch.bool)
    terminal = torch.cat([first, dones & (masks == 0)])
    truncated = torch.cat([first, dones & (masks != 0)])
    expected = naive_n_step(torch.cat([torch.zeros(1, rows), rewards]), terminal, truncated,
                            GAMMA, n)
    for i in range(len(buffer)):
        t, row = int(obs.observation[i, 0]), int(actions[i])
        ret, boot, _ = expected[:, t, row]
        assert returns[i] == ret
        assert next_states.observation[i, 0] == boot  # (the observation of row k is k)
        assert next_states["discount"][i] == GAMMA ** (boot - t)
        assert next_states.mask[i] == (0.0 if terminal[int(boot), row] else 1.0)
    # transitions out of done states (t = 5 for stream 0, t = 7 for stream 1) are skipped
    written = {(int(o), int(a)) for o, a in zip(obs.observation[:, 0], actions)}
    assert (5, 0) not in written and (7, 1) not in written and (5, 2) in written


def test_every_read_sees_each_window_once_its_steps_arrived() -> None:
    """``store`` gathers steps and windows them in chunks; a read (``len``, sampling) sees
    exactly the windows complete so far, over chunks, episode ends and new episodes that do
    not start where the last one stopped."""
    n, buffer = 3, ExperienceReplayBuffer(1000, n_step=3)
    generator = torch.Generator().manual_seed(0)
    finished, running, obs = 0, 0, 0.0  # windows of ended episodes; steps of this one
    state = _s(obs)
    for step in range(200):
        obs += 1
        end = bool(torch.rand(1, generator=generator) < 0.08)
        terminal = end and bool(torch.rand(1, generator=generator) < 0.5)
        next_state = _s(obs, reward=1.0, done=end, mask=0.0 if terminal else 1.0)
        buffer.store(state, 0, next_state)
        running += 1
        if end:  # every window of the episode is complete
            finished, running = finished + running, 0
            obs += 100  # the next episode starts elsewhere
            state = _s(obs)
        else:  # the windows of the steps n or more steps back
            state = next_state
        if step % 7 == 6:  # (a read windows what store gathered: not at every step)
            assert len(buffer) == finished + max(0, running - n + 1)
    assert len(buffer) > 150


def test_prioritized_n_step_store_and_priorities() -> None:
    buffer = PrioritizedReplayBuffer(10, alpha=1.0, epsilon=0.0, n_step=2)
    for t in range(3):
        buffer.store(_s(t), 0, _s(t + 1, reward=float(t)))
    assert len(buffer) == 2  # the window of state 2 waits for its second step
    _, _, returns, next_states, weights = transitions(buffer.sample_batch(4), GAMMA)
    start = next_states.observation[:, 0] - 2  # rewards start and start + 1 follow it
    assert set(start.tolist()) <= {0.0, 1.0}
    assert torch.equal(returns, start + GAMMA * (start + 1))
    assert weights.shape == (4,)
    buffer.update_priorities(torch.full((4,), 7.0))
    assert buffer.max_priority == 7.0


def _steps(rows: int, steps: int, seed: int) -> dict[str, torch.Tensor]:
    """Random streams ``[steps + 1, rows]`` in ``SampleBatch``'s convention: row ``t`` holds
    the observation (the stream's number * 1000 + t), the action taken there (t * 10 + the
    stream) and what arrived with it; about one step in seven ends an episode."""
    generator = torch.Generator().manual_seed(seed)
    ends = torch.rand(steps + 1, rows, generator=generator) < 0.15
    terminal = ends & (torch.rand(steps + 1, rows, generator=generator) < 0.5)
    ends[0] = False
    t = torch.arange(steps + 1).unsqueeze(1)
    return {"obs": (torch.arange(rows) * 1000 + t).float().unsqueeze(-1),
            "action": t * 10 + torch.arange(rows), "reward": torch.rand(steps + 1, rows,
                                                                      generator=generator),
            "done": terminal, "truncated": ends & ~terminal}


def _store_all(buffer: ExperienceReplayBuffer, rows: dict[str, torch.Tensor]) -> None:
    """``store`` every step of ``rows``, all streams at once (a ``StateArray`` loop)."""
    def state(t: int) -> StateArray:
        ended = rows["done"][t] | rows["truncated"][t]
        return StateArray({"observation": rows["obs"][t], "reward": rows["reward"][t],
                           "done": ended, "mask": (~rows["done"][t]).float()},
                          (rows["obs"].shape[1],))

    for t in range(len(rows["reward"]) - 1):
        buffer.store(state(t), rows["action"][t], state(t + 1))


def _segments(rows: dict[str, torch.Tensor], length: int, first_stream: int = 0
              ) -> list[SampleBatch]:
    """``rows`` cut into ``[length + 1, B]`` segments that overlap by one row, as a collector's."""
    steps, streams = rows["reward"].shape[0] - 1, rows["reward"].shape[1]
    cut = []
    for start in range(0, steps, length):
        part = {key: value[start : min(start + length, steps) + 1] for key, value in rows.items()}
        stream = torch.arange(first_stream, first_stream + streams).expand(len(part["reward"]), -1)
        cut.append(SampleBatch(**part, stream=stream))
    return cut


def _windows(buffer: ExperienceReplayBuffer) -> dict[tuple[float, int], tuple]:
    """Each stored window's transition by its first observation and action."""
    states, actions, returns, next_states, _ = transitions(
        buffer.gather(torch.arange(len(buffer))), GAMMA)
    return {(float(states.observation[i, 0]), int(actions[i])): (
        round(float(returns[i]), 5), float(next_states.observation[i, 0]),
        float(next_states.mask[i]), float(next_states["discount"][i]))
        for i in range(len(buffer))}


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("length", [1, 2, 7])
def test_put_joins_a_streams_segments_into_the_windows_store_makes(n: int, length: int) -> None:
    """The collectors' segments of a stream give the windows that storing the same steps one
    by one gives: none is cut at a segment's end."""
    rows = _steps(rows=3, steps=80, seed=n)
    stored, put = ExperienceReplayBuffer(1000, n_step=n), ExperienceReplayBuffer(1000, n_step=n)
    _store_all(stored, rows)
    for segment in _segments(rows, length, first_stream=7):
        put.put(segment)
    assert len(put) == len(stored) > 150
    assert _windows(put) == _windows(stored)
    by_hand = ExperienceReplayBuffer(1000, n_step=n)  # without stream numbers: cut windows
    for segment in _segments(rows, length):
        segment.stream = None
        by_hand.put(segment)
    assert _windows(by_hand) != _windows(stored)


def test_a_segment_that_does_not_continue_its_stream_ends_the_waiting_windows() -> None:
    """A restarted actor's first segment (a new episode under the same stream number) ends
    the windows its stream left waiting where they stopped, bootstrapped as truncated."""
    rows = _steps(rows=1, steps=4, seed=0)
    for key in ("done", "truncated"):
        rows[key][:] = False
    buffer = ExperienceReplayBuffer(100, n_step=3)
    first, = _segments(rows, 4)
    buffer.put(first)
    assert len(buffer) == 2  # the windows of rows 2 and 3 wait for rows 5 and 6
    restart = {key: value.clone() for key, value in rows.items()}
    restart["obs"] += 100.0  # another first observation
    buffer.put(_segments(restart, 4)[0])
    assert len(buffer) == 2 + 2 + 2
    waited = {key: value for key, value in _windows(buffer).items() if key[0] in (2.0, 3.0)}
    assert [window[1] for window in waited.values()] == [4.0, 4.0]  # bootstrapped at row 4
    assert [window[3] for window in waited.values()] == [GAMMA**2, GAMMA]


def test_a_pickled_buffer_goes_on_joining_its_streams() -> None:
    rows = _steps(rows=2, steps=40, seed=1)
    whole, restored = ExperienceReplayBuffer(500, n_step=3), ExperienceReplayBuffer(500, n_step=3)
    segments = _segments(rows, 6)
    for i, segment in enumerate(segments):
        whole.put(segment)
        restored.put(segment)
        if i == 2:
            restored = pickle.loads(pickle.dumps(restored))
    assert _windows(restored) == _windows(whole)


def test_stream_numbers_of_the_wrong_shape_are_one_line() -> None:
    segment = _segments(_steps(rows=2, steps=4, seed=0), 4)[0]
    with pytest.raises(ValueError, match="stream: 2; give every field the same number of rows"):
        segment.stream = torch.tensor([3, 4])  # one number per column, not per row and column
    segment.__dict__["stream"] = torch.tensor([3, 4])  # (behind its back: the buffer's check)
    with pytest.raises(ValueError, match=r"stream has shape \(2,\); it numbers each column"):
        ExperienceReplayBuffer(100, n_step=2).put(segment)


def test_invalid_n() -> None:
    with pytest.raises(ValueError, match="n_step must be"):
        ExperienceReplayBuffer(10, n_step=0)


@pytest.mark.parametrize("cut", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_the_windows_of_numpy_rows_are_those_of_tensors(n: int, cut: bool) -> None:
    """``n_step_windows`` cuts NumPy rows (the Atari frame ring's) as it cuts tensors."""
    rng = np.random.default_rng(n)
    for _ in range(20):
        ends = rng.random((9, 3, 2)) < 0.25
        rows = {"obs": rng.standard_normal((9, 3, 2)), "done": ends[..., 0],
                "truncated": ends[..., 1] & ~ends[..., 0]}
        start = rng.integers(0, 3, 3)
        ours, waiting = n_step_windows(rows, start, n, cut)
        theirs, expected = n_step_windows({key: torch.as_tensor(value)
                                           for key, value in rows.items()},
                                          torch.as_tensor(start), n, cut)
        assert isinstance(ours["obs"], np.ndarray) and len(ours["obs"]) > 0
        assert np.array_equal(waiting, expected.numpy())
        for key, value in theirs.items():
            assert np.array_equal(ours[key], value.numpy()), key


def test_the_window_fields_and_the_segment_rows_have_two_names() -> None:
    """``store.window_rows`` (the fields ``n_step_windows`` reads) and
    ``segments.segment_rows`` (the rows ``SegmentBuffer.write`` takes) were both
    ``segment_rows``: one public name for two jobs."""
    from looprl.memory import segments, store

    assert "segment_rows" not in store.__all__ and not hasattr(store, "segment_rows")
    assert "segment_rows" in segments.__all__
    sample = SampleBatch(obs=torch.zeros(3, 2), action=torch.zeros(3), reward=torch.ones(3),
                         done=torch.zeros(3), truncated=torch.zeros(3))
    rows = store.window_rows(sample, sample.obs)
    assert sorted(rows) == ["action", "done", "obs", "reward", "truncated"]
    assert rows["done"].dtype == torch.bool


def test_leaves_takes_a_namedarray_or_one_array() -> None:
    """``segments.leaves``: a ``NamedArray``'s arrays in field order (nested fields flattened,
    ``None`` s left out); one array is ``[it]`` (the windows' and ``nbytes``' one path)."""
    from looprl.core.namedarray import NamedArray
    from looprl.memory.segments import leaves

    a, b, c = torch.zeros(2), torch.ones(2), torch.full((2,), 2.0)
    assert leaves(NamedArray(x=a, y=NamedArray(z=b, w=None), v=c)) == [a, b, c]
    assert leaves(a) == [a] and leaves(None) == []
