"""Tests of AtariReplayBuffer: frames stored once, stacks rebuilt exactly at sample time;
n-step returns from the ring and PrioritizedAtariReplayBuffer."""

from __future__ import annotations

import pickle
import random
from typing import Any

import numpy as np
import pytest
import torch
from tests.helpers import fail_allocations

from looprl.approximation import LinearScheduler
from looprl.core import SampleBatch, State, StateArray
from looprl.environments.bodies import EpisodicLife
from looprl.memory import (
    AtariReplayBuffer,
    ExperienceReplayBuffer,
    PrioritizedAtariReplayBuffer,
    importance_weights,
)
from looprl.memory.replay import transitions

FRAME = 84 * 84
GAMMA = 0.5


def _play(buffer: AtariReplayBuffer, steps: int) -> dict[int, tuple]:
    """Drive ``buffer`` like DQN.act does, through the EpisodicLife body, on Breakout.

    The action stored for step ``i`` is ``i`` (the env gets ``i % 4``), so sampled actions
    name the transitions; returns what each stored transition must contain.
    """
    from looprl.environments.atari import AtariEnvironment

    env = AtariEnvironment("Breakout", seed=0, max_episode_frames=600)  # truncate at 150 steps
    to_agent = EpisodicLife(None).process_state
    expected: dict[int, tuple] = {}
    previous, previous_action = None, None
    state = env.reset()
    for i in range(steps):
        seen = to_agent(state)
        buffer.store(previous, previous_action, seen)
        if previous is not None and not previous.done:
            expected[previous_action] = (
                previous.observation, seen.reward, seen.observation, seen.mask, seen.done
            )
        previous, previous_action = seen, i
        state = env.reset() if state.done else env.step(i % 4)
    return expected


def test_stacked_observations_are_rebuilt_exactly_across_episodes() -> None:
    pytest.importorskip("ale_py")
    buffer = AtariReplayBuffer(350)
    expected = _play(buffer, 1000)  # several lives, game overs, truncations, wrap-around
    states, actions, rewards, next_states, weights = _ready(buffer)
    assert states.observation.dtype == torch.uint8 and states.observation.shape[1:] == (4, 84, 84)
    ids = actions.tolist()
    assert len(ids) == len(buffer) > 300
    for row, i in enumerate(ids):
        observation, reward, next_observation, mask, done = expected[i]
        assert torch.equal(states.observation[row], observation)
        assert torch.equal(next_states.observation[row], next_observation)
        assert rewards[row] == reward and next_states.reward[row] == reward
        assert next_states.mask[row] == mask and next_states.done[row] == done
    # the buffer holds exactly the newest transitions: nothing old, nothing missing
    assert set(ids) == {i for i in expected if i >= min(ids)}
    done = next_states.done
    assert done.any() and (next_states.mask[done] == 0).any()  # lost lives / game overs
    assert (next_states.mask[done] == 1).any()  # time-limit truncations keep bootstrapping
    assert torch.equal(weights, torch.ones(len(ids)))


class _Both:
    """``store`` into each of ``buffers``."""

    def __init__(self, *buffers: Any):
        self.buffers = buffers

    def store(self, *args: Any) -> None:
        for buffer in self.buffers:
            buffer.store(*args)


@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_n_step_windows_of_a_recorded_game_are_a_plain_replays_of_its_stacks(kind: type) -> None:
    """A recorded Breakout game (lost lives, game overs, truncations): the ring's 3-step
    transitions are those ``ExperienceReplayBuffer`` keeps of the stacked observations, the
    newest ones of them, each once."""
    pytest.importorskip("ale_py")
    ring, plain = kind(300, n_step=3), ExperienceReplayBuffer(1000, n_step=3)
    _play(_Both(ring, plain), 700)  # (wraps round twice)
    ours = transitions(ring.gather(torch.nonzero(ring.ready).flatten()), GAMMA)
    theirs = transitions(plain.gather(torch.arange(len(plain))), GAMMA)
    ids, row_of = ours[1].tolist(), {i: row for row, i in enumerate(theirs[1].tolist())}
    assert len(set(ids)) == len(ids) == len(ring) > 250
    assert set(ids) == {i for i in row_of if i >= min(ids)}
    rows = torch.tensor([row_of[i] for i in ids])
    assert torch.equal(ours[0].observation, theirs[0].observation[rows])
    assert torch.allclose(ours[2], theirs[2][rows])
    for key in ("observation", "mask", "done", "discount"):
        assert torch.allclose(ours[3][key].double(), theirs[3][key][rows].double()), key
    assert not ours[3].mask.all() and (ours[3].done & (ours[3].mask == 1)).any()


def _frames(first: int, count: int = 4) -> torch.Tensor:
    """A stack whose frames are filled with first, first + 1, ..."""
    values = torch.arange(first, first + count, dtype=torch.uint8)
    return values.view(count, 1, 1).expand(count, 2, 2).clone()


def test_episode_starts_keep_their_own_padding_and_no_transition_crosses_episodes() -> None:
    buffer = AtariReplayBuffer(20)
    a = [State(_frames(1)), State(_frames(2)), State(_frames(3), done=True)]
    b = [State(_frames(50)), State(_frames(51))]  # a new episode with different padding
    buffer.store(None, None, a[0])
    buffer.store(a[0], 0, a[1])
    buffer.store(a[1], 1, a[2])
    buffer.store(a[2], 2, b[0])  # out of a done state: skipped
    buffer.store(b[0], 3, b[1])
    states, actions, _, next_states, _ = _ready(buffer)
    assert actions.tolist() == [0, 1, 3]
    assert torch.equal(states.observation[2], b[0].observation)
    assert torch.equal(next_states.observation[1], a[2].observation)
    assert next_states.done.tolist() == [False, True, False]
    assert next_states.mask.tolist() == [1.0, 0.0, 1.0]
    assert buffer._pos == 4 + 2 + 4 + 1  # frames written: 4 + 2, then 4 + 1


def test_discontinuous_frames_are_skipped() -> None:
    buffer = AtariReplayBuffer(20)
    first, second = State(_frames(1)), State(_frames(2))
    buffer.store(first, 0, second)
    buffer.store(second, 1, State(_frames(9)))  # e.g. a reset in mid-episode
    assert len(buffer) == 1 and buffer.skipped == 1


def test_memory_footprint_of_a_million_transitions() -> None:
    nbytes = []
    for size in (1000, 3000):
        buffer = AtariReplayBuffer(size)
        buffer.store(State(torch.zeros(4, 84, 84, dtype=torch.uint8)), torch.tensor(0),
                     State(torch.zeros(4, 84, 84, dtype=torch.uint8)))
        nbytes.append(buffer.nbytes)
    per_transition = nbytes[0] / 1000
    assert nbytes[1] == 3 * nbytes[0]  # all of it allocated at once, per slot
    # a frame, action (int64), reward, state_reward, mask, done, steps, links (int32), next
    assert per_transition == FRAME + 8 + 4 + 4 + 4 + 1 + 2 + 4 * 4 + 4
    million = 1_000_000 * per_transition
    naive = 1_000_000 * 2 * 4 * FRAME  # observation and next observation, 4 frames each
    assert million < 7.1e9 and naive / million > 7.9


def test_sampling_is_reproducible_and_validated() -> None:
    with pytest.raises(ValueError):
        AtariReplayBuffer(1)
    buffer = AtariReplayBuffer(50, generator=torch.Generator().manual_seed(0))
    with pytest.raises(RuntimeError):
        buffer.sample(4)
    states = [State(_frames(i)) for i in range(30)]
    for i in range(29):
        buffer.store(states[i], i, states[i + 1])
    first = buffer.sample(64)[1]
    buffer.generator.manual_seed(0)
    assert torch.equal(buffer.sample(64)[1], first)
    assert set(first.tolist()) <= set(range(29))
    with pytest.raises(TypeError):
        buffer.store(StateArray({"observation": _frames(0)[None]}, (1,)), 0, states[0])


def test_a_ring_too_small_for_its_stacks_says_the_size_it_needs() -> None:
    """Was: "Replay size 5 is too small for stacks of 4 and 1-step returns" (which size? what
    to give?), from ``looprl train atari.dqn Pong replay_buffer_size=5``."""
    for n, needed in ((1, 6), (3, 8)):
        buffer = AtariReplayBuffer(needed - 1, n_step=n)
        with pytest.raises(ValueError, match=rf"^Replay size {needed - 1} is too small for stacks "
                           rf"of 4 and {n}-step returns: give it at least {needed} \(a "
                           r"preset's replay_buffer_size\)$"):
            buffer.store(State(_frames(0)), 0, State(_frames(1)))
        buffer = AtariReplayBuffer(needed, n_step=n)
        buffer.store(State(_frames(0)), 0, State(_frames(1)))


def test_n_step_windows_longer_than_int16_are_one_line_at_the_first_store() -> None:
    """Was: an OverflowError ("Python integer 32768 out of bounds for int16") once 32768
    steps were stored and the first window was complete."""
    buffer = AtariReplayBuffer(40_000, n_step=2**15)
    with pytest.raises(ValueError, match=r"^AtariReplayBuffer keeps windows of at most 32767 "
                                         r"steps \(int16\), got n_step=32768: lower it$"):
        buffer.store(State(_frames(0)), 0, State(_frames(1)))
    AtariReplayBuffer(40_000, n_step=2**15 - 1).store(State(_frames(0)), 0, State(_frames(1)))


# -- n-step returns and prioritized replay ------------------------------------------------




def _stream(steps: int, seed: int, first_frame: int = 0) -> list[tuple]:
    """``(previous, action, state)`` as ``DQN.act`` stores them, action ``i`` at step ``i``:
    random rewards, terminations (mask 0), truncations (mask 1) and EpisodicLife-like life
    losses (done, mask 0, but the frames go on into the next agent episode). Every frame is
    unique: a counter (from ``first_frame``) written in two bytes."""
    rng = random.Random(seed)
    counter = first_frame

    def frame() -> torch.Tensor:
        nonlocal counter
        counter += 1
        return torch.tensor([[counter % 256, counter // 256]], dtype=torch.uint8)

    stack = torch.stack([frame() for _ in range(4)])
    out, previous, life_lost = [], None, False
    for i in range(steps):
        if previous is None or previous.done:
            if life_lost:  # the game goes on: the next frame starts the agent's episode
                stack = torch.cat([stack[1:], frame()[None]])
            else:  # a reset: fresh frames
                stack = torch.stack([frame() for _ in range(4)])
            state = State(stack)
        else:
            stack = torch.cat([stack[1:], frame()[None]])
            event = rng.random()
            done, life_lost = event < 0.1, 0.07 <= event < 0.1
            mask = float(not done or 0.04 <= event < 0.07)  # truncations keep mask 1
            state = State(stack, reward=float(rng.choice([0, 1, -1, 3])), done=done, mask=mask)
        out.append((previous, i - 1, state))
        previous = state
    return out


def _reference(records: dict[int, tuple], i: int, n: int) -> tuple | None:
    """The n-step transition of step ``i`` computed by hand from the stream (``None`` while
    its window is incomplete)."""
    ret, m, j = 0.0, 0, i
    while True:
        state = records[j][1]
        ret += GAMMA**m * state.reward
        m += 1
        if state.done or m == n:
            break
        if j + 1 not in records:
            return None  # pending
        j += 1
    return records[i][0].observation, ret, state.observation, state.mask, state.done, GAMMA**m


def _ready(buffer: AtariReplayBuffer):
    return transitions(buffer.gather(buffer.ready.nonzero().squeeze(-1)), GAMMA)


def _check_against_references(buffer: AtariReplayBuffer, records: dict, nstep: Any) -> None:
    """Every sampleable transition equals the hand-computed one and ``ExperienceReplayBuffer``'s;
    the buffer holds exactly the newest complete transitions."""
    n = buffer.n_step
    states, actions, rewards, next_states, _ = _ready(buffer)
    ids = actions.tolist()
    assert len(ids) == len(buffer) > 0
    complete = {i for i in records if _reference(records, i, n) is not None}
    assert set(ids) == {i for i in complete if i >= min(ids)}
    theirs = transitions(nstep.gather(torch.arange(len(nstep))), GAMMA)
    row_of = {i: row for row, i in enumerate(theirs[1].tolist())}
    assert complete == set(row_of)
    discounts = next_states["discount"]
    for row, i in enumerate(ids):
        observation, ret, next_observation, mask, done, discount = _reference(records, i, n)
        assert torch.equal(states.observation[row], observation)
        assert torch.equal(next_states.observation[row], next_observation)
        assert rewards[row] == pytest.approx(ret) and next_states.reward[row] == rewards[row]
        assert next_states.mask[row] == mask and next_states.done[row] == done
        assert discounts[row] == pytest.approx(discount)
        other = row_of[i]
        assert torch.equal(theirs[0].observation[other], observation)
        assert torch.equal(theirs[3].observation[other], next_observation)
        assert rewards[row] == pytest.approx(theirs[2][other].item())
        assert next_states.mask[row] == theirs[3].mask[other]
        assert discounts[row] == pytest.approx(theirs[3]["discount"][other].item())


@pytest.mark.parametrize("n_steps", [1, 3])
@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_n_step_transitions_match_hand_computed_ones_and_nstep_replay(
    kind: type, n_steps: int
) -> None:
    steps = 500
    buffer = kind(60, n_step=n_steps)  # wraps about 9 times
    nstep = ExperienceReplayBuffer(steps, n_step=n_steps)
    records: dict[int, tuple] = {}
    waited = 0
    for t, (previous, action, state) in enumerate(_stream(steps, seed=n_steps)):
        buffer.store(previous, action, state)
        nstep.store(previous, action, state)
        if previous is not None and not previous.done:
            records[action] = (previous, state)
        if t % 23 == 22:
            _check_against_references(buffer, records, nstep)
            waited += sum(_reference(records, i, n_steps) is None for i in records)  # pending
            if kind is PrioritizedAtariReplayBuffer:  # exactly the ready slots have priority
                buffer.sample_indices(1)
                assert np.array_equal(buffer.tree[np.arange(60)] > 0, buffer.ready.numpy())
    dones = [state.done for _, state in records.values()]
    assert sum(dones) > 20 and len(records) > 400  # many episodes
    assert (waited > 0) == (n_steps > 1)  # (n = 1: every stored transition is ready at once)


def test_n_step_returns_by_hand_and_pending_transitions() -> None:
    buffer = AtariReplayBuffer(40, n_step=3)
    # frames 1.. shift by one per step; rewards 1, 2, 4, 8; the 4th step terminates
    states = [State(_frames(1))] + [State(_frames(1 + t), reward=2.0 ** (t - 1)) for t in (1, 2, 3)]
    states.append(State(_frames(5), reward=8.0, done=True))
    buffer.store(None, None, states[0])
    for t in range(3):
        buffer.store(states[t], t, states[t + 1])
        assert len(buffer) == max(0, t - 1)  # t = 0 is complete once 3 steps are stored
    # only the complete transition is drawn
    assert transitions(buffer.sample_batch(4), GAMMA)[1].tolist() == [0] * 4
    buffer.store(states[3], 3, states[4])  # the termination completes every window
    _, actions, returns, next_states, _ = _ready(buffer)
    assert actions.tolist() == [0, 1, 2, 3]
    # R_0 = 1 + 0.5 * 2 + 0.25 * 4 = 3; R_1 = 2 + 0.5 * 4 + 0.25 * 8 = 6; R_2 = 8; R_3 = 8
    assert returns.tolist() == [3.0, 6.0, 8.0, 8.0]
    assert next_states["discount"].tolist() == [0.125, 0.125, 0.25, 0.5]
    assert next_states.mask.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert next_states.done.tolist() == [False, True, True, True]
    for row, last in enumerate([3, 4, 4, 4]):
        assert torch.equal(next_states.observation[row], states[last].observation)


def test_a_break_in_the_stored_sequence_ends_the_windows() -> None:
    buffer = AtariReplayBuffer(40, n_step=3)
    a = [State(_frames(1))] + [State(_frames(1 + t), reward=float(t)) for t in (1, 2)]
    buffer.store(None, None, a[0])
    buffer.store(a[0], 0, a[1])
    buffer.store(a[1], 1, a[2])
    assert len(buffer) == 0
    buffer.store(a[2], 2, State(_frames(9)))  # does not continue: skipped, ends the sequence
    assert buffer.skipped == 1
    _, actions, returns, next_states, _ = _ready(buffer)
    assert actions.tolist() == [0, 1] and returns.tolist() == [1.0 + GAMMA * 2.0, 2.0]
    assert next_states["discount"].tolist() == [GAMMA**2, GAMMA]
    # the break cuts both windows: their last state is marked truncated (bootstrap from it)
    assert next_states.done.tolist() == [True, True] and next_states.mask.tolist() == [1, 1]
    assert all(torch.equal(o, a[2].observation) for o in next_states.observation)
    # a state that is not the last stored one also starts a new sequence (new frames)
    b = [State(_frames(20)), State(_frames(21), reward=5.0), State(_frames(22), reward=7.0)]
    buffer.store(b[0], 3, b[1])
    buffer.store(State(_frames(21)), 4, b[2])  # equal frames, another state: a new sequence
    _, actions, returns, next_states, _ = _ready(buffer)
    assert actions.tolist() == [0, 1, 3] and returns[2] == 5.0
    assert torch.equal(next_states.observation[2], b[1].observation)


@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_overwritten_frames_invalidate_the_transitions_that_need_them(kind: type) -> None:
    size, n = 10, 2
    buffer = kind(size, n_step=n)
    states = [State(_frames(i)) for i in range(40)]
    buffer.store(None, None, states[0])
    for t in range(1, 30):  # one sequence: t transitions, 4 + t frames written
        buffer.store(states[t - 1], t - 1, states[t])
        # transition i needs frames i .. i + 5 (4 + 2 steps): the oldest is overwritten first
        expected = list(range(max(0, 4 + t - size), t - 1))
        assert sorted(buffer.action[buffer.ready].tolist()) == expected
        assert len(buffer) == len(expected)
        if expected:
            states_, actions, _, next_states, _ = _ready(buffer)
            for row, i in enumerate(actions.tolist()):
                assert torch.equal(states_.observation[row], states[i].observation)
                assert torch.equal(next_states.observation[row], states[i + 2].observation)
            buffer.sample_batch(8)
        if kind is PrioritizedAtariReplayBuffer and expected:
            assert np.array_equal(buffer.tree[np.arange(size)] > 0, buffer.ready.numpy())
    with pytest.raises(ValueError, match="too small"):
        AtariReplayBuffer(7, n_step=3).store(states[0], 0, states[1])
    with pytest.raises(ValueError):
        AtariReplayBuffer(10, n_step=0)


def _episode(buffer: AtariReplayBuffer, first: int, steps: int, action: int = 0) -> None:
    """One episode of ``steps`` transitions (actions ``action`` on) ending with a termination."""
    states = [State(_frames(first + t), reward=1.0, done=t == steps) for t in range(steps + 1)]
    for t in range(steps):
        buffer.store(states[t], action + t, states[t + 1])


def _frequencies(buffer: PrioritizedAtariReplayBuffer, draws: int = 200) -> np.ndarray:
    counts = np.zeros(buffer.size)
    for _ in range(draws):
        counts += np.bincount(buffer.sample_indices(64).numpy(), minlength=buffer.size)
    return counts / counts.sum()


@pytest.mark.parametrize("n_steps", [1, 3])
def test_prioritized_sampling_follows_the_priorities(n_steps: int) -> None:
    generator = torch.Generator().manual_seed(0)
    buffer = PrioritizedAtariReplayBuffer(
        40, generator=generator, n_step=n_steps, alpha=1.0, beta=1.0, epsilon=0.0
    )
    _episode(buffer, 1, 8)
    slots = buffer.ready.nonzero().squeeze(-1)
    assert len(buffer) == 8
    frequencies = _frequencies(buffer)
    assert np.allclose(frequencies[slots.numpy()], 1 / 8, atol=0.01)  # all at max priority
    assert frequencies[~buffer.ready.numpy()].sum() == 0
    buffer.gather(slots)
    priorities = torch.arange(1.0, 9.0)
    buffer.update_priorities(priorities)
    assert np.allclose(buffer.tree[slots.numpy()], priorities.numpy())
    frequencies = _frequencies(buffer)
    assert np.allclose(frequencies[slots.numpy()], priorities.numpy() / 36, atol=0.01)
    # new transitions enter at the largest priority so far
    _episode(buffer, 50, 3, action=100)
    new = buffer.ready.nonzero().squeeze(-1)[8:]
    assert len(buffer) == 11
    buffer.sample_indices(1)
    assert buffer.tree[new.numpy()].tolist() == [8.0] * 3


def test_prioritized_weights_and_alpha() -> None:
    beta = LinearScheduler(0.5, 1.0, 0, 4, name="beta")
    generator = torch.Generator().manual_seed(1)
    buffer = PrioritizedAtariReplayBuffer(40, generator=generator, alpha=0.5, beta=beta)
    _episode(buffer, 1, 10)
    index = buffer.sample_indices(8)
    buffer.gather(index)
    td = torch.linspace(-2.0, 3.0, 8)
    buffer.update_priorities(td)
    leaves = buffer.tree[index.numpy()]
    last = {k: p for k, p in zip(index.tolist(), (td.abs() + 1e-5) ** 0.5)}  # later wins
    assert np.allclose(leaves, [float(last[k]) for k in index.tolist()])
    for expected_beta in (0.625, 0.75):  # beta is read once per gather
        _, _, _, _, weights = buffer.sample(16)
        index = torch.from_numpy(buffer._last_index)
        probabilities = torch.from_numpy(buffer.tree[index.numpy()] / buffer.tree.total)
        assert torch.allclose(weights, importance_weights(probabilities, 10, expected_beta).float())
        assert weights.max() == 1.0 and weights.min() < 1.0
    with pytest.raises(RuntimeError):
        PrioritizedAtariReplayBuffer(40).update_priorities(td)


def test_prioritized_and_uniform_buffers_return_the_same_transitions() -> None:
    uniform, prioritized = AtariReplayBuffer(50), PrioritizedAtariReplayBuffer(50)
    for previous, action, state in _stream(200, seed=5):
        uniform.store(previous, action, state)
        prioritized.store(previous, action, state)
    index = uniform.sample_indices(32)
    ours, theirs = transitions(uniform.gather(index)), transitions(prioritized.gather(index))
    for a, b in zip(ours[:3], theirs[:3]):
        assert torch.equal(a.observation if isinstance(a, StateArray) else a,
                           b.observation if isinstance(b, StateArray) else b)
    assert set(ours[3]) == set(theirs[3]) == {"observation", "reward", "mask", "done"}
    assert prioritized.nbytes == uniform.nbytes + prioritized.tree.tree.nbytes


@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_a_pickled_buffer_goes_on_storing_into_its_own_storage(kind: type) -> None:
    import pickle

    buffer = kind(30)
    _episode(buffer, 1, 5)
    restored = pickle.loads(pickle.dumps(buffer))
    _episode(restored, 40, 3, action=10)  # written through the numpy views of the storage
    _, actions, rewards, next_states, _ = _ready(restored)
    assert len(restored) == 8 and actions.tolist() == [0, 1, 2, 3, 4, 10, 11, 12]
    assert rewards.tolist() == [1.0] * 8 and next_states.done.sum() == 2


def _column(states: list[State], first_action: int) -> dict[str, torch.Tensor]:
    """A segment column ``[L]`` of consecutive states, actions ``first_action`` on."""
    terminal = torch.tensor([bool(s.done) and float(s.mask) == 0 for s in states])
    ended = torch.tensor([bool(s.done) for s in states])
    return {"obs": torch.stack([s.observation for s in states]),
            "action": torch.arange(first_action, first_action + len(states)),
            "reward": torch.tensor([float(s.reward) for s in states]),
            "done": terminal, "truncated": ended & ~terminal}


def _segment(columns: list[dict[str, torch.Tensor]], streams: list[int]) -> SampleBatch:
    """``columns`` side by side, numbered ``streams``."""
    stream = torch.tensor(streams).expand(len(columns[0]["reward"]), -1)
    return SampleBatch(**{key: torch.stack([c[key] for c in columns], 1) for key in columns[0]},
                       stream=stream)


def _stream_segments(steps: int, length: int, seed: int, streams: int = 2
                     ) -> tuple[list[SampleBatch], list[list[tuple]]]:
    """``streams`` streams of ``_stream`` (frames of their own; action ``1000 s + i`` at step
    ``i`` of stream ``s``) cut as ``SegmentBuffer`` cuts them, into ``[length + 1, streams]``
    segments numbered in ``stream`` (a stream's consecutive segments share a row), and the
    steps these segments hold, per stream, as ``store`` takes them."""
    played = [_stream(steps, seed + s, first_frame=2000 * s) for s in range(streams)]
    last = length * ((steps - 1) // length)  # the segments' last row
    segments = [_segment([_column([state for _, _, state in p[t : t + length + 1]], 1000 * s + t)
                          for s, p in enumerate(played)], list(range(streams)))
                for t in range(0, last, length)]
    stored = [[(previous, 1000 * s + action, state) for previous, action, state in p[: last + 1]]
              for s, p in enumerate(played)]
    return segments, stored


def _windows(buffer: AtariReplayBuffer | ExperienceReplayBuffer) -> dict[int, tuple]:
    """Each sampleable window's transition by its action (which names it)."""
    if isinstance(buffer, AtariReplayBuffer):
        states, actions, returns, next_states, _ = _ready(buffer)
    else:
        states, actions, returns, next_states, _ = transitions(
            buffer.gather(torch.arange(len(buffer))), GAMMA)
    discount = next_states["discount"]
    windows = {int(a): (states.observation[i].tolist(), round(float(returns[i]), 5),
                        next_states.observation[i].tolist(), float(next_states.mask[i]),
                        bool(next_states.done[i]), float(discount[i]))
               for i, a in enumerate(actions)}
    assert len(windows) == len(actions) == len(buffer)  # each transition once
    return windows


@pytest.mark.parametrize("n_step", [1, 3])
@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_put_stores_segments_as_the_replay_of_the_distributed_runtime_does(
    kind: type, n_step: int
) -> None:
    """``put`` (the trainer worker's path) stores the windows ``ExperienceReplayBuffer.put``
    cuts from the same segments (one per row that is not an episode end), keeping each frame
    once."""
    buffer, reference = kind(1000, n_step=n_step), ExperienceReplayBuffer(1000, n_step=n_step)
    segments, _ = _stream_segments(150, length=16, seed=n_step)
    for segment in segments:
        assert buffer.put(segment) and reference.put(segment)
    assert buffer.skipped == 0 and len(buffer) == len(reference) > 200
    assert buffer._filled < 2 * len(buffer)  # frames, not stacks of them
    assert _windows(buffer) == _windows(reference)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("length", [1, 2, 7])
def test_put_joins_a_streams_segments_into_the_windows_store_makes(n: int, length: int) -> None:
    """The segments of streams give the windows ``ExperienceReplayBuffer.put`` joins from
    them and that storing each stream's steps one by one gives: none is cut at a segment's
    end (the waiting transitions are completed by the stream's next one)."""
    segments, steps = _stream_segments(120, length, seed=10 * n + length)
    put, reference = AtariReplayBuffer(3000, n_step=n), ExperienceReplayBuffer(3000, n_step=n)
    for segment in segments:
        put.put(segment)
        reference.put(segment)
    stored = {}
    for stream in steps:  # the local path: one sequence per stream
        buffer = AtariReplayBuffer(1000, n_step=n)
        for previous, action, state in stream:
            buffer.store(previous, action, state)
        stored.update(_windows(buffer))
    assert put.skipped == 0 and len(stored) > 150
    assert _windows(put) == _windows(reference) == stored
    cut = AtariReplayBuffer(3000, n_step=n)  # without stream numbers: cut at segment ends
    for segment in segments:
        segment.stream = None
        cut.put(segment)
    assert _windows(cut) != stored


def test_a_segment_that_does_not_continue_its_stream_ends_the_waiting_windows() -> None:
    """A restarted actor's first segment (a new episode under the same stream number) ends
    the windows its stream left waiting where they stopped, bootstrapped as truncated."""
    first = [State(_frames(1))] + [State(_frames(1 + t), reward=float(t)) for t in range(1, 5)]
    restart = [State(_frames(50 + t), reward=1.0) for t in range(5)]
    buffer, reference = AtariReplayBuffer(100, n_step=3), ExperienceReplayBuffer(100, n_step=3)
    buffer.put(_segment([_column(first, 0)], [7]))
    assert len(buffer) == 2  # the windows of rows 2 and 3 wait for rows 5 and 6
    buffer.put(_segment([_column(restart, 10)], [7]))
    assert len(buffer) == 2 + 2 + 2
    _, actions, returns, next_states, _ = _ready(buffer)
    waited = [actions.tolist().index(i) for i in (2, 3)]
    assert returns[waited].tolist() == [3.0 + GAMMA * 4.0, 4.0]
    assert all(torch.equal(next_states.observation[i], first[4].observation) for i in waited)
    assert next_states.done[waited].tolist() == [True, True]  # truncated: bootstrapped
    assert next_states.mask[waited].tolist() == [1.0, 1.0]
    assert next_states["discount"][waited].tolist() == [GAMMA**2, GAMMA]
    for column, action in ((first, 0), (restart, 10)):
        reference.put(_segment([_column(column, action)], [7]))
    assert _windows(buffer) == _windows(reference)


@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_a_pickled_buffer_goes_on_joining_its_streams(kind: type) -> None:
    segments, _ = _stream_segments(60, length=6, seed=1)
    whole, restored = kind(1000, n_step=3), kind(1000, n_step=3)
    for i, segment in enumerate(segments):
        whole.put(segment)
        restored.put(segment)
        if i == 2:
            assert restored._carry  # transitions wait for the next segments
            restored = pickle.loads(pickle.dumps(restored))
    assert _windows(restored) == _windows(whole)


def test_stream_numbers_of_the_wrong_shape_are_one_line() -> None:
    segment = _stream_segments(10, length=4, seed=0)[0][0]
    with pytest.raises(ValueError, match="stream: 2; give every field the same number of rows"):
        segment.stream = torch.tensor([3, 4])  # one number per column, not per row and column
    segment.__dict__["stream"] = torch.tensor([3, 4])  # (behind its back: the buffer's check)
    with pytest.raises(ValueError, match=r"stream has shape \(2,\); it numbers each column"):
        AtariReplayBuffer(100, n_step=2).put(segment)


def test_prioritized_put_draws_joined_windows_and_never_a_dead_copy() -> None:
    """Streams taking turns write each transition once (before links, the transitions
    waiting at a segment's end were written again after it, their first copies left in the
    ring with no priority): every drawn slot is a ready transition, with its joined window."""
    size, n, length = 300, 3, 5
    buffer = PrioritizedAtariReplayBuffer(size, generator=torch.Generator().manual_seed(0),
                                          n_step=n)
    reference = ExperienceReplayBuffer(3000, n_step=n)
    segments, _ = _stream_segments(300, length, seed=3)  # wraps the ring about twice
    drawn: set[int] = set()
    dead = 0  # the most copies of ready transitions left in the ring (not ready)
    for segment in segments:
        buffer.put(segment)
        reference.put(segment)
        carried = {a for a in buffer.action[buffer.ready].tolist()  # (they waited, ready)
                   if (a % 1000) % length > length - n}
        dead = max(dead, sum(a in carried for a in buffer.action[~buffer.ready].tolist()))
        index = buffer.sample_indices(64)
        assert buffer.ready[index].all()
        assert np.array_equal(buffer.tree[np.arange(size)] > 0, buffer.ready.numpy())
        drawn |= set(transitions(buffer.gather(index), GAMMA)[1].tolist())
    windows, theirs = _windows(buffer), _windows(reference)
    assert len(windows) > 100 and all(theirs[i] == window for i, window in windows.items())
    joined = {i for i in drawn if (i % 1000) % length > length - n}  # spanning two segments
    assert len(joined) > 20 and dead == 0


def test_a_ring_that_cannot_be_allocated_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Was torch's allocator traceback at the first transition (1e6 slots of 84x84 frames:
    6.6 GiB), the ring left half made; now one line, and the ring stays empty."""
    fail_allocations(monkeypatch, "empty", 10**6)
    for kind in (AtariReplayBuffer, PrioritizedAtariReplayBuffer):
        buffer = kind(10**6)
        first, second = (State({"observation": torch.zeros(4, 84, 84, dtype=torch.uint8),
                                "reward": 0.0, "done": False}) for _ in range(2))
        with pytest.raises(ValueError, match=rf"^{kind.__name__}: 1,000,000 items of 7,099 bytes "
                                             r"need 6.6 GiB on cpu, which could not be allocated "
                                             r"\(.*\); lower its size \(a preset's "
                                             r"replay_buffer_size\)$"):
            buffer.store(first, torch.tensor(1), second)
        assert buffer.frames is None and buffer.action is None and len(buffer) == 0
    # its last array failing (the frames and the others made): none of them is kept
    monkeypatch.undo()
    fail_allocations(monkeypatch, "full", 10**5)
    buffer = AtariReplayBuffer(10**5)
    small = State({"observation": torch.zeros(4, 8, 8, dtype=torch.uint8), "reward": 0.0,
                   "done": False})
    with pytest.raises(ValueError, match=r"^AtariReplayBuffer: 100,000 items of"):
        buffer.store(small, torch.tensor(1), small)
    assert buffer.frames is None and buffer.links is None and len(buffer) == 0


def test_an_action_with_a_fraction_after_whole_ones_is_one_line() -> None:
    """Was: 1.7 stored as 1 in the first action's int64 ring, silently."""
    buffer = AtariReplayBuffer(20)
    states = [State(_frames(first)) for first in range(1, 5)]
    buffer.store(states[0], 0, states[1])
    buffer.store(states[1], torch.tensor(2.0), states[2])  # (whole: stored as 2)
    with pytest.raises(TypeError, match=r"^AtariReplayBuffer: actions of float32 with a fraction "
                                        r"\(\[1\.7.*\]\) after actions of int64"):
        buffer.store(states[2], torch.tensor(1.7), states[3])
    assert _ready(buffer)[1].tolist() == [0, 2]


@pytest.mark.parametrize("kind", [AtariReplayBuffer, PrioritizedAtariReplayBuffer])
def test_sampled_states_carry_their_stored_reward(kind: type) -> None:
    """ALL's ``sample``'s states hold the reward that led to each, as ``ExperienceReplayBuffer``'s
    (19c4df6), through ``store`` and ``put``; a ring pickled before it kept them samples 0 for
    them, its transitions as they were (was: ``states.reward`` 0 for every sample)."""
    segments, stored = _stream_segments(120, length=8, seed=3)
    for fill in ("store", "put"):
        ring, reference = kind(1000), ExperienceReplayBuffer(1000)
        for buffer in (ring, reference):
            for previous, action, state in stored[0] if fill == "store" else []:
                buffer.store(previous, action, state)
            for segment in segments if fill == "put" else []:
                buffer.put(segment)
        states, actions = transitions(reference.gather(torch.arange(len(reference))))[:2]
        expected = dict(zip(actions.tolist(), states.reward.tolist()))
        states, actions = _ready(ring)[:2]
        assert dict(zip(actions.tolist(), states.reward.tolist())) == expected
        assert len(expected) == len(ring) > 100 and len(set(expected.values())) > 2
    state = ring.__getstate__()
    del state["state_reward"]
    old = kind.__new__(kind)
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    assert (_ready(old)[0].reward == 0).all() and _windows(old) == _windows(ring)
