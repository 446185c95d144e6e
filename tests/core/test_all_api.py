"""ALL 0.9's ``State``/``StateArray``/``Agent`` API, written as an ALL user writes it
(``from all.core import State`` with ``looprl`` in place of ``all``)."""

import inspect

import numpy as np
import pytest
import torch
from torch import nn

from looprl.agents import Agent, Multiagent, ParallelAgent
from looprl.approximation import QNetwork
from looprl.core import State, StateArray


def test_state_and_state_array_are_top_level_names_as_in_all() -> None:
    import looprl

    assert looprl.State is State and looprl.StateArray is StateArray


def _array_of_arrays() -> StateArray:
    rows = [State.array([State({"observation": torch.full((4,), 10.0 * i + j), "k": [i, j]})
                         for j in range(2)]) for i in range(3)]
    return State.array(rows)


def test_array_of_state_arrays_keeps_the_inner_shape() -> None:
    states = _array_of_arrays()
    assert states.shape == (3, 2)
    assert states.observation.shape == (3, 2, 4)
    assert states.reward.shape == (3, 2)
    assert states[1].shape == (2,)
    assert torch.equal(states[1, 0].observation, torch.full((4,), 10.0))
    flat = states.view((6,))
    assert flat.shape == (6,)
    assert torch.equal(flat.observation[:, 0], torch.tensor([0.0, 1, 10, 11, 20, 21]))


def test_a_lone_state_is_batched_for_a_batch_first_model() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(6, 3))
    q = QNetwork(model)
    state = State({"observation": torch.randn(2, 3)})
    values = q.no_grad(state)
    assert values.shape == (3,)
    assert torch.allclose(values, model(state.observation.unsqueeze(0))[0])
    assert q.no_grad(state, 1).shape == ()
    terminal = State({"observation": torch.randn(2, 3), "done": True, "mask": 0.0})
    assert torch.equal(q.no_grad(terminal), torch.zeros(3))


def test_lone_state_as_input_and_as_output() -> None:
    state = State({"observation": torch.ones(4)})
    assert state.as_input("observation").shape == (1, 4)
    assert state.as_output(torch.zeros(1, 7)).shape == (7,)


def test_batch_execute_runs_fn_by_minibatch_and_concatenates() -> None:
    states = State.array([State({"observation": torch.tensor([float(i)])}) for i in range(7)])
    sizes = []

    def double(batch: StateArray) -> torch.Tensor:
        sizes.append(len(batch))
        return batch.observation * 2

    out = states.batch_execute(3, double)
    assert sizes == [3, 3, 1]
    assert torch.equal(out, torch.arange(7.0).view(7, 1) * 2)
    again = states.batch_execute(2, lambda batch: batch.update("observation", -batch.observation))
    assert isinstance(again, StateArray) and again.shape == (7,)
    assert torch.equal(again.observation, -states.observation)
    with pytest.raises(ValueError, match="minibatch_size"):
        states.batch_execute(0, double)


def test_agent_interfaces_from_agents() -> None:
    class ConstantAgent(Agent):
        def act(self, state: State) -> int:
            return 1

    assert ConstantAgent().act(State({"observation": torch.zeros(2)})) == 1
    with pytest.raises(TypeError):
        ParallelAgent()  # abstract, as ALL's
    with pytest.raises(TypeError):
        Multiagent()


def test_from_gym_takes_alls_legacy_outputs_and_numpy_dtypes() -> None:
    reset = State.from_gym(np.zeros(3), dtype=np.float64)
    assert reset.observation.dtype == torch.float64 and reset.reward == 0.0 and not reset.done
    step = State.from_gym((np.ones(3), 1.5, True, {"lives": 2}))
    assert step.done and step.mask == 0.0 and step.reward == 1.5 and step["lives"] == 2
    step = State.from_gym((np.ones(3), 1.0, False, True, {}), dtype=np.int64)
    assert step.observation.dtype == torch.int64 and step.done and step.mask == 1.0
    with pytest.raises(ValueError, match="got 3 items"):
        State.from_gym((np.ones(3), 1.0, False))


def test_alls_logging_and_bodies_import_paths() -> None:
    """``all.logging``, ``all.bodies`` and ``all.presets``' multi-agent preset as an ALL user
    imports them, with ``looprl`` in place of ``all``."""
    from looprl.bodies import (
        Body,
        ClipRewards,
        FrameStack,
        RewardClipping,
        TimeFeature,
    )
    from looprl.logging import DummyLogger, ExperimentLogger, Logger
    from looprl.presets import IndependentMultiagentPreset

    assert isinstance(DummyLogger(), Logger) and DummyLogger().frame == 0
    assert list(inspect.signature(ExperimentLogger).parameters)[:2] == ["agent_name", "env_name"]
    for body in (FrameStack, ClipRewards, TimeFeature):
        assert issubclass(body, Body)
    assert ClipRewards is RewardClipping
    assert IndependentMultiagentPreset.__module__ == "looprl.presets.multiagent.independent"


def test_deepmind_atari_body_takes_alls_arguments() -> None:
    """ALL 0.9's ``DeepmindAtariBody(agent, lazy_frames=False, episodic_lives=True,
    frame_stack=4, clip_rewards=True)`` (was looprl's ``(agent, episodic_life, clip_rewards)``:
    ALL's keywords a ``TypeError``, ``DeepmindAtariBody(agent, False)`` silently without
    episodic lives)."""
    from looprl.bodies import ClipRewards, DeepmindAtariBody, EpisodicLife

    inner = object()
    assert list(inspect.signature(DeepmindAtariBody).parameters) == [
        "agent", "lazy_frames", "episodic_lives", "frame_stack", "clip_rewards"]
    for body in (DeepmindAtariBody(inner), DeepmindAtariBody(inner, False),
                 DeepmindAtariBody(inner, lazy_frames=True, frame_stack=4)):
        assert isinstance(body, EpisodicLife) and isinstance(body.agent, ClipRewards)
    assert isinstance(DeepmindAtariBody(inner, episodic_lives=False), ClipRewards)
    assert DeepmindAtariBody(inner, episodic_lives=False, clip_rewards=False) is inner
    with pytest.raises(ValueError, match=r"AtariEnvironment\(name, frame_stack=2\)"):
        DeepmindAtariBody(inner, frame_stack=2)


def test_state_array_as_input_casts_to_float_as_alls_does() -> None:
    """ALL's ``StateArray.as_input`` casts with ``.float()``: float64 (NumPy-made), integer and
    bool observations reach a ``float32`` model; ``uint8`` images stay compact."""
    torch.manual_seed(0)
    q = QNetwork(nn.Linear(4, 2))
    for dtype in (torch.float64, torch.int64, torch.bool):
        states = StateArray({"observation": torch.ones(3, 4, dtype=dtype)}, (3,))
        assert states.as_input("observation").dtype == torch.float32
        assert torch.allclose(q.no_grad(states), q.no_grad(
            StateArray({"observation": torch.ones(3, 4)}, (3,))))
    from_numpy = State.array([State(torch.from_numpy(np.random.rand(4))) for _ in range(3)])
    assert q.no_grad(from_numpy).shape == (3, 2)
    assert q.no_grad(State(np.random.rand(4))).shape == (2,)
    images = StateArray({"observation": torch.zeros(2, 1, 3, 3, dtype=torch.uint8)}, (2,))
    assert images.as_input("observation").dtype == torch.uint8


def test_state_array_of_a_tensor_entry_and_a_default_number() -> None:
    """A tensor ``reward``/``mask`` next to a state's default number stacks, in either order."""
    obs = torch.zeros(2)
    for states in ([State(obs, reward=torch.tensor(1.0)), State(obs)],
                   [State(obs), State(obs, reward=torch.tensor(1.0))]):
        rewards = State.array(states).reward
        assert sorted(rewards.tolist()) == [0.0, 1.0]
    masks = State.array([State(obs, mask=torch.tensor(0.0)), State(obs)]).mask
    assert masks.tolist() == [0.0, 1.0]
