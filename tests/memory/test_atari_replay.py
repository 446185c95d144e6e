"""Tests of AtariReplayBuffer: frames stored once, stacks rebuilt exactly at sample time."""

from __future__ import annotations

import pytest
import torch

from looprl.core import State, StateArray
from looprl.environments.bodies import EpisodicLife
from looprl.memory.atari_replay import AtariReplayBuffer

FRAME = 84 * 84


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


def _all_valid(buffer: AtariReplayBuffer):
    return buffer.gather(buffer.valid.nonzero().squeeze(-1))


def test_stacked_observations_are_rebuilt_exactly_across_episodes() -> None:
    pytest.importorskip("ale_py")
    buffer = AtariReplayBuffer(350)
    expected = _play(buffer, 1000)  # several lives, game overs, truncations, wrap-around
    states, actions, rewards, next_states, weights = _all_valid(buffer)
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
    states, actions, _, next_states, _ = _all_valid(buffer)
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
    buffer = AtariReplayBuffer(1000)
    buffer.store(State(torch.zeros(4, 84, 84, dtype=torch.uint8)), torch.tensor(0),
                 State(torch.zeros(4, 84, 84, dtype=torch.uint8)))
    per_transition = buffer.nbytes / 1000
    assert buffer.nbytes == AtariReplayBuffer.footprint(1000)
    assert FRAME <= per_transition < FRAME + 32  # one frame plus a few bytes
    million = AtariReplayBuffer.footprint(1_000_000)
    naive = 1_000_000 * 2 * 4 * FRAME  # observation and next observation, 4 frames each
    assert million == 1_000_000 * per_transition
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
