"""Objects by import path (``'my_pkg.envs:MyEnv'``) and optional extras' modules."""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any

__all__ = ["MERGED", "MOVED", "current_module", "import_extra", "import_module", "import_object",
           "is_import_path", "object_path"]

#: classes an older looprl had elsewhere (in its files, in import paths) -> their module now
MOVED = {("looprl.environments.gym_helpers", "Wrappers"): "looprl.environments.wrappers"}
#: the modules an older looprl had, merged since -> the module that holds their classes now
MERGED = {
    **{f"looprl.presets.atari.{name}": "looprl.presets.atari.presets" for name in (
        "a2c", "c51", "common", "ddqn", "dqn", "ppg", "ppo", "rainbow", "vac", "vpg", "vqn",
        "vsarsa")},
    **{f"looprl.{old}": f"looprl.{new}" for old, new in (
        ("presets.classic_control.c51", "presets.classic_control.dqn"),
        ("presets.classic_control.rainbow", "presets.classic_control.dqn"),
        ("presets.classic_control.vsarsa", "presets.classic_control.vqn"),
        ("presets.classic_control.vac", "presets.classic_control.a2c"),
        ("presets.classic_control.vpg", "presets.classic_control.a2c"),
        ("presets.classic_control.ppg", "presets.classic_control.ppo"),
        ("presets.continuous.sac", "presets.continuous.ddpg"),
        ("presets.continuous.td3", "presets.continuous.ddpg"),
        ("approximation.identity", "approximation.approximation"),
        ("approximation.v_network", "approximation.q_network"),
        ("approximation.feature_network", "approximation.q_network"),
        ("approximation.checkpointer", "approximation.target"),
        ("nn.noisy", "nn.layers"), ("nn.actor_critic", "nn.cnn"),
        ("policies.gaussian", "policies.deterministic"),
        ("policies.softmax", "policies.deterministic"),
        ("policies.exploration", "policies.greedy"), ("memory.advantages", "memory.samples"),
        ("meta.space", "meta.plr"), ("meta.transition_log", "meta.hub"))}}


def current_module(module: str, name: str) -> str:
    """The module that holds ``name`` now, where an older looprl had it in ``module``."""
    return MOVED.get((module, name), MERGED.get(module, module))


def is_import_path(text: Any) -> bool:
    """Whether ``text`` has the ``package.module:Name`` form (a colon after a module name)."""
    if not isinstance(text, str):
        return False
    module, sep, name = text.partition(":")
    return bool(sep and module and name) and "/" not in text


def import_module(name: str, what: str) -> Any:
    """``importlib.import_module(name)``, or a one-line ``ImportError`` starting with ``what``."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise ImportError(f"{what}: cannot import {name!r} ({error}); is its package on "
                          "PYTHONPATH?") from error


def import_object(path: str, what: str) -> Any:
    """The object ``path`` (``pkg.module:Name`` or ``pkg.module.Name``) names, for ``what``."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"{what} {path!r}: expected an import path 'package.module:Name'")
    module_name = current_module(module_name, attr.partition(".")[0])  # (an older looprl's)
    obj = import_module(module_name, f"{what} {path!r}")
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ImportError(f"{what} {path!r}: module {module_name!r} has no attribute "
                              f"{attr!r}")
        obj = getattr(obj, part)
    return obj


def object_path(value: Any) -> str:
    """``value``'s import path, ``import_object``'s inverse (``module:qualname`` of a function
    or class, in a ``functools.partial`` too; a string itself); else the ``repr``."""
    if isinstance(value, str):
        return value
    if isinstance(value, functools.partial):  # (its repr holds the function's memory address)
        shown = [object_path(x) if callable(x) else repr(x) for x in value.args] + [
            f"{k}={object_path(v) if callable(v) else repr(v)}" for k, v in value.keywords.items()]
        return f"functools.partial({', '.join([object_path(value.func), *shown])})"
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if (inspect.isfunction(value) or inspect.isclass(value)) and module and qualname:
        return f"{module}:{qualname}"
    return repr(value)


def import_extra(module: str, needs: str, extra: str) -> Any:
    """The module ``module``, or an ``ImportError`` saying which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{needs}: pip install looprl[{extra}]") from None
