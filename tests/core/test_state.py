"""Tests of ``State``, ``StateArray`` and ``MultiagentState`` (looprl.core.state)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from looprl.core import MultiagentState, State, StateArray


def _state(i: int, **kwargs) -> State:
    return State(torch.full((2,), float(i)), **kwargs)


# -- State ---------------------------------------------------------------------------------
def test_state_defaults() -> None:
    state = State(torch.zeros(3))
    assert torch.equal(state.observation, torch.zeros(3))
    assert state.reward == 0.0
    assert state.done is False
    assert state.mask == 1.0
    assert not state.terminated and not state.truncated
    assert state.shape == () and len(state) == 1
    assert set(state) == {"observation", "reward", "done", "mask"}


def test_state_from_dict_and_kwargs_override() -> None:
    state = State({"observation": torch.ones(2), "reward": 1.0}, reward=2.0, lives=3)
    assert state.reward == 2.0
    assert state["lives"] == 3


def test_state_done_without_mask_counts_as_termination() -> None:
    state = State(torch.zeros(2), done=True)
    assert state.mask == 0.0
    assert state.terminated and not state.truncated


@pytest.mark.parametrize("done", [2, 0.5, np.array(2), torch.tensor(3), float("nan")])
def test_a_done_that_is_no_flag_is_one_line(done) -> None:
    """A user's Environment whose State had done=np.array(2): read as True."""
    for flag in (True, 0, np.bool_(False), torch.tensor(True), np.array(1)):
        State(torch.zeros(2), done=flag)
    with pytest.raises(TypeError, match=r"done is True or False \(or 1 or 0\), got"):
        State(torch.zeros(2), done=done)


@pytest.mark.parametrize("mask", [2, -1.0, np.float64(1.5), torch.tensor(-2.0), float("nan")])
def test_a_mask_outside_zero_and_one_is_one_line(mask) -> None:
    """The mask multiplies the bootstrapped value: State(obs, mask=2) doubled it silently."""
    for kept in (0, 1, 0.5, np.float32(1.0), torch.tensor(0.0)):
        assert State(torch.zeros(2), mask=kept).mask == kept
    with pytest.raises(ValueError, match=r"mask is 0\. where the episode terminated, else 1\., "):
        State(torch.zeros(2), mask=mask)


def test_state_requires_observation() -> None:
    with pytest.raises(KeyError, match="observation"):
        State({"reward": 1.0})


def test_from_gym_reset_output() -> None:
    state = State.from_gym((np.arange(3, dtype=np.float64), {"lives": 5}))
    assert state.observation.dtype == torch.float32  # float64 is converted
    assert torch.equal(state.observation, torch.tensor([0.0, 1.0, 2.0]))
    assert (state.reward, state.done, state.mask) == (0.0, False, 1.0)
    assert state["lives"] == 5


def test_from_gym_termination() -> None:
    state = State.from_gym((np.ones(3), 1.5, True, False, {}))
    assert state.reward == 1.5
    assert state.done is True
    assert state.mask == 0.0
    assert state.terminated is True
    assert state.truncated is False


def test_from_gym_truncation_keeps_mask() -> None:
    state = State.from_gym((np.ones(3), 1.5, False, True, {}))
    assert state.done is True
    assert state.mask == 1.0
    assert state.terminated is False
    assert state.truncated is True


def test_from_gym_copies_info_without_overriding_defaults() -> None:
    info = {"lives": 3, "reward": 99.0, "ale.frame": 7}
    state = State.from_gym((np.ones(2), 0.5, False, False, info))
    assert state["lives"] == 3
    assert state["ale.frame"] == 7
    assert state.reward == 0.5  # an info key never replaces a default entry


def test_from_gym_dtype_argument() -> None:
    state = State.from_gym((np.ones(2, dtype=np.uint8), {}), dtype=torch.float64)
    assert state.observation.dtype == torch.float64


def test_update_returns_a_copy() -> None:
    state = _state(1)
    new = state.update("reward", 5.0)
    assert new.reward == 5.0 and state.reward == 0.0
    assert type(new) is State
    both = state.update({"reward": 2.0}, extra="x")
    assert both.reward == 2.0 and both["extra"] == "x"
    assert "extra" not in state


def test_apply_on_single_state_masks_terminal() -> None:
    model = torch.nn.Linear(2, 3)
    live = State(torch.ones(2))
    dead = State(torch.ones(2), done=True)
    assert torch.allclose(live.apply(model, "observation"), model(torch.ones(2)))
    assert torch.equal(dead.apply(model, "observation"), torch.zeros(3))


def test_state_to_cpu() -> None:
    state = State(torch.ones(2), extra=torch.zeros(1), name="a")
    assert state.to("cpu") is state  # already there
    moved = state.to(torch.device("cpu"))
    assert torch.equal(moved.observation, state.observation)
    assert moved["name"] == "a"
    assert moved.observation.device.type == "cpu"


def test_state_to_a_device_torch_cannot_use_is_one_line() -> None:
    state = State(torch.ones(2))
    with pytest.raises(ValueError, match="^Unknown device 'gpu'"):
        state.to("gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sees no CUDA GPU here; use 'cpu'"):
            State.array([state, state]).to("cuda")


def test_a_state_array_on_a_device_torch_cannot_use_is_one_line() -> None:
    with pytest.raises(ValueError, match="^Unknown device 'gpu'"):
        State.array([State(torch.ones(2), device="gpu")] * 2)
    with pytest.raises(ValueError, match="^Unknown device 'gpu'"):
        StateArray({"observation": torch.zeros(2, 3)}, 2, device="gpu")


# -- State.array / StateArray -----------------------------------------------------------------
def _array() -> StateArray:
    states = [
        State(
            torch.full((2,), float(i)),
            reward=float(i),
            done=(i == 1),
            extra=torch.tensor([i, 10 * i]),
            name=f"n{i}",
        )
        for i in range(3)
    ]
    return State.array(states)


def test_state_array_stacks_defaults_and_extra_keys() -> None:
    array = _array()
    assert isinstance(array, StateArray)
    assert array.shape == (3,) and len(array) == 3
    assert torch.equal(array.observation, torch.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]))
    assert array.reward.dtype == torch.float32
    assert torch.equal(array.reward, torch.tensor([0.0, 1.0, 2.0]))
    assert array.done.dtype == torch.bool
    assert torch.equal(array.done, torch.tensor([False, True, False]))
    assert torch.equal(array.mask, torch.tensor([1.0, 0.0, 1.0]))
    assert torch.equal(array["extra"], torch.tensor([[0, 0], [1, 10], [2, 20]]))
    assert array["name"] == ["n0", "n1", "n2"]


def test_state_array_leaves_out_an_entry_some_states_lack() -> None:
    """(was: a ``KeyError`` traceback, for a step's state, whose ``info`` entries a
    ``GymEnvironment`` copies, before a reset's, which has none; ALL omits the entry)"""
    step, reset = _state(1, x_position=0.5), _state(0)
    with pytest.warns(UserWarning, match="some states have no 'x_position' entry"):
        array = State.array([step, reset])
    assert "x_position" not in array
    assert torch.equal(array.observation, torch.tensor([[1.0, 1.0], [0.0, 0.0]]))


def test_state_array_of_numpy_entries_of_other_shapes_or_no_numbers() -> None:
    """(was: NumPy's "inhomogeneous shape" traceback, or torch's "can't convert" one, where
    tensor entries give one line and other entries stay a list)"""
    with pytest.raises(ValueError, match="the states' 'legal' entries have different shapes "
                                         r"\[\(1,\), \(2,\)\]; give every state the same"):
        State.array([_state(0, legal=np.array([1, 2])), _state(1, legal=np.array([1]))])
    array = State.array([_state(0, lives=1.0), _state(1, lives=None)])
    assert array["lives"] == [1.0, None] and array[1]["lives"] is None
    names = State.array([_state(0, name=np.array(["a"])), _state(1, name=np.array(["b"]))])
    assert list(names[1]["name"]) == ["b"]


def test_state_array_of_nothing_raises() -> None:
    with pytest.raises(ValueError):
        State.array([])


def test_state_array_defaults() -> None:
    array = StateArray({"observation": torch.zeros(4, 2)}, (4,))
    assert torch.equal(array.reward, torch.zeros(4))
    assert torch.equal(array.done, torch.zeros(4, dtype=torch.bool))
    assert torch.equal(array.mask, torch.ones(4))


def test_int_index_gives_state() -> None:
    array = State.array([_state(i, reward=float(i)) for i in range(3)])
    item = array[2]
    assert type(item) is State
    assert item.shape == ()
    assert torch.equal(item.observation, torch.tensor([2.0, 2.0]))
    assert float(item.reward) == 2.0
    assert item.mask == 1.0


def test_int_index_with_list_entry() -> None:
    assert _array()[0]["name"] == "n0"


def test_slice_index() -> None:
    sub = _array()[0:2]
    assert isinstance(sub, StateArray)
    assert sub.shape == (2,)
    assert torch.equal(sub.observation, torch.tensor([[0.0, 0.0], [1.0, 1.0]]))
    assert torch.equal(sub.done, torch.tensor([False, True]))
    assert sub["name"] == ["n0", "n1"]


def test_tensor_index() -> None:
    sub = _array()[torch.tensor([2, 0])]
    assert sub.shape == (2,)
    assert torch.equal(sub.reward, torch.tensor([2.0, 0.0]))
    assert torch.equal(sub["extra"], torch.tensor([[2, 20], [0, 0]]))
    assert sub["name"] == ["n2", "n0"]


def test_bool_mask_index() -> None:
    array = _array()
    sub = array[~array.done]
    assert isinstance(sub, StateArray)
    assert sub.shape == (2,)
    assert torch.equal(sub.observation[:, 0], torch.tensor([0.0, 2.0]))
    assert sub["name"] == ["n0", "n2"]


def test_two_dimensional_array_indexing() -> None:
    array = StateArray({"observation": torch.arange(24.0).view(2, 3, 4)}, (2, 3))
    row = array[1]
    assert isinstance(row, StateArray) and row.shape == (3,)
    assert torch.equal(row.observation, torch.arange(12.0, 24.0).view(3, 4))
    single = array[1, 2]
    assert type(single) is State
    assert torch.equal(single.observation, torch.arange(20.0, 24.0))


def test_two_dimensional_bool_mask() -> None:
    array = StateArray({"observation": torch.arange(24.0).view(2, 3, 4)}, (2, 3))
    mask = torch.tensor([[True, False, True], [False, False, True]])
    assert array[mask].shape == (3,)


def test_as_input_as_output_view_flatten() -> None:
    array = StateArray({"observation": torch.arange(24.0).view(2, 3, 4)}, (2, 3))
    assert array.as_input("observation").shape == (6, 4)
    assert array.as_output(torch.zeros(6, 7)).shape == (2, 3, 7)
    assert array.as_output(torch.zeros(6)).shape == (2, 3)
    viewed = array.view((3, 2))
    assert viewed.shape == (3, 2)
    assert viewed.observation.shape == (3, 2, 4)
    assert viewed.reward.shape == (3, 2)
    flat = array.flatten()
    assert flat.shape == (6,)
    assert torch.equal(flat.observation, torch.arange(24.0).view(6, 4))
    assert flat.mask.shape == (6,)


def test_list_entries_of_a_two_dimensional_array_follow_view_flatten_and_cat() -> None:
    """(was: ``flatten``/``view`` left the nested lists as they were, so the flat array's
    ``[4]`` raised an IndexError and ``[2:5]`` gave ``[]``; ``cat(axis=1)`` dropped them)"""
    states = [State({"observation": torch.tensor([float(i)]), "name": f"n{i}", "pos": [i, i]})
              for i in range(3)]
    grid = State.array([State.array(states), State.array(states)])  # (2, 3)
    flat = grid.flatten()
    assert flat["name"] == ["n0", "n1", "n2", "n0", "n1", "n2"]
    assert flat[4]["name"] == "n1" and flat[2:5]["name"] == ["n2", "n0", "n1"]
    assert flat[[4]]["pos"] == [[1, 1]]  # (list items stay items)
    assert grid.view((3, 2))["name"] == [["n0", "n1"], ["n2", "n0"], ["n1", "n2"]]
    wide = StateArray.cat([grid, grid], axis=1)
    assert wide.shape == (2, 6) and wide[1, 4]["name"] == "n1"
    assert grid[:, 1]["pos"] == [[1, 1], [1, 1]]


def test_cat_concatenates_batched_entries() -> None:
    a = StateArray({"observation": torch.zeros(2, 3)}, (2,))
    b = StateArray({"observation": torch.ones(3, 3), "reward": torch.arange(3.0)}, (3,))
    both = StateArray.cat([a, b])
    assert both.shape == (5,)
    assert torch.equal(both.observation[:, 0], torch.tensor([0.0, 0.0, 1.0, 1.0, 1.0]))
    assert torch.equal(both.reward, torch.tensor([0.0, 0.0, 0.0, 1.0, 2.0]))


def test_cat_of_arrays_with_other_entries_is_one_line() -> None:
    """(was: a bare KeyError, or, with the extra entry in a later array, silently dropped)"""
    import pytest

    a = StateArray({"observation": torch.zeros(2, 3)}, (2,))
    b = StateArray({"observation": torch.zeros(2, 3), "action_mask": torch.ones(2, 2)}, (2,))
    for arrays in ([a, b], [b, a]):
        with pytest.raises(ValueError, match="give every array the same entries"):
            StateArray.cat(arrays)
    with pytest.raises(TypeError, match=r"concatenates one or more StateArrays, got \[\]"):
        StateArray.cat([])


def test_cat_and_batch_execute_keep_entries_shared_by_every_row() -> None:
    """(was: dropped, so a float mask of 0. came back as 1.: terminal rows bootstrapped)"""
    import pytest

    array = StateArray({"observation": torch.zeros(4, 2), "goal": torch.ones(7)}, (4,),
                       mask=0.0)
    both = StateArray.cat([array, array])
    assert both.mask == 0.0 and torch.equal(both["goal"], torch.ones(7))
    assert array.batch_execute(2, lambda rows: rows).mask == 0.0
    other = array.update("goal", torch.zeros(7))
    with pytest.raises(ValueError, match="the arrays' 'goal' entries differ"):
        StateArray.cat([array, other])


def test_numpy_entries_of_a_state_array_become_tensors() -> None:
    """(was: kept as arrays, so indexing raised AttributeError and a NumPy ``done`` failed)"""
    array = StateArray(np.arange(6.0).reshape(3, 2), (3,), done=np.array([True, False, False]),
                       action_mask=np.ones((3, 4), dtype=np.int64))
    assert array.observation.dtype == torch.float32
    assert torch.equal(array.mask, torch.tensor([0.0, 1.0, 1.0]))
    assert torch.equal(array[1].observation, torch.tensor([2.0, 3.0]))
    assert array[1]["action_mask"].shape == (4,)  # (was: every row's)


def test_view_infers_a_minus_one_dimension() -> None:
    array = StateArray({"observation": torch.arange(24.0).view(2, 3, 4)}, (2, 3))
    assert array.view((-1,)).shape == (6,) and array.view(6).shape == (6,)
    assert array.view((3, -1)).observation.shape == (3, 2, 4)


def test_view_of_another_number_of_states_is_one_line() -> None:
    """Was torch's "shape '[4, 3, 4]' is invalid for input of size 24" (the entry's)."""
    array = StateArray({"observation": torch.arange(24.0).view(2, 3, 4)}, (2, 3))
    for shape in ((4, 3), (4, -1)):
        with pytest.raises(ValueError) as error:
            array.view(shape)
        assert str(error.value) == (f"StateArray.view: a batch of shape (2, 3) cannot be viewed "
                                    f"as {shape}: give a shape of 6 states (one dimension may "
                                    "be -1)")


def test_apply_masks_terminal_rows() -> None:
    array = _array()
    out = array.apply(torch.nn.Identity(), "observation")
    assert torch.equal(out, torch.tensor([[0.0, 0.0], [0.0, 0.0], [2.0, 2.0]]))
    model = torch.nn.Linear(2, 5)
    assert array.apply(model, "observation").shape == (3, 5)
    assert torch.equal(array.apply(model, "observation")[1], torch.zeros(5))


def test_apply_mask_on_2d_array_broadcasts_over_features() -> None:
    mask = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    array = StateArray({"observation": torch.ones(2, 2, 3), "mask": mask}, (2, 2))
    out = array.apply_mask(torch.ones(2, 2, 4))
    assert torch.equal(out.sum(-1), 4 * mask)


def test_state_array_update_returns_copy() -> None:
    array = _array()
    new = array.update("reward", torch.ones(3))
    assert isinstance(new, StateArray) and new.shape == (3,)
    assert torch.equal(new.reward, torch.ones(3))
    assert torch.equal(array.reward, torch.tensor([0.0, 1.0, 2.0]))


def test_state_array_terminated_truncated() -> None:
    array = StateArray(
        {
            "observation": torch.zeros(3, 1),
            "done": torch.tensor([True, True, False]),
            "mask": torch.tensor([0.0, 1.0, 1.0]),
        },
        (3,),
    )
    assert torch.equal(array.terminated, torch.tensor([True, False, False]))
    assert torch.equal(array.truncated, torch.tensor([False, True, False]))


def test_state_array_to_cpu() -> None:
    array = _array()
    moved = array.to(torch.device("cpu"))
    assert isinstance(moved, StateArray) and moved.shape == (3,)
    assert torch.equal(moved.observation, array.observation)
    assert moved["name"] == array["name"]


# -- MultiagentState ------------------------------------------------------------------------
def test_multiagent_state_requires_agent() -> None:
    with pytest.raises(KeyError, match="agent"):
        MultiagentState(torch.zeros(2))
    state = MultiagentState(torch.zeros(2), agent="player_1")
    assert state.agent == "player_1"
    assert state.reward == 0.0 and state.mask == 1.0
    copy = state.update("reward", 1.0)
    assert isinstance(copy, MultiagentState) and copy.agent == "player_1"


def test_multiagent_state_from_zoo() -> None:
    zoo = (np.zeros(2, dtype=np.float32), 1.0, True, False, {"legal": [0, 1]})
    state = MultiagentState.from_zoo("player_2", zoo)
    assert isinstance(state, MultiagentState)
    assert state.agent == "player_2"
    assert state.reward == 1.0 and state.done is True and state.mask == 0.0
    assert state["legal"] == [0, 1]
    truncated = MultiagentState.from_zoo("p", (np.zeros(2), 0.0, False, True, {}))
    assert truncated.truncated and truncated.mask == 1.0


def test_cat_of_single_states_is_one_line() -> None:
    """``StateArray.cat([state, state])`` was "'State' object has no attribute '_batched'"."""
    state = State({"observation": torch.zeros(4)})
    with pytest.raises(TypeError, match=r"got \['State', 'State'\]: stack single States with "
                                        r"State.array\(list_of_states\)"):
        StateArray.cat([state, state])
