"""ALL's ``store`` of every buffer of ``looprl.memory`` that has one (``store.check_transition``,
``store.check_action``): no action for a state that has not ended, or no States, is one line
(``TypeError``) naming the buffer (was: taken, or torch's "Could not infer dtype of NoneType",
NumPy's "can't convert np.ndarray of type numpy.object_" or "'dict' object has no attribute
'done'" from deep inside); what ALL allows (``store(None, None, state)``, no action after a state
that ended) is taken."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import looprl.memory as memory
from looprl.core import State, StateArray

BUILT = {
    "AtariReplayBuffer": lambda: memory.AtariReplayBuffer(20),
    "PrioritizedAtariReplayBuffer": lambda: memory.PrioritizedAtariReplayBuffer(20),
    "ExperienceReplayBuffer": lambda: memory.ExperienceReplayBuffer(10),
    "PrioritizedReplayBuffer": lambda: memory.PrioritizedReplayBuffer(10),
    "NStepReplayBuffer": lambda: memory.NStepReplayBuffer(2, 0.9,
                                                          memory.ExperienceReplayBuffer(10)),
    "NStepAdvantageBuffer": lambda: memory.NStepAdvantageBuffer(None, None, 2, 2),
    "GeneralizedAdvantageBuffer": lambda: memory.GeneralizedAdvantageBuffer(None, None, 2, 2),
}
STORING = sorted(name for name in memory.__all__ if hasattr(getattr(memory, name), "store"))


def _state(name: str, i: int, **kwargs: Any) -> State:
    """A single state of buffer ``name``'s kind (the Atari rings': a stack of 2x2 frames)."""
    if "Atari" in name:
        return State(torch.arange(i, i + 4, dtype=torch.uint8).view(4, 1, 1).expand(4, 2, 2),
                     **kwargs)
    return State(torch.full((2,), float(i)), **kwargs)


def _batch(name: str) -> StateArray:
    """Two environments' states, as a ``StateArray``."""
    return StateArray({"observation": torch.stack([_state(name, i).observation for i in (1, 2)])},
                      (2,))


def test_every_buffer_with_store_is_checked() -> None:
    assert sorted(BUILT) == STORING


@pytest.mark.parametrize("name", STORING)
def test_a_missing_action_is_one_line(name: str) -> None:
    buffer = BUILT[name]()
    if "Advantage" in name:  # (a batch: an action per environment, even one that ended)
        buffer.store(None, None, None)
        calls = [(_batch(name), torch.zeros(2))]
    else:
        first = _state(name, 1)
        buffer.store(None, None, first)  # (an episode's first call)
        buffer.store(_state(name, 5, done=True), None, first)  # (after an end: discarded)
        assert len(buffer) == 0
        calls = [(first, _state(name, 2))] + ([] if "Atari" in name else
                                               [(_batch(name), _batch(name))])
    for state, after in calls:
        with pytest.raises(TypeError, match=rf"^{name}\.store\(states?, actions?, [a-z_]+\): "
                                            r"action is None for a (state that has not ended; "
                                            r"pass the action taken in state|batch of states "
                                            r"\(a StateArray\); pass the actions taken in them)$"):
            buffer.store(state, None, after)
    assert len(buffer) == 0


@pytest.mark.parametrize("name", STORING)
def test_arguments_that_are_no_states_are_one_line(name: str) -> None:
    buffer = BUILT[name]()
    observation = _state(name, 1).observation
    for value in (observation.numpy(), {"observation": observation}):
        with pytest.raises(TypeError, match=rf"^{name}\.store\(.*\) takes (States, got "
                                            rf"{type(value).__name__} and|a StateArray of)"):
            buffer.store(value, np.zeros(2, dtype=np.int64), value)
    if "Advantage" in name:  # a batch's: a single State, ended or not, is none
        for state in (_state(name, 1), _state(name, 1, done=True)):
            with pytest.raises(TypeError, match=rf"^{name}\.store\(states, actions, rewards\) "
                                                "takes a StateArray of the n_envs=2 "
                                                "environments' states, got State: pass "
                                                "env.state_array$"):
                buffer.store(state, None, torch.zeros(1))
    if "Atari" in name:  # one environment's
        with pytest.raises(TypeError, match=rf"^{name}\.store\(state, action, next_state\) "
                                            "stores one environment's transitions, got a batch"):
            buffer.store(_batch(name), torch.zeros(2, dtype=torch.long), _batch(name))
    assert len(buffer) == 0
