"""``Registry``: the one registry of names that policies, trainers, SRL environments and meta
components share (lazy import paths, refused duplicates, one-line "did you mean" errors)."""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

import pytest

from looprl.core import Policy, algorithm
from looprl.core.registry import Registry, UnknownName
from looprl.core.suggest import one_line
from looprl.environments import make
from looprl.meta.registry import component_class


def test_entries_are_objects_or_lazy_paths_imported_by_get():
    registry = Registry("widget", advice="; see the docs")
    registry.register("counter", dict)
    registry.register("path", "collections:OrderedDict")
    assert registry.get("counter") is dict
    from collections import OrderedDict
    assert registry.get("path") is OrderedDict
    assert registry.names() == ["counter", "path"]
    registry.register("broken", "collections:NoSuchThing")
    with pytest.raises(ImportError, match="widget 'broken' registered as 'collections:No"):
        registry.get("broken")


def test_a_notebook_cell_that_registers_its_class_runs_again():
    """The same class or function defined again (a cell run again, a module reloaded) takes
    its name back (was: "already registered (to __main__:Widget); pick another name" on the
    second run); another definition, another object, or another lambda or closure (their
    qualnames are shared) is refused as before."""
    registry = Registry("widget")
    cell = "class Widget:\n    pass\n\nregister('mine', Widget)\nregister('lazy', 'pkg.mod:W')\n"
    for _ in range(2):
        namespace = {"register": registry.register, "__name__": "__main__"}
        exec(cell, namespace)  # noqa: S102 - (a notebook's cell)
        assert registry.get("mine") is namespace["Widget"]
    same = functools.partial(list)
    registry.register("object", same)
    registry.register("object", same)
    registry.register("lambda", lambda: 1)

    def closure() -> Any:
        return lambda: 2

    registry.register("closure", closure())
    for name, other in (("mine", dict), ("object", functools.partial(list)), ("lazy", "a:W"),
                        ("lambda", lambda: 3), ("closure", closure())):
        with pytest.raises(ValueError, match=f"widget '{name}' is already registered"):
            registry.register(name, other)


def test_a_taken_name_and_a_name_that_is_no_string_are_refused():
    entries = {"a": dict}
    registry = Registry("widget", entries)
    with pytest.raises(ValueError, match=r"widget 'a' is already registered \(to builtins:dict\)"
                                         "; pick another name"):
        registry.register("a", list)
    with pytest.raises(ValueError, match=r"\(to pkg.mod:Name\)"):
        Registry("widget", {"b": "pkg.mod:Name"}).register("b", list)
    # (was "functools:functools.partial(<class 'list'>)", an object's repr)
    with pytest.raises(ValueError, match=r"\(to functools:partial object\); pick another"):
        Registry("widget", {"b": functools.partial(list)}).register("b", list)
    for bad in ("", None, 3):
        with pytest.raises(TypeError, match="widget names must be non-empty strings"):
            registry.register(bad, list)
    registry.register("c", list)
    assert entries == {"a": dict, "c": list}  # (the dict it was given, not a copy)
    # (was accepted, then "'int' object is not callable" where a policy of it was made)
    for bad in (3, "MyPolicy", None):
        with pytest.raises(TypeError, match=r"widget 'd': register a class, a factory or a "
                                            r"'package.module:Name' path, got"):
            registry.register("d", bad)


def test_an_unknown_name_is_one_line_with_close_names_and_the_advice():
    registry = Registry("widget", {"alpha": 1, "beta": 2}, advice="; register your own")
    assert registry.missing("alpha") is None
    with pytest.raises(UnknownName) as error:
        registry.get("alpah")
    assert isinstance(error.value, KeyError) and isinstance(error.value, ValueError)
    assert str(error.value) == one_line(error.value) == (
        "unknown widget 'alpah'. Did you mean 'alpha'? Registered: alpha, beta; register "
        "your own")
    line = registry.missing("gama", also=["gamma", "delta"], n=2)
    assert line.startswith("unknown widget 'gama'. Did you mean 'gamma'") and "'delta'" not in line
    assert Registry("widget").missing("x") == "unknown widget 'x'. Registered: none"


def test_sources_are_imported_before_a_name_is_unknown(tmp_path, monkeypatch):
    registry = Registry("widget")
    holder = types.ModuleType("widget_holder")
    holder.REGISTRY = registry
    monkeypatch.setitem(sys.modules, "widget_holder", holder)
    (tmp_path / "widgets_here.py").write_text(
        "from widget_holder import REGISTRY\nREGISTRY.register('late', int)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.sources.append("widgets_here")
    try:
        assert registry.get("late") is int
    finally:
        sys.modules.pop("widgets_here", None)


def test_policies_environments_and_meta_components_share_the_registry():
    with pytest.raises(UnknownName) as policy:
        Policy(type_="actor-critic-separat")
    with pytest.raises(UnknownName) as environment:
        make("CartPol-v1")
    with pytest.raises(UnknownName) as component:
        component_class("novel_d")
    assert one_line(policy.value).startswith(
        "unknown policy 'actor-critic-separat'. Did you mean 'actor-critic-separate'? "
        "Registered: ")
    assert one_line(environment.value).startswith(
        "unknown environment 'CartPol-v1'. Did you mean 'CartPole-v1'")
    assert one_line(component.value).startswith(
        "unknown meta component 'novel_d'. Did you mean 'noveld'? Registered: cosine_lr")
    assert one_line(component.value).endswith(", or an import path 'package.module:MyComponent'")


def test_a_registered_factory_is_built_with_seed_004s_args(monkeypatch):
    monkeypatch.setattr(algorithm._POLICIES, "entries", dict(algorithm._POLICIES.entries))

    def factory(scale: int = 1, offset: int = 0) -> tuple[int, int]:
        return scale, offset

    algorithm.register_policy("registry-test-factory", factory)
    assert Policy(type_="registry-test-factory", scale=2, args={"offset": 3}) == (2, 3)
    assert Policy(type_="registry-test-factory", args=None) == (1, 0)


def test_object_path_names_functions_inside_a_partial_by_import_path() -> None:
    """``object_path`` (run.json's names of model constructors): a ``functools.partial``'s
    function and its function arguments by import path, none by memory address."""
    import functools

    from looprl.core.imports import import_object, object_path

    path = object_path(functools.partial(import_object, what=object_path))
    assert path == ("functools.partial(looprl.core.imports:import_object, "
                    "what=looprl.core.imports:object_path)")
    assert object_path("pkg.mod:fn") == "pkg.mod:fn" and " at 0x" not in path
