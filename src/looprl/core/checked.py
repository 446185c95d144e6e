"""What a ``Policy``'s ``rollout``/``analyze`` and a ``Trainer``'s ``step`` are handed, checked
in one place for every policy and trainer (looprl's and a user's own: ``Policy`` and
``Trainer`` wrap the methods a subclass defines). The checks cost nothing on the way that works:
they read the input when the call failed, and turn torch's words into a line naming the input."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from looprl.core.leaves import as_numpy
from looprl.core.namedarray import NamedArray
from looprl.core.suggest import a_type

#: what each checked method takes: the class, and how one is made
TAKES = {"rollout": ("RolloutRequest", "RolloutRequest(obs=NamedArray(obs=array))"),
         "analyze": ("SampleBatch", "SampleBatch(obs=..., action=..., ...), time-major [T, B]"),
         "step": ("SampleBatch", "SampleBatch(obs=..., action=..., reward=..., ...), "
                  "time-major [T + 1, B]")}


def checked(method: Callable) -> Callable:
    """``method`` (a policy's ``rollout``/``analyze`` or a trainer's ``step``) with its input
    checked: no ``NamedArray`` is a ``TypeError``, torch's errors on a wrong input a line
    naming it (``explained``)."""
    if getattr(method, "checked", False):
        return method
    name = method.__name__

    @functools.wraps(method)
    def call(self: Any, data: Any, *args: Any, **kwargs: Any) -> Any:
        if name == "step" and not isinstance(data, NamedArray):  # (a dict lacks no attribute)
            raise explained(self, name, data, TypeError())
        try:
            return method(self, data, *args, **kwargs)
        except (AttributeError, TypeError, RuntimeError, IndexError,
                FloatingPointError) as error:
            better = explained(self, name, data, error)
            if better is None:
                raise
            raise better from error

    call.checked = True  # type: ignore[attr-defined]
    return call


def explained(part: Any, method: str, data: Any, error: Exception) -> Exception | None:
    """The error a user can act on for ``part.method(data)``'s ``error`` (``None``: keep it)."""
    owner = f"{type(part).__name__}.{method}"
    if not isinstance(data, NamedArray):
        kind, example = TAKES[method]
        got = (f"a {type(data).__name__} of keys {list(data)[:8]}; build one with "
               f"{kind}.from_dict(d)" if isinstance(data, Mapping) else
               f"{a_type(data)} ({data!r:.40})")
        return TypeError(f"{owner} takes a {kind} ({example}), got {got}")
    if isinstance(error, FloatingPointError):
        fields = nonfinite_fields(data)
        return None if not fields else FloatingPointError(
            f"{owner}: the batch's {' and '.join(fields)} {'hold' if fields[1:] else 'holds'} "
            f"NaN or inf, and the loss is not finite on them ({error}); this is not a "
            "learning-rate problem: give it finite data (looprl.distributed.test_environment "
            "checks an environment's)")
    if isinstance(error, RuntimeError) and "shape" in str(error) and (
            method == "rollout" or "mat1 and mat2" in str(error)):  # (a layer's input width)
        lead = 1 if method == "rollout" else 2  # ([B, ...] rows, or [T, B, ...] segments)
        shape = getattr(data.obs, "shape", None) if "obs" in data else None
        shown = ({key: tuple(each[lead:]) for key, each in shape.items()}  # (a NamedArray's)
                 if isinstance(shape, dict) else None if shape is None else tuple(shape[lead:]))
        does = "act on an observation" if method == "rollout" else "learn from observations"
        return ValueError(f"{type(part).__name__} cannot {does} of shape {shown} ({error}): "
                          "give it the states of the environment it was built for (the shapes "
                          "its observation_space declares)")
    return None


def nonfinite_fields(batch: NamedArray, path: str = "") -> list[str]:
    """The (nested) fields of ``batch`` holding a NaN or an infinity."""
    found = []
    for key, leaf in batch.items():
        if isinstance(leaf, NamedArray):
            found += nonfinite_fields(leaf, f"{path}{key}.")
        elif leaf is not None:
            values = np.asarray(as_numpy(leaf))
            if values.dtype.kind == "f" and not np.isfinite(values).all():
                found.append(f"{path}{key}")
    return found
