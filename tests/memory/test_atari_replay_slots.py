"""AtariReplayBuffer's slots: a stream's segments go on from its last state wherever it is in
the ring (each frame written once, the transitions waiting for their n-step windows included),
even when streams take turns, so the ring holds about as many transitions as it has slots;
a stream starts afresh (a stack of frames) only where it cannot go on (its actor restarted,
its frames overwritten, an empty restored copy). Every transition held is checked against the
naive reference of ``test_atari_replay_samples``."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from tests.memory.test_atari_replay import GAMMA, _column, _frames, _ready, _segment, _stream
from tests.memory.test_atari_replay_samples import _Reference, _Samples

from looprl.core import SampleBatch, State
from looprl.core.namedarray import recursive_apply
from looprl.memory import AtariReplayBuffer, PrioritizedAtariReplayBuffer, SegmentBuffer
from looprl.memory.replay import replay_contents_saved

STACK = 4


def _collected(steps: int, seed: int, streams: int = 1, length: int = 4,
               lives_only: bool = False) -> tuple[list[SampleBatch], dict[str, int]]:
    """``streams`` streams of ``_stream`` steps cut into segments by the local collector's
    ``SegmentBuffer`` (``length`` transitions each, one segment per ``segments()`` call),
    and what they hold: ``transitions`` (steps out of a state that ends no episode),
    ``ends`` (agent episodes ended, and the next one's first transition held) and ``resets``
    (those whose frames start afresh). ``lives_only``: every episode end is a lost life (the
    frames go on)."""
    played = [_stream(steps, seed + s, first_frame=2000 * s) for s in range(streams)]
    if lives_only:
        played = [_lives_only(p, first_frame=30_000 + 5000 * s) for s, p in enumerate(played)]
    buffer, out = SegmentBuffer(length, streams), []
    counts = {"transitions": 0, "ends": 0, "resets": 0}
    last = length * ((steps - 1) // length)  # the segments' last row
    for t in range(steps):
        states = [p[t][2] for p in played]
        terminal = np.array([bool(s.done) and float(s.mask) == 0 for s in states])
        ended = np.array([bool(s.done) for s in states])
        buffer.write(None, SampleBatch(
            obs=np.stack([s.observation.numpy() for s in states]),
            action=np.array([1000 * i + t for i in range(streams)]),
            reward=np.array([float(s.reward) for s in states], dtype=np.float32),
            done=terminal, truncated=ended & ~terminal), ended)
        out += [recursive_apply(segment, torch.as_tensor) for segment in buffer.segments()]
        if t < last:
            counts["transitions"] += int((~ended).sum())
        if t < last - 1:  # (no transition out of the last row's state)
            counts["ends"] += int(ended.sum())
            counts["resets"] += sum(not torch.equal(s.observation[1:], n.observation[:-1])
                                    for s, n in ((p[t][2], p[t + 1][2]) for p in played)
                                    if s.done)
    return out, counts


def _lives_only(played: list[tuple], first_frame: int = 30_000) -> list[tuple]:
    """``_stream``'s steps with every reset made a lost life: the frames go on (no reset)."""
    out, previous, stack, counter = [], None, None, first_frame
    for _, action, state in played:
        if stack is None:
            stack = state.observation
        else:
            counter += 1
            frame = torch.tensor([[counter % 256, counter // 256]], dtype=torch.uint8)
            stack = torch.cat([stack[1:], frame[None]])
        mask = float(state.mask) if previous is not None else 1.0
        state = State(stack, reward=float(state.reward), done=bool(state.done), mask=mask)
        out.append((previous, action, state))
        previous = state
    return out


def _slots(buffer: AtariReplayBuffer) -> int:
    """The slots written (before the ring wraps round)."""
    assert buffer._filled == buffer._pos < buffer.size
    return buffer._filled


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_one_stream_writes_each_frame_once(kind: type, n: int) -> None:
    """One env copy's segments of 4 transitions (a DQN preset's; Rainbow's n = 3 carries two
    waiting transitions from one to the next): a slot per transition, after the first state's
    frames (before: about two per transition)."""
    segments, counts = _collected(600, seed=n, lives_only=True)
    buffer, reference = kind(5000, n_step=n), _Reference(n)
    for segment in segments:
        buffer.put(segment)
        reference.put(segment)
    assert counts["resets"] == 0 and counts["ends"] > 30
    # each lost life: one slot for the final state (it starts no transition) and one for the
    # next life's first state (its older frames are the ring's newest)
    assert _slots(buffer) == STACK + counts["transitions"] + counts["ends"]
    _Samples(buffer, reference).check()
    windows, _ = reference.windows()
    assert len(buffer) == len(windows) > counts["transitions"] - n


@pytest.mark.parametrize("n", [1, 3])
def test_resets_cost_a_stack_of_fresh_frames(n: int) -> None:
    """Episodes that start afresh (a reset: new frames) write their first state's frames."""
    segments, counts = _collected(600, seed=10 + n)
    buffer, reference = AtariReplayBuffer(5000, n_step=n), _Reference(n)
    for segment in segments:
        buffer.put(segment)
        reference.put(segment)
    assert counts["resets"] > 10
    assert _slots(buffer) == (STACK + counts["transitions"] + counts["ends"]
                              + (STACK - 1) * counts["resets"])
    _Samples(buffer, reference).check()


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("turn", [1, 2, 5])
def test_streams_taking_turns_write_each_frame_once(turn: int, n: int) -> None:
    """Two streams whose segments come in turns of ``turn`` puts of one column (or, for
    ``turn`` 1, both columns in each put): at the start of a turn a stream goes on from its
    last state, the transitions waiting for their windows (``n - 1``) with it, as one stream
    does: a slot per transition, its first stack and a reset's, one per episode end (before
    links, it wrote its last state's frames and waiting transitions again at each turn)."""
    segments, counts = _collected(400, seed=n + turn, streams=2)
    puts = ([s] for s in segments) if turn == 1 else (
        [segment[:, [s]] for segment in segments[i : i + turn]]
        for i in range(0, len(segments), turn) for s in range(2))
    buffer, reference = AtariReplayBuffer(5000, n_step=n), _Reference(n)
    for run in puts:
        for segment in run:
            buffer.put(segment)
            reference.put(segment)
    assert counts["ends"] > counts["resets"] > 20  # (lost lives too)
    assert _slots(buffer) == (2 * STACK + counts["transitions"] + counts["ends"]
                              + (STACK - 1) * counts["resets"])
    _Samples(buffer, reference).check()


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_four_streams_in_turns_fill_a_ring_with_a_transition_per_slot(kind: type, n: int) -> None:
    """Four streams' segments, one column per put in turns, wrap a 200-slot ring 14 times:
    every frame is written once (a slot per transition, each stream's first stack, one per
    episode end and a stack per reset), the ring holds the newest transitions of each stream,
    each the reference's (about 0.7 per slot; before links, under 0.45); draws too."""
    size = 200
    segments, counts = _collected(600, seed=40 + n, streams=4)
    buffer, reference = kind(size, n_step=n), _Reference(n)
    samples, held = _Samples(buffer, reference), []
    for i, segment in enumerate(segments):
        for s in range(4):
            buffer.put(segment[:, [s]])
            reference.put(segment[:, [s]])
            if buffer._written > size:
                held.append(len(buffer))
            if (4 * i + s) % 23 == 0:
                samples.check()
    samples.check()
    assert buffer._written == (counts["transitions"] + 4 * STACK + counts["ends"]
                               + (STACK - 1) * counts["resets"]) > 14 * size
    assert sum(held) / len(held) > 0.6 * size


@pytest.mark.parametrize("frames", [42, 43, 46, 47])
def test_a_stream_goes_on_while_its_frames_are_there(frames: int) -> None:
    """Stream 0 writes 9 frames (its first stack, then 5 transitions, 2 of them waiting for
    their windows), stream 1 ``frames`` more (its newest the same as stream 0's 6th), then
    stream 0 2 transitions on from its last state, while its frames are all there (the
    oldest, its 6th, written 50 before): after 46, not 47 (then a new stack, though the
    frame there is the same); its waiting transitions ready while theirs are: both after
    42, the second (its 5th frame, 50 writes before) after 43."""
    size, n = 50, 3
    states = [State(_frames(1 + t), reward=1.0) for t in range(8)]
    first = 7 - frames  # (stream 1's newest frame: 6, stream 0's 6th)
    other = [State(_stack(*((first + t + i) % 256 for i in range(STACK))))
             for t in range(frames - STACK + 1)]
    buffer, reference = AtariReplayBuffer(size, n_step=n), _Reference(n)
    for segment in (_segment([_column(states[:6], 0)], [0]), _segment([_column(other, 50)], [1]),
                    _segment([_column(states[5:], 5)], [0])):
        buffer.put(segment)
        reference.put(segment)
    assert buffer._written == 9 + frames + 2 + (STACK if frames > 46 else 0)
    held = {3, 4} & set(_windows(buffer))
    assert held == ({3, 4} if frames == 42 else {4} if frames == 43 else set())
    _Samples(buffer, reference).check()


def test_a_state_is_gone_on_from_once() -> None:
    """A segment without stream numbers whose first state's older frames are the newest of
    stream 0's last state (the ring's newest) goes on from it: stream 0's next segment, which
    starts with that state, starts afresh (a stack of frames): a state has one next state,
    through which writing a frame invalidates the transitions that needed it (checked as
    other frames wrap the ring)."""
    size = 40
    states = [State(_frames(1 + t), reward=1.0) for t in range(10)]
    other = [State(_frames(100 + t)) for t in range(61)]
    cut = _segment([_column(states[6:], 10)], [0])
    cut.stream = None
    buffer, reference = AtariReplayBuffer(size), _Reference(1)
    samples = _Samples(buffer, reference)
    for i, segment in enumerate([_segment([_column(states[:6], 0)], [0]), cut,
                                 _segment([_column(states[5:9], 5)], [0])]
                                + [_segment([_column(other[t : t + 7], 50 + t)], [1])
                                   for t in range(0, 60, 6)]):
        buffer.put(segment)
        reference.put(segment)
        if i == 2:
            assert _slots(buffer) == 9 + (1 + 3) + (STACK + 3)
        samples.check()


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_a_full_ring_holds_a_transition_per_slot_and_the_newest_ones(kind: type, n: int) -> None:
    """One stream without episode ends fills a 50-slot ring many times over, going on in place
    across the wrap round: after each put the ring holds the newest ``50 - 4 - n``
    transitions (every slot but the oldest stack's and the windows waiting), each the
    reference's, no stack mixing frames of overwritten ones; draws too."""
    size = 50
    segments, _ = _collected(400, seed=30 + n, lives_only=True)
    segments = [_no_ends(segment) for segment in segments]
    buffer, reference = kind(size, n_step=n), _Reference(n)
    samples = _Samples(buffer, reference)
    for i, segment in enumerate(segments):
        buffer.put(segment)
        reference.put(segment)
        if STACK + 4 * (i + 1) >= size:  # every slot but the oldest stack's, less the newest
            assert len(buffer) == size - (STACK - 1) - n  # state's n - 1 waiting windows
        if i % 5 == 0:
            samples.check()
    assert buffer._filled == size and buffer.skipped == 0
    assert buffer._pos == (STACK + 4 * len(segments)) % size  # each frame once, 8 wraps


def _no_ends(segment: SampleBatch) -> SampleBatch:
    segment.done[:] = False
    segment.truncated[:] = False
    return segment


@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_a_restored_copy_goes_on(kind: type) -> None:
    """A pickled copy with its contents goes on from its stream's last state, as the buffer
    itself; one pickled empty (``replay_contents_saved(False)``) starts afresh, its first
    column a new sequence; a copy of a buffer pickled before links writes its stream's last
    state and waiting transitions again, as that code did."""
    segments, _ = _collected(120, seed=2, lives_only=True)
    whole = kind(1000, n_step=3)
    for segment in segments[:10]:
        whole.put(segment)
    restored = pickle.loads(pickle.dumps(whole))
    with replay_contents_saved(False):
        empty = pickle.loads(pickle.dumps(whole))
    waiting = len(whole._carry[0]) - 1 if whole._carry else 0
    assert waiting == 2 and len(empty) == 0 and not empty._carry
    old = _pickled_before_links(whole, {0: {key: getattr(segments[9], key)[-waiting - 1 :, 0]
                                            for key in ("obs", "action", "reward", "done",
                                                        "truncated")}})
    before = _slots(whole)
    references = [_Reference(3), _Reference(3)]  # (all segments; since the restore)
    for i, segment in enumerate(segments):
        if i >= 10:
            for buffer in (whole, restored, empty, old):
                buffer.put(segment)
            references[1].put(segment)
        references[0].put(segment)
    written = _slots(whole) - before
    assert _slots(restored) == _slots(whole) and _slots(empty) == written + STACK
    assert _slots(old) == _slots(whole) + STACK + waiting
    for buffer in (whole, restored, old):
        _Samples(buffer, references[0]).check()
    _Samples(empty, references[1]).check()
    assert _windows(old) == _windows(restored) == _windows(whole)


@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_a_storing_buffer_pickled_before_links_goes_on(kind: type) -> None:
    """A buffer that ``store`` fills, pickled before links in the middle of a sequence (rows
    whose windows wait), goes on with it as the buffer itself."""
    played = _lives_only(_stream(300, seed=6))
    buffer, reference = kind(1000, n_step=3), _Reference(3)
    for t, (previous, action, state) in enumerate(played):
        if t == 150:
            assert len(buffer._open) > 3  # (rows not flushed, two of them waiting)
            old = _pickled_before_links(buffer, {})
            old._last = buffer._last  # (the caller's state, pickled with it)
        for target in (buffer, reference) if t < 150 else (buffer, reference, old):
            target.store(previous, action, state)
    assert _slots(old) == _slots(buffer) and _windows(old) == _windows(buffer)
    _Samples(old, reference).check()


def _pickled_before_links(buffer: AtariReplayBuffer, carry: dict[int, dict]) -> AtariReplayBuffer:
    """A copy of ``buffer`` as the code before links pickled it (for one stream, the same
    slots, each stack in those up to its newest): no links, ``store``'s rows without their
    oldest, each stream's rows from its first waiting transition on as segment columns."""
    state = buffer.__getstate__()
    for key in ("links", "nexts", "_written"):
        del state[key]
    state["_open"] = state["_open"] and [[k, d, t] for k, _, d, t in state["_open"]]
    state["_carry"] = {s: {**column, "skip": torch.zeros_like(column["done"])}
                       for s, column in carry.items()}
    copy = type(buffer).__new__(type(buffer))
    copy.__setstate__(pickle.loads(pickle.dumps(state)))
    return copy


def _windows(buffer: AtariReplayBuffer) -> dict[int, tuple]:
    states, actions, returns, next_states, _ = _ready(buffer)
    return {int(a): (states.observation[i].tolist(), float(returns[i]),
                     next_states.observation[i].tolist(), float(next_states.mask[i]))
            for i, a in enumerate(actions)}


def test_a_segment_whose_first_step_does_not_go_on_skips_it() -> None:
    """The first row of a stream's next segment does not go on into its second (frames that do
    not shift by one): that transition is skipped, and the windows waiting end at the first
    row, bootstrapped as truncated (before, it was written with the wrong next frames)."""
    first = [State(_frames(1))] + [State(_frames(1 + t), reward=float(t)) for t in range(1, 5)]
    second = [first[-1]] + [State(_frames(90 + t), reward=1.0) for t in range(4)]
    for in_place in (True, False):
        buffer = AtariReplayBuffer(100, n_step=3)
        buffer.put(_segment([_column(first, 0)], [7]))
        if not in_place:  # another stream writes in between
            buffer.put(_segment([_column([State(_frames(60 + t)) for t in range(3)], 50)], [8]))
        buffer.put(_segment([_column(second, 10)], [7]))
        _, actions, returns, next_states, _ = _ready(buffer)
        rows = {a: i for i, a in enumerate(actions.tolist())}
        assert buffer.skipped == 1 and 10 not in rows and 11 in rows
        waited = [rows[2], rows[3]]
        assert returns[waited].tolist() == [3.0 + GAMMA * 4.0, 4.0]
        assert all(torch.equal(next_states.observation[i], first[4].observation) for i in waited)
        assert next_states.done[waited].tolist() == [True, True]
        assert next_states.mask[waited].tolist() == [1.0, 1.0]


def test_store_writes_a_slot_per_step_and_per_lost_life() -> None:
    """``store`` (one transition at a time, ALL's agents) goes on in place from step to step;
    a lost life's next state takes the ring's newest frames as its older ones."""
    played = _lives_only(_stream(500, seed=4))
    buffer, reference = AtariReplayBuffer(5000, n_step=3), _Reference(3)
    for previous, action, state in played:
        buffer.store(previous, action, state)
        reference.store(previous, action, state)
    transitions = sum(previous is not None and not previous.done for previous, _, _ in played)
    ends = sum(bool(state.done) for _, _, state in played[:-1])
    assert ends > 30 and _slots(buffer) == STACK + transitions + ends
    _Samples(buffer, reference).check()


def test_store_between_puts_leaves_a_stream_going_on() -> None:
    """Another writer (``store``) between two segments of a stream: the stream goes on from
    its last state, its waiting transitions with it (before links, it wrote them again);
    every window held is the reference's, ``store``'s cut by the next ``put``."""
    segments, counts = _collected(60, seed=5, lives_only=True)
    buffer, reference = AtariReplayBuffer(1000, n_step=3), _Reference(3)
    other = [State(_frames(100 + t)[:, :1]) for t in range(3)]
    for i, segment in enumerate(segments):
        buffer.put(segment)
        reference.put(segment)
        if i == 4:
            before = _slots(buffer)
            for t in range(2):
                buffer.store(other[t], 900 + t, other[t + 1])
                reference.store(other[t], 900 + t, other[t + 1])
            assert _slots(buffer) == before + STACK + 2
            reference.open.pop("store").closed = True  # (the next put ends store's sequence)
    assert _slots(buffer) == STACK + counts["transitions"] + counts["ends"] + STACK + 2
    windows, _ = reference.windows()
    assert {900, 901} <= set(windows) == set(_windows(buffer))
    _Samples(buffer, reference).check()


def _stack(*values: int) -> torch.Tensor:
    """A stack of frames filled with ``values``."""
    return torch.tensor(values, dtype=torch.uint8).view(-1, 1, 1).expand(-1, 2, 2).clone()


def test_a_first_state_takes_the_ring_frames_only_where_all_its_older_ones_are() -> None:
    """A new sequence's first state whose frame before its newest is the ring's newest, but
    not the ones before, writes all its frames; one whose older frames are the ring's newest
    writes its newest only. The stacks drawn are the states stored."""
    buffer = AtariReplayBuffer(100)
    pairs = [[State(_stack(1, 2, 3, 4)), State(_stack(2, 3, 4, 5), done=True)],
             [State(_stack(7, 8, 5, 9)), State(_stack(8, 5, 9, 10))],  # only 5 is the ring's
             [State(_stack(5, 9, 10, 12)), State(_stack(9, 10, 12, 13))]]  # all but 12 are
    for action, (state, next_state) in enumerate(pairs):
        buffer.store(state, action, next_state)  # (a new sequence each: another state)
    assert _slots(buffer) == 5 + 5 + 2
    states, actions, _, next_states, _ = _ready(buffer)
    assert actions.tolist() == [0, 1, 2]
    for row, (state, next_state) in enumerate(pairs):
        assert torch.equal(states.observation[row], state.observation)
        assert torch.equal(next_states.observation[row], next_state.observation)
