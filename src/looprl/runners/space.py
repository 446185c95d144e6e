"""Search spaces as plain data: name (a preset hyperparameter or ``hp/*`` key) -> spec, a spec
``{"type": "float" | "int", "low", "high"[, "log", "step"]}``, ``{"type": "categorical",
"choices": [...]}`` or ``(low, high[, "log"])``; without ``"type"``: the current value's."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from looprl.core.ranges import range_of
from looprl.core.suggest import did_you_mean, is_number
from looprl.presets.all_names import hyperparameter_hint

TYPES: tuple[str, ...] = ("categorical", "float", "int")
SPEC_KEYS: tuple[str, ...] = ("choices", "high", "log", "low", "step", "type")


class SearchSpaceError(ValueError):
    """A search space entry that cannot be searched (the message says why)."""


@dataclass(frozen=True)
class Dimension:
    """One searched hyperparameter: a numeric range (``float``/``int``) or ``choices``."""

    name: str
    kind: str
    low: float = 0.0
    high: float = 1.0
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        _check_type(self.name, self.kind)
        if self.kind == "categorical" and not self.choices:
            raise _entry_error(self.name, "a categorical entry needs a non-empty list of 'choices'")

    def _warp(self, value: float) -> float:
        return math.log(value) if self.log else float(value)

    def decode(self, unit: float) -> Any:
        """The value at ``unit`` in [0, 1] (clipped; ints rounded; of ``choices``, by share)."""
        unit = float(np.clip(unit, 0.0, 1.0))
        if self.kind == "categorical":
            return self.choices[min(int(unit * len(self.choices)), len(self.choices) - 1)]
        low, high = self._warp(self.low), self._warp(self.high)
        value = low + unit * (high - low)
        value = min(max(math.exp(value) if self.log else value, self.low), self.high)
        if self.step:  # on the grid low, low + step, ..., as Optuna draws it
            steps = math.floor((self.high - self.low) / self.step + 1e-9)
            value = self.low + min(round((value - self.low) / self.step), steps) * self.step
            value = round(value, 12)
        return int(np.clip(round(value), self.low, self.high)) if self.kind == "int" else value

    def encode(self, value: Any) -> float:
        """The unit coordinate of ``value`` (0.5 for ``None``; of a choice, its share's middle)."""
        if value is None:
            return 0.5
        if self.kind == "categorical":
            if value not in self.choices:
                raise _entry_error(self.name, f"{value!r} is none of its choices "
                                              f"{list(self.choices)!r}")
            return (self.choices.index(value) + 0.5) / len(self.choices)
        value = min(max(float(value), self.low), self.high)
        low, high = self._warp(self.low), self._warp(self.high)
        return (self._warp(value) - low) / (high - low)


def search_mapping(value: Any, argument: str, example: str = "lr") -> dict[str, Any]:
    """``value`` (``search_targets``, ``search_space``, ``mutations``): a mapping or ``None``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SearchSpaceError(f"{argument} must map names to ranges, e.g. "
                               f"{argument}={{{example}: [1e-4, 1e-2, log]}}, got {value!r}")
    return dict(value)


def parse_search_space(space: Mapping[str, Any], current: Mapping[str, Any],
                       owner: str = "the preset") -> list[Dimension]:
    """One ``Dimension`` per entry of ``space``, checked (``SearchSpaceError``) against
    ``current`` (each searchable name's value) and the ranges of ``owner`` (a preset's name)."""
    if not isinstance(space, Mapping) or not space:
        raise SearchSpaceError("The search space must be a non-empty dict: name -> spec")
    return [_dimension(name, spec, current, owner) for name, spec in space.items()]


def _dimension(name: str, spec: Any, current: Mapping[str, Any], owner: str) -> Dimension:
    if name not in current:
        valid = sorted(current)
        raise SearchSpaceError(f"{name!r} is not a hyperparameter of {owner}."
                               f"{hyperparameter_hint(name, valid)} Valid: {', '.join(valid)}")
    spec = _as_dict(name, spec)
    default = current[name]
    kind = spec.get("type", _kind_of(default, spec))
    _check_type(name, kind)
    if kind == "categorical":
        choices = spec.get("choices")
        if not isinstance(choices, (list, tuple)) or not choices:
            raise _entry_error(name, f"a categorical entry needs a non-empty list of 'choices', "
                                     f"got {choices!r}")
        _check_values(name, choices, owner)
        return Dimension(name, "categorical", choices=tuple(choices))
    if isinstance(default, (bool, str)):  # a range fits the hyperparameter: ints for ints
        raise SearchSpaceError(f"{name!r} is a {type(default).__name__} hyperparameter "
                               f"(now {default!r}): use type 'categorical' with choices")
    if kind == "float" and isinstance(default, int):
        raise SearchSpaceError(f"{name!r} is an int hyperparameter (now {default!r}): "
                               "use type 'int'")
    return _numeric(name, kind, spec, owner)


def _entry_error(name: str, problem: str) -> SearchSpaceError:
    return SearchSpaceError(f"Search space entry {name!r}: {problem}")


def _as_dict(name: str, spec: Any) -> dict[str, Any]:
    """A spec dict from a dict, ``(low, high)`` or ``(low, high, "log")``."""
    if isinstance(spec, Mapping):
        if unknown := sorted(set(spec) - set(SPEC_KEYS)):
            raise _entry_error(name, f"unknown key {unknown[0]!r}; valid keys: "
                                     f"{', '.join(SPEC_KEYS)}")
        return dict(spec)
    if isinstance(spec, (tuple, list)) and len(spec) in (2, 3):
        if len(spec) == 3 and spec[2] not in ("log", True):
            raise _entry_error(name, f"the third element of {tuple(spec)!r} must be 'log'")
        return {"low": spec[0], "high": spec[1], "log": len(spec) == 3}
    raise _entry_error(name, "expected a dict with 'type', 'low', 'high' (or 'choices'), or a "
                       f"tuple (low, high[, 'log']); got {spec!r}")


def _kind_of(default: Any, spec: Mapping[str, Any]) -> str:
    if "choices" in spec:
        return "categorical"
    return "int" if isinstance(default, int) and not isinstance(default, bool) else "float"


def numeric_range(name: str, spec: Any, current: Any) -> Dimension:
    """The numeric range ``spec`` gives ``name``, an int one for an int ``current`` (PBT's)."""
    return _numeric(name, _kind_of(current, {}), _as_dict(name, spec))


def _numeric(name: str, kind: str, spec: Mapping[str, Any], owner: str = "") -> Dimension:
    if "low" not in spec or "high" not in spec:
        raise _entry_error(name, f"a {kind} range needs 'low' and 'high'")
    low, high, log = spec["low"], spec["high"], spec.get("log", False)
    if not isinstance(log, bool):
        raise _entry_error(name, f"log must be true or false, got {log!r}")
    if not all(is_number(x) and math.isfinite(x) for x in (low, high)):
        raise _entry_error(name, f"low and high must be finite numbers, got {low!r} and {high!r}")
    if not low < high:
        raise _entry_error(name, f"empty range, low ({low!r}) must be < high ({high!r})")
    if log and low <= 0:
        raise _entry_error(name, f"a log range needs low > 0, got {low!r}")
    if kind == "int" and not (float(low).is_integer() and float(high).is_integer()):
        raise _entry_error(name, f"an int range needs int bounds, got {low!r} and {high!r}")
    _check_values(name, (low, high), owner)
    step = spec.get("step")
    if step is not None:
        if not (is_number(step) and math.isfinite(step) and step > 0):
            raise _entry_error(name, f"step must be a number > 0, got {step!r}")
        if log:
            raise _entry_error(name, "a log range takes no step (drop 'step' or 'log')")
        if kind == "int" and not float(step).is_integer():
            raise _entry_error(name, f"an int range needs an int step, got {step!r}")
        if step > high - low:
            raise _entry_error(name, f"step {step!r} is wider than the range ({high - low!r})")
        step = int(step) if kind == "int" else float(step)
    return Dimension(name, kind, low, high, log, step)


def _check_type(name: str, kind: Any) -> None:
    if kind not in TYPES:
        raise _entry_error(name, f"unknown type {kind!r}.{did_you_mean(str(kind), TYPES)} "
                                 f"Valid: {', '.join(TYPES)}")


def _check_values(name: str, values: Any, owner: str) -> None:
    """Every value of the entry (bounds, choices) is one ``name`` can take (``range_of``)."""
    valid = range_of(name, owner)
    for value in values:
        if valid is not None and not valid.holds(value):
            raise _entry_error(name, f"{name} must be {valid.text}, got {value!r}")
