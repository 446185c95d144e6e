"""``MetaComponent``: one list of methods per hook, each called with the run's metrics
dictionary, component after component, each list in its order."""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import os
import traceback
from collections.abc import Callable, Iterable
from typing import Any

import torch

from looprl.core.suggest import check_choice, did_you_mean, hyperparameter_hint

#: The hook points, in the order they occur around one step, update and episode.
HOOKS = ("pre_episode", "pre_step", "post_step", "pre_update", "post_update", "post_episode")

Hook = Callable[[dict[str, Any]], Any]

_LOOPRL = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # (its files)


class MetaComponent:
    """Base of meta components: one list of methods per hook (``<hook>_methods``)."""

    #: the attributes ``repr`` shows
    shown: tuple[str, ...] = ()
    #: the attributes a checkpoint holds (copies of them), for the default ``state_dict``
    state_attributes: tuple[str, ...] = ()
    #: whether it picks the instances of a contextual environment (a curriculum: PLR, SPaCE)
    needs_contexts = False
    #: the ``hp/*`` keys its hooks write, checked against the agent's as a local run starts
    writes: tuple[str, ...] = ()

    def __init__(self) -> None:
        for hook in HOOKS:
            setattr(self, hook + "_methods", [])

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's ``__init__`` refuses a keyword it does not take in one line naming the
        ones it takes (``check_arguments``), its own and a user's."""
        super().__init_subclass__(**kwargs)
        init = vars(cls).get("__init__")
        if init is not None and not getattr(init, "checks_arguments", False):
            cls.__init__ = _checking(init)  # type: ignore[method-assign]

    def methods(self, hook: str) -> list[Hook]:
        """The methods this component runs at ``hook`` (one of ``HOOKS``)."""
        return getattr(self, check_choice("hook", hook, HOOKS) + "_methods")

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint holds to continue exactly: copies of ``state_attributes``."""
        return {name: copy.deepcopy(getattr(self, name)) for name in self.state_attributes}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        for name in self.state_attributes:
            setattr(self, name, copy.deepcopy(state[name]))

    def seed_run(self, seed: int) -> None:
        """Seed the component's random numbers from the run's seed (on Ray: its actor's) unless
        it has a seed of its own; called once, before the first episode."""

    def shared_state(self) -> dict[str, Any] | None:
        """What the update hooks learned that the step hooks need (``None``: nothing)."""
        return None

    def load_shared_state(self, state: dict[str, Any]) -> None:
        """Take what another copy's ``shared_state`` returned."""

    def __repr__(self) -> str:
        """``RND(internal_reward_weight=0.1, normalize=False, network='auto', lr=0.001)``: the
        ``shown`` attributes, then each other constructor argument kept as an attribute of its
        name, where not its default (a sweep's values, in ``run.json``; a user's component's)."""
        values = {name: getattr(self, name) for name in self.shown}
        for name, value in given_arguments(self).items():
            values.setdefault(name, value)
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in values.items())})"


#: the kinds of attribute values ``repr`` shows (not networks, tensors or functions)
_PLAIN = (bool, int, float, str, tuple, type(None))


def given_arguments(component: MetaComponent) -> dict[str, Any]:
    """``component``'s constructor arguments kept as plain attributes of their name, where not
    their defaults."""
    try:
        parameters = inspect.signature(type(component).__init__).parameters.values()
    except (TypeError, ValueError):
        return {}
    found = {}
    for parameter in parameters:
        if parameter.name == "self" or parameter.kind in (parameter.VAR_POSITIONAL,
                                                          parameter.VAR_KEYWORD):
            continue
        value = getattr(component, parameter.name, parameter.default)
        if isinstance(value, _PLAIN) and (parameter.default is parameter.empty
                                          or value != parameter.default):
            found[parameter.name] = value
    return found


class MetaComponentFailure(RuntimeError):
    """An exception raised in a meta component's hook method (its own code or a call it made)."""


def _checking(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def checked(self: MetaComponent, *args: Any, **kwargs: Any) -> None:
        if kwargs and type(self).__init__ is checked:  # (the outermost call, the class's own)
            check_arguments(type(self), kwargs)
        init(self, *args, **kwargs)

    checked.checks_arguments = True  # type: ignore[attr-defined]
    return checked


def _parameters(cls: type) -> tuple[dict[str, inspect.Parameter], bool]:
    """The keyword parameters ``cls(...)`` accepts, following ``**kwargs`` up the classes, and
    whether that is all (``False``: an ``__init__`` taking ``**kwargs`` keeps what it gets)."""
    found: dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass in (MetaComponent, object):
            continue
        parameters = inspect.signature(klass.__init__).parameters.values()
        found.update((p.name, p) for p in parameters if p.name not in found and p.name != "self"
                     and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            return found, True
    return found, False


def accepted_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The keyword parameters ``cls(...)`` accepts, following ``**kwargs`` up the classes."""
    return _parameters(cls)[0]


def check_arguments(cls: type, kwargs: dict[str, Any]) -> None:
    """A one-line ``TypeError`` for a keyword of ``kwargs`` that ``cls(...)`` does not take (a
    Mighty name: looprl's, ``hyperparameter_hint``), naming the ones it takes."""
    valid, complete = _parameters(cls)
    unknown = [key for key in kwargs if key not in valid]
    if unknown and complete:
        raise TypeError(f"{unknown[0]!r} is not an argument of {cls.__name__}."
                        f"{hyperparameter_hint(unknown[0], list(valid))} Valid: "
                        f"{', '.join(valid) or 'none'}")


def component_failure(error: Exception, method: Any, hook: str) -> MetaComponentFailure | None:
    """``"Typo.read at post_step raised KeyError: 'nxt_state' (comps.py:12)"``, the line in the
    method's file; ``None`` for looprl's own one-line errors (raised in looprl's code)."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames or frames[-1].filename.startswith(_LOOPRL):
        return None
    own = getattr(inspect.unwrap(getattr(method, "__func__", method)), "__code__", None)
    line = next((frame for frame in reversed(frames)
                 if own is not None and frame.filename == own.co_filename), frames[-1])
    where = os.path.relpath(line.filename) if line.filename.startswith(os.getcwd()) else \
        line.filename
    text = str(error).strip().splitlines()
    return MetaComponentFailure(
        f"{getattr(method, '__qualname__', repr(method))} at {hook} raised "
        f"{type(error).__name__}{f': {text[0]}' if text else ''} ({where}:{line.lineno})")


class MetaStack:
    """The components attached to one run, called hook by hook in their order."""

    def __init__(self, components: Iterable[MetaComponent] = ()):
        self.components = list(components)
        for component in self.components:
            if not isinstance(component, MetaComponent):
                raise TypeError(f"{component!r} is not a MetaComponent: attach instances of "
                                "looprl.meta components (e.g. RND()), or subclass MetaComponent")
            check_hooks(component)
        twice = {type(c).__name__ for c in self.components
                 if sum(other is c for other in self.components) > 1}
        if twice:  # (its hooks would run twice per call: a bonus added twice)
            raise ValueError(f"the same {', '.join(sorted(twice))} instance is attached twice: "
                             "attach each component once (two of a kind: two instances)")
        curricula = [type(c).__name__ for c in self.components if c.needs_contexts]
        if len(curricula) > 1:
            raise ValueError(f"{' and '.join(curricula)} each pick the instances of the "
                             "contextual environment, and a run has one curriculum: attach one "
                             "of them")
        self._hooks = {hook: [m for c in self.components for m in c.methods(hook)]
                       for hook in HOOKS}

    def has(self, hook: str) -> bool:
        """Whether any component runs at ``hook`` (one of ``HOOKS``)."""
        methods = self._hooks.get(hook)
        if methods is None:
            check_choice("hook", hook, HOOKS)
        return bool(methods)

    def __call__(self, hook: str, metrics: dict[str, Any]) -> None:
        """Run every method of ``hook`` on ``metrics``, in order; an exception of a component's
        own code is a one-line ``MetaComponentFailure`` naming the method, hook and line."""
        method = None
        try:
            for method in self._hooks[hook]:
                method(metrics)
        except Exception as error:
            failure = component_failure(error, method, hook)
            if failure is None:
                raise
            raise failure from error

    def __iter__(self):
        return iter(self.components)


def check_hooks(component: MetaComponent) -> None:
    """A one-line error for hook lists the loop would never call (``post_stpe_methods``, no
    ``MetaComponent.__init__`` call) or would call wrongly (not callable, another copy's)."""
    name = type(component).__name__
    for attribute in vars(component):
        hook = attribute[: -len("_methods")]
        if attribute.endswith("_methods") and hook not in HOOKS:
            raise ValueError(f"{name}.{attribute}: {hook!r} is no hook, so its methods would "
                             f"never run.{did_you_mean(hook, HOOKS)} Hooks: {', '.join(HOOKS)}")
    for hook in HOOKS:
        methods = getattr(component, hook + "_methods", None)
        if methods is None:
            raise TypeError(f"{name} has no {hook}_methods: call super().__init__() first in "
                            f"{name}.__init__")
        for method in methods:
            if not callable(method) or not _takes_one(method):
                raise TypeError(f"{name}.{hook}_methods holds {method!r:.60}, which is not "
                                "callable with one argument: append methods that take the "
                                "metrics dictionary (def my_method(self, metrics))")
            if any(other is not component and type(other) is type(component)
                   for other in _instances(method)):
                raise TypeError(f"{name}.{hook}_methods holds a hook of another {name} (a "
                                "lambda, local function or method bound to it), so this copy's "
                                "hooks would change that one: append this instance's own "
                                f"methods (self.{hook}_methods.append(self.my_method))")


def _takes_one(method: Hook) -> bool:
    """Whether ``method`` can be called with one positional argument (if its signature says)."""
    try:
        inspect.signature(method).bind(None)
    except TypeError:
        return False
    except ValueError:  # (no signature: a builtin's)
        pass
    return True


def _instances(method: Hook) -> list[Any]:
    """What ``method`` acts on: a bound method's instance, a closure's captured values."""
    if hasattr(method, "__self__"):
        return [method.__self__]
    values = []
    for cell in getattr(method, "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # (a cell not filled yet)
            values.append(cell.cell_contents)
    return values


def check_transition(reward: Any, terminated: Any, n: int) -> None:
    """``ValueError`` if a hook left ``transition['reward']`` or ``['terminated']`` with the
    wrong shape or type (``n``: the rows the loop gave them)."""
    if len(terminated) != n:  # (was blamed on the reward)
        raise ValueError(f"A meta component wrote transition['terminated'] with "
                         f"{len(terminated)} rows; it must keep its {n}, one per environment copy")
    if not isinstance(reward, torch.Tensor) or tuple(reward.shape) != (n,):
        shape = tuple(reward.shape) if hasattr(reward, "shape") else type(reward).__name__
        raise ValueError(f"A meta component wrote transition['reward'] as {shape}; it must "
                         f"stay a float tensor of shape ({n},), one reward per environment copy")
    if not reward.is_floating_point():
        raise ValueError(f"transition['reward'] must be a float tensor, got {reward.dtype}")
