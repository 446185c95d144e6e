"""Tests of ``NStepReplayBuffer`` (looprl.memory.nstep)."""

from __future__ import annotations

import pytest
import torch

from helpers import as_transitions
from looprl.agents.losses.value import n_step_return
from looprl.core import State, StateArray
from looprl.memory.nstep import NStepReplayBuffer
from looprl.memory.prioritized import PrioritizedReplayBuffer
from looprl.memory.replay import ExperienceReplayBuffer

GAMMA = 0.5


def _s(i: float, **kwargs) -> State:
    return State(torch.full((2,), float(i)), **kwargs)


def _all(buffer: NStepReplayBuffer) -> tuple:
    """Every stored transition, sorted by the first feature of the starting observation."""
    states = buffer.gather(torch.arange(len(buffer))).obs[0]
    return as_transitions(buffer.gather(states[:, 0].argsort()), GAMMA)


def test_single_stream_termination() -> None:
    buffer = NStepReplayBuffer(3, ExperienceReplayBuffer(100, n_step=3))
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
    buffer = NStepReplayBuffer(3, ExperienceReplayBuffer(100, n_step=3))
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


def test_parallel_streams_match_the_pure_n_step_return() -> None:
    n, steps, rows = 3, 12, 3
    generator = torch.Generator().manual_seed(0)
    rewards = torch.randint(1, 5, (steps, rows), generator=generator).float()
    dones = torch.zeros(steps, rows, dtype=torch.bool)
    masks = torch.ones(steps, rows)
    dones[4, 0] = True  # stream 0 terminates at step 4
    masks[4, 0] = 0.0
    dones[6, 1] = True  # stream 1 is truncated at step 6
    buffer = NStepReplayBuffer(n, ExperienceReplayBuffer(100, n_step=n))
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
    for i in range(len(buffer)):
        t, row = int(obs.observation[i, 0]), int(actions[i])
        window = slice(t, min(t + n, steps))
        ret, discount, mask = n_step_return(rewards[window, row], dones[window, row],
                                            masks[window, row], GAMMA)
        assert returns[i] == ret
        assert next_states["discount"][i] == discount
        assert next_states.mask[i] == mask
    # transitions out of done states (t = 5 for stream 0, t = 7 for stream 1) are skipped
    written = {(int(o), int(a)) for o, a in zip(obs.observation[:, 0], actions)}
    assert (5, 0) not in written and (7, 1) not in written and (5, 2) in written


def test_n_one_gives_one_step_transitions_and_priorities_pass_through() -> None:
    inner = PrioritizedReplayBuffer(10, alpha=1.0, epsilon=0.0)
    buffer = NStepReplayBuffer(1, inner)
    for t in range(3):
        buffer.store(_s(t), 0, _s(t + 1, reward=float(t)))
    _, _, returns, next_states, weights = as_transitions(buffer.sample_batch(4), 0.9)
    assert torch.equal(returns, next_states.observation[:, 0] - 1)
    assert "discount" not in next_states  # one-step windows: gamma itself
    assert weights.shape == (4,)
    buffer.update_priorities(torch.full((4,), 7.0))
    assert inner.max_priority == 7.0


def test_invalid_n() -> None:
    with pytest.raises(ValueError, match="n must be"):
        NStepReplayBuffer(0, ExperienceReplayBuffer(10))
