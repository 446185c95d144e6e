"""``Hyperparameter``: one ``hp/*`` key that a part declares."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Hyperparameter", "merge_hyperparameters"]


@dataclass(frozen=True)
class Hyperparameter:
    """How to read (``get``, no side effects) and change (``set``) one ``hp/*`` value."""

    get: Callable[[], Any]
    set: Callable[[Any], None]
    kind: type = float

    @classmethod
    def attribute(cls, owner: Any, name: str, kind: type = float) -> Hyperparameter:
        """The attribute ``name`` of ``owner``, new values converted to ``kind``."""
        return cls(lambda: getattr(owner, name),
                   lambda value: setattr(owner, name, kind(value)), kind)


def merge_hyperparameters(*declared: dict[str, Hyperparameter]) -> dict[str, Hyperparameter]:
    """The keys of several parts; a shared key is read from the first and set on all."""
    found: dict[str, list[Hyperparameter]] = {}
    for part in declared:
        for key, hyperparameter in part.items():
            found.setdefault(key, []).append(hyperparameter)
    return {key: hps[0] if len(hps) == 1 else _all(hps) for key, hps in found.items()}


def _all(hyperparameters: list[Hyperparameter]) -> Hyperparameter:
    def set_all(value: Any) -> None:
        for hyperparameter in hyperparameters:
            hyperparameter.set(value)

    first = hyperparameters[0]
    return Hyperparameter(first.get, set_all, first.kind)
