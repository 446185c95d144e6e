"""``looprl.memory`` as an ALL user writes against ``all.memory`` (ALL 0.9.1):
``NStepReplayBuffer`` over a replay buffer, the advantage buffers against hand-computed
advantages, and ``PrioritizedReplayBuffer``'s argument order."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from looprl import nn
from looprl.approximation import Identity, LinearScheduler, VNetwork
from looprl.core import State, StateArray
from looprl.environments import GymEnvironment
from looprl.memory import (
    ExperienceReplayBuffer,
    GeneralizedAdvantageBuffer,
    NStepAdvantageBuffer,
    NStepReplayBuffer,
    PrioritizedReplayBuffer,
    ReplayBuffer,
)
from looprl.memory.atari_replay import AtariReplayBuffer


def _s(i: float, **kwargs) -> State:
    return State(torch.full((2,), float(i)), **kwargs)


def test_n_step_replay_buffer_over_an_experience_replay_buffer() -> None:
    torch.manual_seed(0)
    replay = NStepReplayBuffer(2, 0.5, ExperienceReplayBuffer(100))
    # states 0 -> 1 -> 2 -> 3 (terminal), rewards 1, 2, 4
    states = [_s(0), _s(1, reward=1.0), _s(2, reward=2.0), _s(3, reward=4.0, done=True)]
    for t in range(3):
        replay.store(states[t], t, states[t + 1])
    assert len(replay) == 3
    obs, actions, returns, next_states, weights = replay.sample(64)
    order = obs.observation[:, 0].long()
    assert torch.equal(actions, order)
    # R_0 = 1 + 0.5 * 2 -> s2; R_1 = 2 + 0.5 * 4 -> s3 (terminal); R_2 = 4 -> s3
    expected = torch.tensor([2.0, 4.0, 4.0])[order]
    assert torch.equal(returns, expected) and torch.equal(next_states.reward, expected)
    assert torch.equal(next_states.observation[:, 0], torch.tensor([2.0, 3.0, 3.0])[order])
    assert torch.equal(next_states.mask, torch.tensor([1.0, 0.0, 0.0])[order])
    assert torch.equal(next_states["discount"], torch.tensor([0.25, 0.25, 0.5])[order])
    assert torch.equal(weights, torch.ones(64))


@pytest.mark.parametrize("make", [
    lambda: ExperienceReplayBuffer(100), lambda: PrioritizedReplayBuffer(100),
    lambda: NStepReplayBuffer(2, 0.5, ExperienceReplayBuffer(100))])
@pytest.mark.parametrize("masked", [True, False])
def test_sampled_states_keep_every_entry_stored(make, masked) -> None:
    """A stored state's further entries (an action mask) and its reward come back with its
    samples, as ALL's buffers, which keep the ``State``, give them (was: ``KeyError:
    'action_mask'``; the sampled states' reward 0), also when a single state's transition is
    written at once (``masked=False``: after the first ``len``, into NumPy views)."""
    torch.manual_seed(0)
    replay = make()
    states = [_s(i, reward=10.0 + i, **({"action_mask": torch.tensor([True, i % 2 == 0])}
                                         if masked else {})) for i in range(6)]
    for t in range(5):
        replay.store(states[t], t, states[t + 1])
        assert len(replay) <= t + 1  # (n-step windows wait for their steps)
    obs, actions, _, next_states, _ = replay.sample(32)
    at, after = obs.observation[:, 0].long(), next_states.observation[:, 0].long()
    assert torch.equal(obs.reward, 10.0 + at) and torch.equal(actions, at)
    assert torch.equal(obs.done, torch.zeros(32, dtype=torch.bool))
    assert torch.equal(obs.mask, torch.ones(32))
    if masked:
        assert torch.equal(obs["action_mask"][:, 1], at % 2 == 0)
        assert torch.equal(next_states["action_mask"][:, 1], after % 2 == 0)


@pytest.mark.parametrize("make", [
    lambda: ExperienceReplayBuffer(500),
    lambda: NStepReplayBuffer(3, 0.5, ExperienceReplayBuffer(500))])
def test_info_entries_of_some_steps_or_no_numbers_are_left_out_of_the_samples(make) -> None:
    """``GymEnvironment`` states carry the info's entries: those every state of the first
    transitions stored had as numbers are kept, others (one the reset state lacks, such as
    MuJoCo's reward terms; a string, a dict, None) are left out, as ALL's ``State.array``
    leaves them out (was, past 32 steps: ``ValueError: zip() argument 2 is longer``, ``fields
    ('obs', 'lives', 'ctrl') do not match ('obs', 'lives')``, or ``TypeError: can't convert
    np.ndarray of type numpy.str_``); a kept entry that a later
    state lacks, or whose shape changes, is one line."""
    def episode(n: int, **entries) -> list[State]:
        info = {"lives": 1.0, "ctrl": -0.1, "tag": "a", "episode": {"r": 1.0}, "none": None}
        return [_s(0, lives=0.0), *[_s(i, reward=1.0, done=i == n - 1, **info, **entries)
                                for i in range(1, n)]]

    replay = make()
    for states in (episode(50), episode(50)):
        for t in range(len(states) - 1):
            replay.store(states[t], t, states[t + 1])
    obs, _, _, next_states, _ = replay.sample(8)
    assert set(obs) == set(next_states) - {"discount"} == {
        "observation", "lives", "reward", "done", "mask"}
    without = [_s(0), *[_s(i, reward=1.0) for i in range(1, 40)]]
    with pytest.raises(ValueError, match="a State without the entry 'lives', which the States"):
        for t in range(39):
            replay.store(without[t], t, without[t + 1])
        replay.sample(8)
    replay = make()
    ragged = [_s(i, lives=torch.zeros(1 + (i >= 40))) for i in range(80)]
    with pytest.raises(ValueError, match=r"'lives' entries come in shapes \[\(1,\), \(2,\)\]"):
        for t in range(79):
            replay.store(ragged[t], t, ragged[t + 1])
        replay.sample(8)


def test_n_step_replay_buffer_refuses_what_it_cannot_wrap() -> None:
    with pytest.raises(TypeError, match="wraps a looprl replay buffer"):
        NStepReplayBuffer(3, 0.9, [])
    full = ExperienceReplayBuffer(10)
    full.store(_s(0), 0, _s(1, reward=1.0))
    with pytest.raises(ValueError, match="needs an empty buffer"):
        NStepReplayBuffer(3, 0.9, full)
    with pytest.raises(ValueError, match="steps must be positive .* got 2.5"):  # (was: 2)
        NStepReplayBuffer(2.5, 0.9, ExperienceReplayBuffer(10))
    for discount in ("0.9", None, float("nan"), -0.1):  # (was: '>=' not supported for text)
        with pytest.raises(ValueError, match="a number discount_factor >= 0, got"):
            NStepReplayBuffer(3, discount, ExperienceReplayBuffer(10))


@pytest.mark.parametrize("make", [lambda: ExperienceReplayBuffer(10),
                                  lambda: PrioritizedReplayBuffer(10)])
def test_a_batch_size_that_is_no_whole_number_is_one_line(make) -> None:
    """(was: an empty batch for 0, torch's negative-dimension error for -1, and PER's
    ``ZeroDivisionError`` for 0)"""
    replay = make()
    replay.store(_s(0), 0, _s(1, reward=1.0))
    for size in (0, -1, 2.5):
        with pytest.raises(ValueError, match=f"batch_size must be positive .* got {size}"):
            replay.sample(size)


def test_prioritized_replay_buffer_takes_alls_argument_order() -> None:
    buffer = PrioritizedReplayBuffer(100, 0.5, 0.25, 1e-3, device="cpu")
    assert (buffer.alpha, buffer.beta, buffer.epsilon) == (0.5, 0.25, 1e-3)
    assert PrioritizedReplayBuffer(buffer_size=100, alpha=0.5).size == 100  # ALL's keyword
    assert buffer.device == "cpu"
    with pytest.raises(TypeError, match="pass device=... by keyword"):
        PrioritizedReplayBuffer(100, "cpu")
    replay = NStepReplayBuffer(2, 0.5, PrioritizedReplayBuffer(100, alpha=1.0, epsilon=0.0))
    for t in range(3):
        replay.store(_s(t), 0, _s(t + 1, reward=1.0))
    replay.sample(4)
    replay.update_priorities(torch.tensor([1.0, 2.0, 3.0, 4.0]))  # through to the buffer
    assert replay.buffer.max_priority == 4.0


def _value_of_observation() -> VNetwork:
    """``V(s) = observation`` (0 where terminal, as every ``VNetwork``)."""
    model = nn.Linear(1, 1)
    with torch.no_grad():
        model.weight.fill_(1.0)
        model.bias.fill_(0.0)
    return VNetwork(model, None)


def _fill(buffer) -> StateArray:
    """Two steps of two environments; environment 1 reaches a terminal state at step 1."""
    steps = [StateArray({"observation": torch.tensor([[1.0], [2.0]])}, (2,)),
             StateArray({"observation": torch.tensor([[3.0], [4.0]]),
                         "mask": torch.tensor([1.0, 0.0]), "done": torch.tensor([False, True])},
                        (2,))]
    buffer.store(None, None, None)  # ALL's agents store nothing before their first step
    for t, states in enumerate(steps):
        buffer.store(states, torch.tensor([t, 10 + t]), torch.tensor([1.0 + t, 1.0 + t]))
    return StateArray({"observation": torch.tensor([[5.0], [6.0]])}, (2,))


def test_generalized_advantage_buffer_matches_hand_computed_advantages() -> None:
    buffer = GeneralizedAdvantageBuffer(_value_of_observation(), Identity("cpu"), n_steps=2,
                                        n_envs=2, discount_factor=0.5, lam=0.5)
    states, actions, advantages = buffer.advantages(_fill(buffer))
    # values: t0 [1, 2]; t1 [3, 0 (terminal)]; t2 [5, 6]
    # env 0: d1 = 2 + .5*5 - 3 = 1.5, A1 = 1.5; d0 = 1 + .5*3 - 1 = 1.5, A0 = 1.5 + .25*1.5
    # env 1: d0 = 1 + .5*0 - 2 = -1, A0 = -1 (the episode ended); A1 = 0 (s1 ended it: the
    # environment resets on the next step, ignoring its action)
    assert torch.allclose(advantages, torch.tensor([1.875, -1.0, 1.5, 0.0]))
    assert torch.equal(states.observation.view(-1), torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert torch.equal(actions, torch.tensor([0, 10, 1, 11])) and len(buffer) == 0


def test_n_step_advantage_buffer_matches_hand_computed_advantages() -> None:
    buffer = NStepAdvantageBuffer(_value_of_observation(), Identity("cpu"), n_steps=2, n_envs=2,
                                  discount_factor=0.5)
    states, actions, advantages = buffer.advantages(_fill(buffer))
    # env 0: A0 = 1 + .5*2 + .25*V(s2)=5 - 1 = 2.25; A1 = 2 + .5*5 - 3 = 1.5
    # env 1: A0 = 1 + .5*V(terminal s1)=0 - 2 = -1; A1 = 0 (s1 ended the episode)
    assert torch.allclose(advantages, torch.tensor([2.25, -1.0, 1.5, 0.0]))
    assert torch.equal(actions, torch.tensor([0, 10, 1, 11]))
    assert states.shape == (4,)


def test_n_step_advantages_stop_at_a_truncation() -> None:
    """An episode cut by a time limit (done, mask 1) bootstraps from the state it ended in and
    takes no reward of the next episode."""
    buffer = NStepAdvantageBuffer(_value_of_observation(), Identity("cpu"), n_steps=2, n_envs=2,
                                  discount_factor=0.5)
    steps = [StateArray({"observation": torch.tensor([[1.0], [2.0]])}, (2,)),
             StateArray({"observation": torch.tensor([[3.0], [4.0]]),
                         "mask": torch.tensor([1.0, 1.0]), "done": torch.tensor([False, True])},
                        (2,))]
    for t, states in enumerate(steps):
        buffer.store(states, torch.tensor([t, 10 + t]), torch.tensor([1.0 + t, 1.0 + t]))
    _, _, advantages = buffer.advantages(
        StateArray({"observation": torch.tensor([[5.0], [6.0]])}, (2,)))
    # env 1: A0 = 1 + .5*V(s1)=4 - 2 = 1 (not 1 + .5*2 + .25*6 - 2); A1 = 0 (s1 ended it)
    assert torch.allclose(advantages, torch.tensor([2.25, 1.0, 1.5, 0.0]))


class _CutAtTwo(gym.Env):
    """Observation ``[t]``, reward 1 a step, truncated at ``t = 2``."""

    observation_space = gym.spaces.Box(0.0, 9.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t], np.float32), 1.0, False, self.t == 2, {}


@pytest.mark.parametrize("make", [NStepAdvantageBuffer, GeneralizedAdvantageBuffer])
def test_advantages_of_a_vector_environment_skip_the_row_that_ends_an_episode(make) -> None:
    """looprl's vector environments reset a copy on the step after its episode ended, ignoring
    the action: that row starts no transition. (was: its advantage mixed in the next episode's,
    -1.25 here)"""
    env = GymEnvironment(_CutAtTwo()).duplicate(1)
    env.reset(seed=0)
    buffer = make(_value_of_observation(), Identity("cpu"), 4, 1, discount_factor=0.5)
    states = env.state_array
    for _ in range(4):  # s0 (t0), s1 (t1), s2 (t2, truncated), s3 (t0, reset), then s4 (t1)
        env.step(torch.zeros(1, dtype=torch.long))
        buffer.store(states, torch.zeros(1), env.state_array.reward)
        states = env.state_array
    observed, _, advantages = buffer.advantages(states)
    assert observed.observation.view(-1).tolist() == [0.0, 1.0, 2.0, 0.0]
    # A0 = 1 + .5*1 + .25*V(s2)=2 - 0 = 2; A1 = 1 + .5*2 - 1 = 1; A2 = 0; A3 = 1 + .5*1 - 0
    assert torch.allclose(advantages, torch.tensor([2.0, 1.0, 0.0, 1.5]))


def test_advantage_buffers_say_when_they_are_full_or_short() -> None:
    buffer = NStepAdvantageBuffer(_value_of_observation(), Identity("cpu"), 1, 2)
    with pytest.raises(RuntimeError, match="store more before advantages"):
        buffer.advantages(StateArray({"observation": torch.zeros(2, 1)}, (2,)))
    states = StateArray({"observation": torch.zeros(2, 1)}, (2,))
    buffer.store(states, torch.zeros(2), torch.zeros(2))
    with pytest.raises(RuntimeError, match="call advantages"):
        buffer.store(states, torch.zeros(2), torch.zeros(2))


def test_advantage_buffers_refuse_tensors_in_place_of_states() -> None:
    """(was: stored, to fail in ``advantages()`` with "'Tensor' object has no attribute
    'items'")"""
    for make in (NStepAdvantageBuffer, GeneralizedAdvantageBuffer):
        buffer = make(_value_of_observation(), Identity("cpu"), 1, 2)
        with pytest.raises(TypeError, match=r"store\(states, actions, rewards\) takes a "
                                            r"StateArray of the n_envs=2 .* got Tensor"):
            buffer.store(torch.zeros(2, 1), torch.zeros(2), torch.zeros(2))
        buffer.store(StateArray({"observation": torch.zeros(2, 1)}, (2,)), torch.zeros(2),
                     torch.zeros(2))
        with pytest.raises(TypeError, match=r"advantages\(next_states\) takes a StateArray"):
            buffer.advantages(torch.zeros(2, 1))


@pytest.mark.parametrize("args", [(None, 2), (2.5, 2), (2, 0), (2, 2, 0.9, 0.95, 0)])
def test_advantage_buffers_take_whole_counts(args) -> None:
    """(was: ``'<' not supported between 'NoneType' and 'int'``, and ``2.5`` steps or a
    ``compute_batch_size`` of 0 accepted, to fail in ``advantages()`` on a slice or a
    ``range``)"""
    with pytest.raises(ValueError, match="must be positive .* got"):
        GeneralizedAdvantageBuffer(_value_of_observation(), Identity("cpu"), *args)
    if len(args) == 2:
        with pytest.raises(ValueError, match="must be positive .* got"):
            NStepAdvantageBuffer(_value_of_observation(), Identity("cpu"), *args)


def test_update_priorities_refuses_non_finite_and_miscounted_priorities() -> None:
    """A NaN/inf TD error would poison the sum tree (every later sample drawn from one leaf,
    or NaN weights); a list of the wrong length would be NumPy's broadcast error."""
    replay = PrioritizedReplayBuffer(10)
    for i in range(4):
        replay.store(_s(i), 0, _s(i + 1))
    replay.sample(3)
    with pytest.raises(FloatingPointError, match="non-finite priorities"):
        replay.update_priorities(torch.tensor([float("nan"), 1.0, 1.0]))
    with pytest.raises(FloatingPointError, match="non-finite priorities"):
        replay.update_priorities(torch.tensor([float("inf"), 1.0, 1.0]))
    with pytest.raises(ValueError, match="got 2 priorities for 3 transitions"):
        replay.update_priorities(torch.tensor([1.0, 2.0]))
    replay.update_priorities(torch.tensor([1.0, 2.0, 3.0]))
    assert torch.isfinite(replay.sample(4)[4]).all()


def test_replay_buffers_check_their_device_and_generator_when_made() -> None:
    """A device torch cannot use here is one line when the buffer is made (it was an
    AssertionError deep in the first ``sample``); ALL's ``store_device`` is named."""
    with pytest.raises(ValueError, match="Unknown device 'gpu'"):
        ExperienceReplayBuffer(10, device="gpu")
    with pytest.raises(ValueError, match="Unknown device"):
        PrioritizedReplayBuffer(10, device="gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            ExperienceReplayBuffer(10, device="cuda")
    with pytest.raises(TypeError, match="store_device is not ported"):
        ExperienceReplayBuffer(10, "cpu", "cpu")


@pytest.mark.parametrize("size", ["10", 2.5, 0])
def test_a_replay_size_that_is_no_whole_number_is_one_line(size) -> None:
    """(was: "'<' not supported between instances of 'str' and 'int'", and 2.5 taken as 2)"""
    with pytest.raises(ValueError, match=rf"size must be positive \(a whole number\), got "
                                         rf"{size!r}"):
        ExperienceReplayBuffer(size)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"discount_factor": "0.9"}, "'discount_factor' of GeneralizedAdvantageBuffer must be in "
                                 "\\[0, 1\\], got '0.9'"),
    ({"lam": 1.5}, "'lam' of GeneralizedAdvantageBuffer must be in \\[0, 1\\], got 1.5"),
])
def test_advantage_buffers_check_their_discount_and_lambda(kwargs, message) -> None:
    """(was: taken, to fail later in arithmetic on text, or to weigh later rewards up)"""
    with pytest.raises(ValueError, match=message):
        GeneralizedAdvantageBuffer(_value_of_observation(), Identity("cpu"), 4, 2, **kwargs)


def test_every_replay_buffer_is_a_replay_buffer_as_alls() -> None:
    for buffer in (ExperienceReplayBuffer(10), PrioritizedReplayBuffer(10),
                   AtariReplayBuffer(10)):
        assert isinstance(buffer, ReplayBuffer)


def test_storing_tensors_or_a_beta_that_is_no_number_is_one_line() -> None:
    """(was: "'Tensor' object has no attribute 'done'" at ``store``, and "bad operand type for
    unary -: 'str'" at the first ``sample``)"""
    n_step = NStepReplayBuffer(2, 0.9, ExperienceReplayBuffer(10))
    for replay in (ExperienceReplayBuffer(10), n_step):
        with pytest.raises(TypeError, match=r"store\(state, action, next_state\) takes States, "
                                            r"got Tensor and Tensor"):
            replay.store(torch.zeros(2), 0, torch.ones(2))
        replay.store(None, None, None)  # (ALL's: nothing before a first state)
    with pytest.raises(TypeError, match="beta is a number >= 0 or a schedule"):
        PrioritizedReplayBuffer(10, beta="0.4")
    PrioritizedReplayBuffer(10, beta=LinearScheduler(0.4, 1.0, 0, 10)).store(None, None, _s(0))


def test_an_entry_of_the_first_states_that_later_ones_lack_is_left_out_with_a_warning(
        caplog) -> None:
    """A reset state with ``lives`` and steps without it, all in the buffer's first write: the
    entry cannot be kept (was: left out without a word)."""
    replay = ExperienceReplayBuffer(100)
    states = [_s(0, lives=3.0), *[_s(i, reward=1.0) for i in range(1, 6)]]
    with caplog.at_level("WARNING"):
        for t in range(5):
            replay.store(states[t], t, states[t + 1])
        obs = replay.sample(2)[0]
    assert "lives" not in obs
    assert ("ExperienceReplayBuffer: the first States have the entries ['lives'], some later "
            "ones do not: they are left out of the samples") in caplog.text
