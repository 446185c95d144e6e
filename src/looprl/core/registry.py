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
    """A name no registry holds, printed without the quotes ``KeyError`` adds."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Registry:
    """Names of one ``kind`` (``"policy"``) and what they stand for (an object, or a lazy path
    that ``get`` imports) in ``entries`` (shared, not copied); ``advice`` ends the line about an
    unknown name, which is said only after importing the modules in ``sources``."""

    def __init__(self, kind: str, entries: dict[str, Any] | None = None, advice: str = ""):
        self.kind, self.advice = kind, advice
        self.entries: dict[str, Any] = {} if entries is None else entries
        self.sources: list[str] = []

    def register(self, name: str, entry: Any) -> None:
        """Register ``entry`` (callable or an import path) under ``name``; ``ValueError`` if
        another holds it (the same definition run again, as a notebook cell, replaces it)."""
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
        """``None`` if ``name`` is registered, else the line saying it is not (with up to ``n``
        close names of the registered ones and ``also``)."""
        if name not in self.entries:
            for module in self.sources:
                importlib.import_module(module)
        if name in self.entries:
            return None
        hint = did_you_mean(str(name), [*self.entries, *also], n)
        known = ", ".join(self.names()) or "none"
        return f"unknown {self.kind} {name!r}.{hint} Registered: {known}{self.advice}"

    def get(self, name: str, also: Iterable[str] = (), n: int = 1) -> Any:
        """What ``name`` stands for, a lazy path imported; else ``UnknownName``."""
        problem = self.missing(name, also, n)
        if problem is not None:
            raise UnknownName(problem)
        entry = self.entries[name]
        if isinstance(entry, str):
            return import_object(entry, f"{self.kind} {name!r} registered as")
        return entry


def _definition(entry: Any) -> str | None:
    """Where ``entry`` is defined, ``module:qualname`` (a path: itself; ``None`` where that is
    not unique: an object, a lambda, a function made inside another)."""
    if isinstance(entry, str):
        return entry
    qualname = getattr(entry, "__qualname__", "<")
    return None if "<" in qualname else f"{getattr(entry, '__module__', '?')}:{qualname}"
