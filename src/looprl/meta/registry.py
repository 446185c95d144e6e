"""Meta components by name or import path, for configurations: ``make_component('rnd',
lr=1e-4)``, ``make_component('my_pkg.module:MyComponent', scale=0.1)``, or Hydra's form
``make_component('mine', _target_='my_pkg.module.MyComponent', scale=0.1)``."""

from __future__ import annotations

from typing import Any

from looprl.core.imports import import_object, is_import_path
from looprl.core.registry import Registry
from looprl.core.suggest import check_flag, did_you_mean, is_number
from looprl.meta.component import MetaComponent, accepted_parameters, component_failure
from looprl.meta.plr import PLR, SPaCE
from looprl.meta.reset import NetworkReset
from looprl.meta.rnd import RND, NovelD
from looprl.meta.schedules import CosineLRSchedule, HPSchedule

__all__ = ["COMPONENTS", "component_class", "make_component", "own_name"]

COMPONENTS: dict[str, type[MetaComponent]] = {
    "rnd": RND,
    "noveld": NovelD,
    "cosine_lr": CosineLRSchedule,
    "hp_schedule": HPSchedule,
    "network_reset": NetworkReset,
    "plr": PLR,
    "space": SPaCE,
}
_COMPONENTS = Registry("meta component", COMPONENTS,
                       advice=", or an import path 'package.module:MyComponent'")


def own_name(class_name: str) -> str | None:
    """looprl's name of the component Mighty's class ``class_name`` is (``RND``: ``rnd``,
    ``PrioritizedLevelReplay``: ``plr``), or ``None``."""
    by_class = {cls.__name__: name for name, cls in COMPONENTS.items()}
    return {**by_class, "PrioritizedLevelReplay": "plr"}.get(class_name)


def component_class(name: str) -> type[MetaComponent]:
    """The class ``name`` stands for: a name in ``COMPONENTS`` or an import path (``pkg.mod:Class``
    or ``pkg.mod.Class``) of a ``MetaComponent`` subclass (else ``UnknownName``, ``TypeError``)."""
    if name in COMPONENTS or not (is_import_path(name) or "." in name):
        return _COMPONENTS.get(name)
    try:
        cls = import_object(name, "meta component")
    except ImportError as error:  # (Mighty's path of a component looprl has: its name)
        own = own_name(name.replace(":", ".").rpartition(".")[2])
        if own is None:
            raise
        raise ImportError(f"{error}; looprl's own is {own!r}: meta=[{own}]") from None
    if not (isinstance(cls, type) and issubclass(cls, MetaComponent)):
        what = f"the class {cls.__name__}" if isinstance(cls, type) else f"a {type(cls).__name__}"
        raise TypeError(f"meta component {name!r} is {what}, not a subclass of "
                        "looprl.meta.MetaComponent")
    return cls


def make_component(name: str, **kwargs: Any) -> MetaComponent:
    """The component ``name`` (or Hydra's ``_target_`` argument) built with ``kwargs``; a
    one-line ``ValueError`` for an unknown, missing or mistyped argument, and a one-line
    ``MetaComponentFailure`` for an error its ``__init__`` raised."""
    if isinstance(name, type) and issubclass(name, MetaComponent):  # (the class itself)
        name = next((key for key, cls in COMPONENTS.items() if cls is name),
                    f"{name.__module__}:{name.__qualname__}")
    cls = component_class(str(kwargs.pop("_target_", name)))
    parameters = accepted_parameters(cls)
    unknown = [key for key in kwargs if key not in parameters]
    if unknown:
        raise ValueError(f"{name!r} ({cls.__name__}) got unknown argument(s) "
                         f"{', '.join(map(repr, unknown))}.{did_you_mean(unknown[0], parameters)}"
                         f" Accepted: {', '.join(parameters)}")
    missing = [key for key, p in parameters.items() if p.default is p.empty and key not in kwargs]
    if missing:
        raise ValueError(f"{name!r} ({cls.__name__}) needs the argument(s) "
                         f"{', '.join(missing)}, e.g. {missing[0]}=... (meta.{name}.{missing[0]}"
                         " in a config)")
    for key, value in kwargs.items():  # (a config's text where a number or a switch belongs)
        default = parameters[key].default
        if is_number(default) and value is not None and not is_number(value):
            raise ValueError(f"{name!r} ({cls.__name__}) argument {key} must be a number "
                             f"(like {default!r}), got {value!r}")
        if isinstance(default, bool):
            check_flag(f"{name!r} ({cls.__name__}) argument {key}", value)
    try:
        return cls(**kwargs)
    except Exception as error:  # (a user's component whose __init__ raises: one line)
        failure = component_failure(error, cls.__init__, "construction")
        if failure is None:  # (looprl's own one-line errors)
            raise
        raise failure from error
