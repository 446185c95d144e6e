"""ALL's ``store``: one line for what a buffer's ``store`` cannot take; the steps a replay
buffer's ``store`` gathered, checked and stacked as one segment for its ``put``. N-step windows:
the rows ``t .. t + n`` of a stream that one replay item holds, cut out of ``{field: rows}`` dicts
(``obs`` a tensor or a ``NamedArray``)."""

from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np
import torch

from looprl.core import SampleBatch, State, StateArray
from looprl.core.leaves import as_numpy
from looprl.core.namedarray import NamedArray, recursive_apply
from looprl.core.suggest import warn_once
from looprl.memory.segments import leaves

log = logging.getLogger(__name__)

__all__ = ["check_action", "check_transition", "fields", "gathered_segment", "goes_on",
           "n_step_windows", "same_rows", "shape_error", "stream_numbers", "window_rows"]

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
    if isinstance(action, str | bytes):  # (was NumPy's "can't convert np.ndarray of type")
        raise TypeError(f"{call}: action is a number per state (or an array), got text "
                        f"{action!r:.40}")
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
        numeric = [key for key in first if key not in _KEPT and _is_numeric(first[key])]
        dropped = [key for key in numeric if not all(key in s for s in states)]
        if dropped:  # (entries the first states have, and later ones lack: none kept)
            warn_once(log, "%s: the first States have the entries %s, some later ones do not: "
                      "they are left out of the samples (give every State the same entries "
                      "to keep them)", owner, dropped)
        return [key for key in numeric if key not in dropped]
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


def n_step_windows(rows: dict[str, Any], start: Any, n: int, cut: bool
                   ) -> tuple[dict[str, Any], Any]:
    """``({field: [k, n + 1, ...]}, waiting)``: the complete ``n``-step windows of ``rows``
    ``{field: [L, B, ...]}`` (tensors or all NumPy arrays), and per column how many wait. Row
    ``t`` of column ``b`` is a transition when ``start[b] <= t < L - 1`` and it ends no episode;
    its window is complete when its ``n`` steps are there or its episode ends by row ``L - 1``;
    with ``cut``, one running past row ``L - 1`` ends there, marked ``truncated``."""
    ended = rows["done"] | rows["truncated"]  # [L, B]
    xp = np if isinstance(ended, np.ndarray) else torch
    index, past, fits = _window_rows(ended.shape[0], n, None if xp is np else ended.device)
    moves = (index[:, :1] >= start) & ~ended[:-1]  # [L - 1, B]: transitions
    if cut:
        take, waiting = moves, xp.zeros_like(start)
    else:
        seen = ended.cumsum(0)  # an episode ends in rows t + 1 .. L - 1:
        take = moves & (fits | (seen[-1] > seen[:-1]))
        waiting = (moves & ~take).sum(0)
    t, b = xp.where(take)
    index, b = index[t], b[:, None]  # [k, n + 1] rows of columns [k, 1]
    items = fields(rows, lambda leaf: leaf[index, b])  # [L, B, ...] -> [k, n + 1, ...]
    items["truncated"] |= past[t] & ~items["done"]
    return items, waiting


@functools.lru_cache(maxsize=64)
def _window_rows(length: int, n: int, device: Any) -> tuple[Any, ...]:
    """Each window's rows ``[L - 1, n + 1]`` (clamped at row ``L - 1``), which run past it, and
    whether its ``n`` steps fit ``[L - 1, 1]`` (NumPy arrays for ``device`` ``None``)."""
    last = length - 1
    index = np.arange(last)[:, None] + np.arange(n + 1)
    past = (index >= last) & (index[:, -1:] > last)
    windows = index.clip(max=last), past, index[:, -1:] <= last
    return windows if device is None else tuple(torch.as_tensor(x, device=device)
                                                 for x in windows)


def fields(rows: dict[str, Any], fn: Any) -> dict[str, Any]:
    """``fn`` applied to every leaf of ``rows``."""
    return {key: recursive_apply(value, fn) for key, value in rows.items()}


def same_rows(held: Any, rows: Any) -> torch.Tensor:
    """Per column, whether the last row of ``held`` equals the first of ``rows``."""
    equal = [(a[-1] == b[0]).reshape(b.shape[1], -1).all(1)
             for a, b in zip(leaves(held), leaves(rows), strict=True)]
    return torch.stack(equal).all(0)


def window_rows(sample: Any, obs: Any) -> dict[str, Any]:
    """The rows ``{field: [T + 1, B, ...]}`` of a segment that ``n_step_windows`` reads."""
    return {"obs": obs, "action": torch.as_tensor(sample.action),
            "reward": torch.as_tensor(sample.reward), "done": torch.as_tensor(sample.done).bool(),
            "truncated": torch.as_tensor(sample.truncated).bool()}


def stream_numbers(stream: Any, shape: torch.Size) -> list[int]:
    """Each column's stream number, from a segment's ``stream`` ``[T + 1, B]``."""
    stream = torch.as_tensor(stream)
    if stream.shape != shape:
        raise ValueError(f"SampleBatch.stream has shape {tuple(stream.shape)}; it numbers each "
                         f"column's stream at every row, like reward's {tuple(shape)}")
    return stream[0].tolist()
