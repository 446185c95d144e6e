"""Meta components by name, for configurations: ``make_component('rnd', lr=1e-4)``."""

from __future__ import annotations

import inspect
from typing import Any

from looprl.core.suggest import did_you_mean
from looprl.meta.component import MetaComponent
from looprl.meta.plr import PLR
from looprl.meta.reset import NetworkReset
from looprl.meta.rnd import RND, NovelD
from looprl.meta.schedules import CosineLRSchedule, HPSchedule
from looprl.meta.space import SPaCE

__all__ = ["COMPONENTS", "make_component"]

COMPONENTS: dict[str, type[MetaComponent]] = {
    "rnd": RND,
    "noveld": NovelD,
    "cosine_lr": CosineLRSchedule,
    "hp_schedule": HPSchedule,
    "network_reset": NetworkReset,
    "plr": PLR,
    "space": SPaCE,
}


def accepted_arguments(cls: type) -> list[str]:
    """The keyword arguments ``cls(...)`` accepts, following ``**kwargs`` up the classes."""
    names: list[str] = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass in (MetaComponent, object):
            continue
        parameters = inspect.signature(klass.__init__).parameters.values()
        names += [p.name for p in parameters
                  if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                  and p.name not in names]
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            break
    return names


def make_component(name: str, **kwargs: Any) -> MetaComponent:
    """The component registered as ``name`` in ``COMPONENTS``, built with ``kwargs``.

    Raises:
        ValueError: an unknown name or keyword argument (with the valid ones).
    """
    if name not in COMPONENTS:
        choices = sorted(COMPONENTS)
        raise ValueError(f"Unknown meta component {name!r}.{did_you_mean(name, choices)} "
                         f"Valid: {', '.join(choices)}")
    cls = COMPONENTS[name]
    accepted = accepted_arguments(cls)
    unknown = [key for key in kwargs if key not in accepted]
    if unknown:
        raise ValueError(f"{name!r} ({cls.__name__}) got unknown argument(s) "
                         f"{', '.join(map(repr, unknown))}.{did_you_mean(unknown[0], accepted)} "
                         f"Accepted: {', '.join(accepted)}")
    return cls(**kwargs)
