"""``Registry``: things of one kind by name (policies, trainers, environments, meta
components), each an object or a lazy ``'package.module:Name'`` path, with one-line errors."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from looprl.core.imports import import_object, is_import_path
from looprl.core.suggest import did_you_mean

__all__ = ["Registry", "UnknownName"]


class UnknownName(KeyError, ValueError):
    """A name no registry holds: a ``KeyError`` (and a ``ValueError``) whose message prints
    without the quotes ``KeyError`` adds."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Registry:
    """Names of one ``kind`` (``"policy"``) and what they stand for: an object (a class, a
    factory) or a lazy ``'package.module:Name'`` path, imported by ``get``.

    ``entries`` is the dict it reads and writes (shared, not copied; default: a new one);
    ``advice`` ends the line about an unknown name; the modules in ``sources`` are imported
    (they register names) before a name is said to be unknown.
    """

    def __init__(self, kind: str, entries: dict[str, Any] | None = None, advice: str = ""):
        self.kind, self.advice = kind, advice
        self.entries: dict[str, Any] = {} if entries is None else entries
        self.sources: list[str] = []

    def register(self, name: str, entry: Any) -> None:
        """Register ``entry`` under ``name``; ``ValueError`` if ``name`` is taken by another
        (the same class or function defined again, as by a notebook cell run again or a module
        reloaded, takes its place), ``TypeError`` if it is no non-empty string or ``entry`` is
        neither callable nor an import path."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"{self.kind} names must be non-empty strings, got {name!r}")
        if not (callable(entry) or is_import_path(entry)):
            raise TypeError(f"{self.kind} {name!r}: register a class, a factory or a "
                            f"'package.module:Name' path, got {entry!r:.40}")
        taken = self.entries.get(name, entry)
        if taken is not entry and (_definition(taken) is None
                                   or _definition(taken) != _definition(entry)):
            named = taken if hasattr(taken, "__qualname__") else type(taken)  # (an object's)
            shown = taken if isinstance(taken, str) else (
                f"{getattr(named, '__module__', '?')}:{named.__qualname__}"
                f"{'' if named is taken else ' object'}")
            raise ValueError(f"{self.kind} {name!r} is already registered (to {shown}); pick "
                             "another name")
        self.entries[name] = entry

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self.entries)

    def missing(self, name: str, also: Iterable[str] = (), n: int = 1) -> str | None:
        """``None`` if ``name`` is registered, else the line saying it is not, with up to
        ``n`` close names (of the registered ones and ``also``)."""
        if name not in self.entries:
            for module in self.sources:
                importlib.import_module(module)
        if name in self.entries:
            return None
        hint = did_you_mean(str(name), [*self.entries, *also], n)
        known = ", ".join(self.names()) or "none"
        return f"unknown {self.kind} {name!r}.{hint} Registered: {known}{self.advice}"

    def get(self, name: str, also: Iterable[str] = (), n: int = 1) -> Any:
        """What ``name`` stands for, a lazy path imported; ``UnknownName`` (``missing``'s line)
        if it is not registered."""
        problem = self.missing(name, also, n)
        if problem is not None:
            raise UnknownName(problem)
        entry = self.entries[name]
        if isinstance(entry, str):
            return import_object(entry, f"{self.kind} {name!r} registered as")
        return entry


def _definition(entry: Any) -> str | None:
    """Where ``entry`` is defined, ``module:qualname`` (a path: itself; an object, a lambda or
    a function made inside another, which share a qualname with others: ``None``)."""
    if isinstance(entry, str):
        return entry
    qualname = getattr(entry, "__qualname__", "<")
    return None if "<" in qualname else f"{getattr(entry, '__module__', '?')}:{qualname}"
