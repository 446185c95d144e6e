"""Every public class and function (a name in a looprl module's ``__all__``) has a docstring,
and its public methods annotate their parameters and return type (ARCHITECTURE.md: typed public
APIs with docstrings)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import pytest

import looprl


def _public_objects() -> list[Any]:
    objects: dict[int, Any] = {}
    for info in pkgutil.walk_packages(looprl.__path__, "looprl."):
        try:
            module = importlib.import_module(info.name)
        except ImportError as error:  # (an extra not installed here)
            pytest.skip(f"{info.name}: {error}")
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) \
                    and obj.__module__.startswith("looprl"):
                objects[id(obj)] = obj
    return list(objects.values())


def _unannotated(function: Any) -> list[str]:
    """``function``'s parameters (and ``return``) without an annotation."""
    signature = inspect.signature(function)
    missing = [p.name for p in signature.parameters.values()
               if p.annotation is inspect.Parameter.empty and p.name not in ("self", "cls")
               and not p.name.startswith("_")]  # (what Ray's decorators add)
    if signature.return_annotation is inspect.Signature.empty and function.__name__ != "__init__":
        missing.append("return")
    return missing


def test_every_public_name_has_a_docstring_and_annotations() -> None:
    objects = _public_objects()
    assert len(objects) > 500  # (the walk found the package)
    undocumented = [f"{o.__module__}.{o.__qualname__}" for o in objects if not inspect.getdoc(o)]
    assert not undocumented, undocumented
    unannotated = []
    for obj in objects:
        functions = [obj] if inspect.isfunction(obj) else [
            f for name, f in vars(obj).items() if inspect.isfunction(f)
            and (name == "__init__" or not name.startswith("_"))
            and (f.__module__ or "").startswith("looprl")]  # (not the NamedArray fields' __init__)
        unannotated += [f"{f.__module__}.{f.__qualname__}: {', '.join(missing)}"
                        for f in functions if (missing := _unannotated(f))]
    assert not unannotated, unannotated
