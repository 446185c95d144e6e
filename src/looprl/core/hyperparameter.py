"""``Hyperparameter``: one ``hp/*`` key that a policy, trainer, agent or approximation declares
(``looprl.meta.hyperparameters`` lists every key and who declares it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Hyperparameter", "merge_hyperparameters"]


@dataclass(frozen=True)
class Hyperparameter:
    """How to read one ``hp/*`` value and how to change it.

    Attributes:
        get: the current value, without side effects.
        set: applies a new value (converted to ``kind`` by the declaring object).
        kind: ``float`` or ``int`` (``hp/epsilon`` may also be a list, one per env copy).
    """

    get: Callable[[], Any]
    set: Callable[[Any], None]
    kind: type = float

    @classmethod
    def attribute(cls, owner: Any, name: str, kind: type = float) -> Hyperparameter:
        """The public attribute ``name`` of ``owner``, whose new values are converted to
        ``kind``."""
        return cls(lambda: getattr(owner, name),
                   lambda value: setattr(owner, name, kind(value)), kind)

    def on_set(self, action: Callable[[], None]) -> Hyperparameter:
        """This hyperparameter, with ``action()`` run before each ``set``."""

        def set_value(value: Any) -> None:
            action()
            self.set(value)

        return Hyperparameter(self.get, set_value, self.kind)


def merge_hyperparameters(*declared: dict[str, Hyperparameter]) -> dict[str, Hyperparameter]:
    """The keys of several parts as one dict. A key that more than one part declares (the
    ``hp/tau`` of an actor's and of a critic's target) is read from the first and set on all."""
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
