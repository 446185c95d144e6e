"""ALL's ``store``: one line for what a buffer's ``store`` cannot take; the steps a replay
buffer's ``store`` gathered, checked and stacked as one segment for its ``put``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from looprl.core import SampleBatch, State, StateArray
from looprl.core.leaves import as_numpy
from looprl.core.namedarray import NamedArray

__all__ = ["check_action", "check_transition", "gathered_segment", "goes_on", "shape_error"]

#: the entries of a ``State`` that a transition's own fields hold (the rest go with ``obs``)
_KEPT = frozenset({"observation", "reward", "done", "mask"})


def check_transition(owner: str, state: Any, action: Any, next_state: Any, batches: bool = True
                     ) -> None:
    """One line (``TypeError``) for what ``owner``'s ``store(state, action, next_state)`` cannot
    take: no ``State`` s, batches unless it takes ``batches``, or no action (``check_action``)."""
    call = f"{owner}.store(state, action, next_state)"
    if state is not None and not (isinstance(state, State) and isinstance(next_state, State)):
        raise TypeError(f"{call} takes States, got {type(state).__name__} and "
                        f"{type(next_state).__name__}: store env.state (or State({{'observation': "
                        "obs, 'reward': r, 'done': d}))")
    if not batches and (isinstance(state, StateArray) or isinstance(next_state, StateArray)):
        raise TypeError(f"{call} stores one environment's transitions, got a batch (a "
                        "StateArray): store one environment's States, or put several "
                        "environments' segments")
    check_action(call, state, action)


def check_action(call: str, state: Any, action: Any) -> None:
    """One line (``TypeError``) naming ``call`` for an ``action`` of ``None`` out of a ``state``
    other than ``None`` or a single state that ended (ALL's first and discarded actions)."""
    if action is None and state is not None and (isinstance(state, StateArray)
                                                 or not bool(state.done)):
        what = ("a batch of states (a StateArray); pass the actions taken in them"
                if isinstance(state, StateArray) else
                "a state that has not ended; pass the action taken in state")
        raise TypeError(f"{call}: action is None for {what}")


def gathered_segment(owner: str, steps: list[tuple[Any, State]], known: Any) -> SampleBatch:
    """The ``(action, next state)`` ``steps`` (the first: ``(None, state)``) as one segment
    ``[L, B]``, a stream per column; ``known``: the windows stored so far, or ``None``."""
    actions, states = zip(*steps)
    column = not isinstance(states[0], StateArray)

    def stacked(values: Any) -> np.ndarray:
        x = np.stack([as_numpy(value) for value in values])
        return x[:, None] if column else x

    def checked(what: str, values: Any, *fields: str) -> np.ndarray:  # (of the stored shape)
        leaf = None if known is None else known[fields[0]]
        if isinstance(leaf, NamedArray):
            leaf = leaf[fields[1]]
        shape = None if leaf is None else tuple(leaf.shape[2:])
        try:
            rows = stacked(values)
        except ValueError:  # (of different shapes)
            rows = None
        if rows is not None and (shape is None or rows.shape[2:] == shape):
            return rows
        raise shape_error(owner, what, values, shape)

    action = checked("the actions", actions[1:], "action")
    ended, terminal = stacked([s.done for s in states]), stacked([s.mask for s in states]) == 0
    reward = stacked([s.reward for s in states]).astype(np.float32)
    obs = checked("the observations", [s.observation for s in states], "obs", "obs")
    if extra := _entries_kept(owner, states, known):  # (an action mask: kept as the collectors do)
        obs = NamedArray(obs=obs, **{key: checked(f"the States' {key!r} entries",
                                                  [s[key] for s in states], "obs", key)
                                     for key in extra})
    return SampleBatch(
        obs=obs, reward=reward,
        action=np.concatenate([action, np.zeros_like(action[:1])]),
        done=ended & terminal, truncated=ended & ~terminal,
        stream=np.tile(np.arange(reward.shape[1]), (len(reward), 1)))


def _entries_kept(owner: str, states: tuple[State, ...], known: Any) -> list[str]:
    """The further entries of ``states`` kept: the numeric ones all the first stored states had
    (as ALL's ``State.array``); a state without one is a one-line ``ValueError``."""
    if known is None:
        first = states[0]
        return [key for key in first if key not in _KEPT and _is_numeric(first[key])
                and all(key in s for s in states)]
    obs = known["obs"]
    kept = [key for key in obs.keys() if key != "obs"] if isinstance(obs, NamedArray) else []
    for key in kept:
        if not all(key in s for s in states):
            raise ValueError(f"{owner}.store: a State without the entry "
                             f"{key!r}, which the States stored first had (it is kept with "
                             "each transition); store States with the same entries (drop "
                             f"{key!r} from all of them, or give each one)")
    return kept


def _is_numeric(value: Any) -> bool:
    """Whether a State's entry is a number, or a tensor or an array of numbers (storable)."""
    if isinstance(value, torch.Tensor):
        return not value.is_complex()
    try:
        return np.asarray(value).dtype.kind in "biuf"
    except (TypeError, ValueError):  # (a ragged list)
        return False


def shape_error(owner: str, what: str, values: list[Any], shape: tuple[int, ...] | None
                 ) -> ValueError:
    """The ``ValueError`` line of ``what`` in the shapes of ``values``, not the stored ``shape``."""
    shapes = sorted({tuple(np.shape(as_numpy(value))) for value in values}, key=str)
    stored = "" if shape is None else f" after ones of shape {shape} were stored"
    return ValueError(f"{owner}.store: {what} come in shapes {shapes}{stored}; a buffer keeps "
                      "one shape of each (a buffer per environment): give them one shape")


def goes_on(last: State, state: State) -> bool:
    """Whether ``state`` goes on from ``last``, where ``store``'s steps stopped: ``last`` itself,
    or one of the same kind and observation (single states: no episode end)."""
    if last is state:
        return True
    single = not isinstance(state, StateArray)
    if single == isinstance(last, StateArray) or (single and last.done):
        return False
    return torch.equal(torch.as_tensor(last.observation), torch.as_tensor(state.observation))
