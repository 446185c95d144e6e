"""Tests of the bodies (agent-side preprocessing) in looprl.environments.bodies."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from looprl.core import Agent, State, StateArray
from looprl.environments.bodies import (
    Body,
    EpisodicLife,
    FrameStack,
    ObservationNormalization,
    RewardClipping,
    RunningMeanStd,
    TimeFeature,
    deepmind_atari_body,
)


class Recorder(Agent):
    """Records the states it is given and answers action 7."""

    def __init__(self) -> None:
        self.states: list[Any] = []
        self.policy = "the policy"

    def act(self, state: Any) -> int:
        self.states.append(state)
        return 7


def _state(observation: list[float], **kwargs: Any) -> State:
    return State(torch.tensor(observation), **kwargs)


def _array(observation: list[list[float]], **kwargs: Any) -> StateArray:
    n = len(observation)
    return StateArray({"observation": torch.tensor(observation), **kwargs}, (n,))


def test_body_delegates_and_exposes_the_agent() -> None:
    class AddOne(Body):
        def process_action(self, action: int) -> int:
            return action + 1

    inner = Recorder()
    body = AddOne(inner)
    state = _state([1.0])
    assert body.act(state) == 8 and inner.states == [state]
    assert body.policy == "the policy"  # attributes of the wrapped agent pass through
    with pytest.raises(AttributeError):
        _ = body.no_such_attribute


def test_frame_stack_single_states() -> None:
    inner = Recorder()
    body = FrameStack(inner, size=3)
    body.act(_state([1.0, 1.0]))
    body.act(_state([2.0, 2.0]))
    body.act(_state([3.0, 3.0], done=True))
    body.act(_state([4.0, 4.0]))  # first state of a new episode
    seen = [s.observation.view(3, 2)[:, 0].tolist() for s in inner.states]
    assert seen == [[1, 1, 1], [1, 1, 2], [1, 2, 3], [4, 4, 4]]
    assert inner.states[0].observation.shape == (6,)  # concatenated, as ALL's


def test_frame_stack_restarts_rows_that_were_done() -> None:
    inner = Recorder()
    body = FrameStack(inner, size=2)
    body.act(_array([[1.0], [10.0]]))
    body.act(_array([[2.0], [20.0]], done=torch.tensor([False, True])))
    body.act(_array([[3.0], [30.0]]))
    last = inner.states[-1].observation
    assert last.shape == (2, 2)
    assert last.tolist() == [[2.0, 3.0], [30.0, 30.0]]


def test_frame_stack_concatenates_along_the_first_axis_as_alls() -> None:
    """ALL's ``FrameStack`` is ``torch.cat(frames, dim=0)`` (``dim=1`` for a ``StateArray``):
    an ALL model built for ``(4, 84, 84)`` inputs takes stacked ``(1, 84, 84)`` frames."""
    inner = Recorder()
    body = FrameStack(inner, size=4)
    frames = [torch.full((1, 84, 84), i, dtype=torch.uint8) for i in range(2)]
    for frame in frames:
        body.act(State(frame))
    last = inner.states[-1].observation
    assert last.shape == (4, 84, 84) and last.dtype == torch.uint8
    assert torch.equal(last, torch.cat([frames[0]] * 3 + [frames[1]]))
    inner = Recorder()
    body = FrameStack(inner, size=4)
    body.act(StateArray({"observation": torch.zeros(3, 1, 84, 84)}, (3,)))
    assert inner.states[-1].observation.shape == (3, 4, 84, 84)
    inner = Recorder()
    body = FrameStack(inner, size=3)
    body.act(_state(1.0))  # 0-d observations: (size,)
    assert inner.states[-1].observation.tolist() == [1.0, 1.0, 1.0]


def test_frame_stack_restarts_when_the_batch_changes() -> None:
    inner = Recorder()
    body = FrameStack(inner, size=2)
    body.act(_array([[1.0], [2.0]]))
    body.act(_array([[3.0], [4.0], [5.0]]))  # three environments now: a new stack
    assert inner.states[-1].observation.tolist() == [[3.0, 3.0], [4.0, 4.0], [5.0, 5.0]]


@pytest.mark.parametrize("size", [0, 2.5, "4"])
def test_frame_stack_refuses_a_size_that_is_no_count(size: Any) -> None:
    with pytest.raises(ValueError, match=rf"size must be positive \(a whole number\)"
                                         rf", got {size!r}"):
        FrameStack(Recorder(), size=size)


def test_reward_clipping_to_sign() -> None:
    inner = Recorder()
    body = RewardClipping(inner)
    for reward, clipped in [(7.0, 1.0), (-0.5, -1.0), (0.0, 0.0), (1.0, 1.0)]:
        body.act(_state([0.0], reward=reward))
        assert inner.states[-1].reward == clipped
    body.act(_array([[0.0]] * 3, reward=torch.tensor([4.0, 0.0, -2.0])))
    assert inner.states[-1].reward.tolist() == [1.0, 0.0, -1.0]
    for reward in (np.float64(-3.0), np.float32(2.0), np.int64(0)):  # ALL's float(np.sign(r))
        body.act(_state([0.0], reward=reward))
        assert inner.states[-1].reward == float(np.sign(reward))


def test_episodic_life_makes_a_lost_life_terminal_for_learning() -> None:
    inner = Recorder()
    body = EpisodicLife(inner)
    body.act(_state([0.0], life_lost=True))
    assert inner.states[-1].done and inner.states[-1].mask == 0.0
    body.act(_state([0.0], life_lost=False))
    assert not inner.states[-1].done and inner.states[-1].mask == 1.0
    plain = _state([0.0])
    body.act(plain)
    assert inner.states[-1] is plain  # states without lives pass through
    lost = torch.tensor([True, False, False])
    truncated = torch.tensor([False, False, True])
    body.act(_array([[0.0]] * 3, life_lost=lost, done=truncated, mask=torch.ones(3)))
    assert inner.states[-1].done.tolist() == [True, False, True]
    assert inner.states[-1].mask.tolist() == [0.0, 1.0, 1.0]
    body.act(_array([[0.0]] * 3, life_lost=[False, True, False], done=torch.zeros(3, dtype=bool),
                    mask=torch.ones(3)))  # (a list of flags: was every row done, mask 0)
    assert inner.states[-1].done.tolist() == [False, True, False]
    assert inner.states[-1].mask.tolist() == [1.0, 0.0, 1.0]


def test_time_feature() -> None:
    inner = Recorder()
    body = TimeFeature(inner, scale=0.5)
    body.act(_state([9.0]))
    body.act(_state([9.0], done=True))
    body.act(_state([9.0]))
    assert [s.observation.tolist() for s in inner.states] == [[9.0, 0.0], [9.0, 0.5], [9.0, 0.0]]
    inner = Recorder()
    body = TimeFeature(inner, max_steps=4)  # 1 - t / max_steps
    body.act(_array([[1.0], [2.0]]))
    body.act(_array([[1.0], [2.0]], done=torch.tensor([True, False])))
    body.act(_array([[1.0], [2.0]]))
    assert inner.states[-1].observation.tolist() == [[1.0, 1.0], [2.0, 0.5]]


def test_time_feature_refuses_what_it_cannot_append_to() -> None:
    with pytest.raises(ValueError, match="max_steps must be positive"):
        TimeFeature(Recorder(), max_steps=0)  # (was ignored: ALL's scale * t)
    with pytest.raises(ValueError, match="scale must be positive, got nan"):
        TimeFeature(Recorder(), scale=float("nan"))  # (every time feature was NaN)
    body = TimeFeature(Recorder())
    with pytest.raises(ValueError, match=r"TimeFeature appends to flat observations, got "
                                         r"observations of shape \(1, 4, 4\)"):
        body.act(State(torch.zeros(1, 4, 4)))


def test_running_mean_std_matches_numpy() -> None:
    data = np.array([[1.0, 10.0], [3.0, 10.0], [5.0, 40.0], [7.0, 20.0], [9.0, 20.0]])
    stats = RunningMeanStd((2,), epsilon=0.0)
    stats.update(torch.tensor(data[:2]))
    stats.update(torch.tensor(data[2:]))
    # mean = (25 / 5, 100 / 5) = (5, 20); var = ((16+4+0+4+16) / 5, (100+100+400+0+0) / 5)
    assert stats.mean.tolist() == pytest.approx([5.0, 20.0])
    assert stats.var.tolist() == pytest.approx([8.0, 120.0])
    assert stats.count == 5


def test_observation_normalization() -> None:
    inner = Recorder()
    body = ObservationNormalization(inner, clip=3.0)
    generator = torch.Generator().manual_seed(0)
    for _ in range(50):
        batch = torch.randn(16, 3, generator=generator) * torch.tensor([1.0, 10.0, 100.0]) + 5.0
        body.act(StateArray({"observation": batch}, (16,)))
    seen = torch.cat([s.observation for s in inner.states[-10:]])
    assert seen.mean(0).abs().max() < 0.2 and (seen.std(0) - 1.0).abs().max() < 0.2
    assert seen.abs().max() <= 3.0
    frozen = ObservationNormalization(Recorder(), stats=body.stats, update=False)
    count = body.stats.count
    frozen.act(_state([5.0, 5.0, 5.0]))
    assert body.stats.count == count  # evaluation does not update the shared statistics
    assert frozen.agent.states[-1].observation.abs().max() < 0.5


def test_observation_normalization_refuses_nonfinite_and_reshaped_observations() -> None:
    body = ObservationNormalization(Recorder())
    body.act(_state([1.0, 2.0]))
    mean = body.stats.mean.clone()
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="ObservationNormalization: the environment's "
                           r"observation holds NaN or inf \(the running statistics were left"):
            body.act(_state([bad, 2.0]))
    assert torch.equal(body.stats.mean, mean)  # was: NaN statistics for every later step
    with pytest.raises(ValueError, match=r"ObservationNormalization: an observation of shape "
                       r"\(3,\), but its statistics are of shape \(2,\); one "):
        body.act(_state([1.0, 2.0, 3.0]))  # was: torch's "size of tensor a (3) must match"


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"clip": -1.0}, ValueError, "clip must be positive, got -1.0"),  # was: every value -1
    ({"clip": float("nan")}, ValueError, "clip must be positive, got nan"),  # was: NaN
    ({"epsilon": -1.0}, ValueError, "epsilon must be positive, got -1.0"),  # was: NaN
    ({"stats": {}}, TypeError, "stats must be a RunningMeanStd .or None: made from the first "
                               "observation., got dict"),  # was: AttributeError at act
])
def test_observation_normalization_bad_settings_are_one_line(kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        ObservationNormalization(Recorder(), **kwargs)


def test_deepmind_atari_body() -> None:
    inner = Recorder()
    body = deepmind_atari_body(inner)
    body.act(_state([0.0], reward=4.0, life_lost=True))
    state = inner.states[-1]
    assert state.reward == 1.0 and state.done and state.mask == 0.0
    assert deepmind_atari_body(inner, episodic_life=False, clip_rewards=False) is inner
