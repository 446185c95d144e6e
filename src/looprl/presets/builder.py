"""The fluent, immutable preset builder: ``dqn.env(env).hyperparameters(lr=1e-3).build()``;
every call returns a new builder, so a configured one can serve as a template."""

from __future__ import annotations

import copy
import inspect
import logging
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import torch

from looprl.core import Preset
from looprl.core.observations import check_default_dtype
from looprl.core.ranges import check_ranges, range_of
from looprl.core.suggest import (
    a_type,
    check_device,
    is_number,
    is_out_of_memory,
    one_line,
    warn_once,
)
from looprl.environments.base import Environment
from looprl.environments.gym import refuse_gymnasium
from looprl.environments.multiagent import MultiagentEnvironment, MultiagentPettingZooEnv
from looprl.presets.all_names import (
    ALL_NAMES,
    Defaults,
    UnknownHyperparameterError,
    no_such_hyperparameter,
)
from looprl.presets.catalog import family_of, make_env
from looprl.presets.common import multiagent_advice
from looprl.presets.constructors import given_constructors

log = logging.getLogger(__name__)


def check_type(key: str, value: Any, default: Any, owner: str, ranged: bool = True) -> Any:
    """``value`` of the default's kind (a whole float as an int: ALL's ``replay_buffer_size=1e6``;
    NumPy's numbers as Python's; any callable for a callable default: a ``functools.partial``
    or a class for ALL's ``model_constructor``), else ``TypeError`` (a number of another kind:
    ``check_ranges``' ``ValueError`` naming ``owner``'s range); a ``None`` default takes any
    value but a list, ``True``, ... for a key with a range (``value_clip``). ``ranged=False``
    (a user's preset): looprl's ranges do not apply."""
    if isinstance(value, numbers.Number) and type(value).__module__ == "numpy":
        value = value.item()  # (np.int64(1000) from a NumPy computation: ALL's presets take it)
    if default is None:
        valid = range_of(key) if ranged else None
        if valid is None or value is None or isinstance(value, str) or (
                isinstance(value, numbers.Real) and not isinstance(value, bool)):
            return value
        raise TypeError(f"Hyperparameter {key!r} must be {valid.text} or None, got {value!r}")
    if type(default) is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if callable(default) and callable(value):
        return value
    kind = (int, float) if isinstance(default, float) else type(default)
    if isinstance(value, bool) != isinstance(default, bool) or not isinstance(value, kind):
        if ranged and is_number(value):
            check_ranges({key: value}, owner)
        kind = type(default).__name__
        raise TypeError(f"Hyperparameter {key!r} must be {kind} (like {default!r}), got {value!r}")
    return value


def default_device() -> str:
    """``'cuda'`` when a GPU is available, else ``'cpu'``."""
    return "cuda" if torch.cuda.is_available() else "cpu"


class PresetBuilder:
    """Configures and builds a ``Preset``.

    Args:
        default_hyperparameters: every valid hyperparameter with its default value.
        constructor: ``constructor(env, name, device, hyperparameters) -> Preset``, or ALL's
            form, ``constructor(env, device=..., name=..., **hyperparameters)``.
        settings: ALL's keywords ``device``, ``env``, ``hyperparameters`` and ``name``, set as
            ``__call__`` sets them.
    """

    def __init__(self, default_name: str, default_hyperparameters: dict[str, Any],
                 constructor: Callable[..., Preset], **settings: Any):
        self.default_name = self._name = default_name
        self.constructor = constructor
        self.default_hyperparameters = Defaults(
            default_hyperparameters, ALL_NAMES.get(f"{family_of(self)}.{default_name}", {}),
            default_name)
        self._device: str | torch.device | None = None
        self._env: Any = None
        self._hyperparameters = dict(default_hyperparameters)
        self._all_given: dict[str, Any] = {}  # ALL names converted (all_names.Converted)
        self._meta: tuple[Any, ...] = ()
        given = {key: value for key, value in settings.items() if value is not None}
        if given:
            self.__dict__.update(self(**given).__dict__)

    def __repr__(self) -> str:
        """The name and what was set: changed hyperparameters, env, device."""
        changed = {key: value for key, value in self._hyperparameters.items()
                   if dict.get(self.default_hyperparameters, key) != value}
        shown = [f"{key}={value!r}" for key, value in changed.items()] + [
            f"{name}={value!r}" for name, value in (("env", self._env), ("device", self._device))
            if value is not None]
        return f"PresetBuilder({self._name!r}{''.join(', ' + item for item in shown)})"

    def __call__(self, **settings: Any) -> PresetBuilder:
        """Several settings at once, as ALL's ``builder(device=..., name=..., env=...,
        hyperparameters={...})``; a setting given as ``None`` keeps its value."""
        unknown = sorted(set(settings) - {"device", "env", "hyperparameters", "name"})
        if unknown:
            raise TypeError(f"PresetBuilder() takes device, env, hyperparameters and name, got "
                            f"{', '.join(unknown)}")
        builder = self
        for key, value in settings.items():
            if value is None:  # (ALL's: keeps what was set)
                continue
            builder = getattr(builder, key)(value)
        return builder

    def _preset_builder(self, **changes: Any) -> PresetBuilder:
        """A copy with ``changes`` to its settings (``env=...`` sets ``_env``)."""
        builder = copy.copy(self)
        for key, value in changes.items():
            setattr(builder, f"_{key}", value)
        return builder

    def env(self, env: Any) -> PresetBuilder:
        """Set the environment; looprl's presets also take an id (``"CartPole-v1"``,
        ``pkg.module:Env``), made as ``looprl train`` makes it."""
        family = family_of(self)
        if family is not None and isinstance(env, str):
            env = make_env(f"{family}.{self.default_name}", env)
        elif family is not None and not (hasattr(env, "action_space")
                                         or hasattr(env, "action_spaces")):
            raise TypeError(f"{self.default_name}.env() takes an environment (e.g. "
                            f"GymEnvironment('CartPole-v1')) or a Gymnasium id, got "
                            f"{type(env).__name__} {env!r:.40}")
        if family is not None:
            refuse_gymnasium(env, f"{self.default_name}.env()")
        if family not in (None, "multiagent") and isinstance(env, MultiagentEnvironment):
            raise ValueError(f"{env.name} is a multi-agent environment: "
                             f"{multiagent_advice(f'{family}.{self.default_name}')}")
        return self._preset_builder(env=env)

    def device(self, device: str | torch.device) -> PresetBuilder:
        """Set the device of the preset's networks (default: CUDA if available, else CPU)."""
        return self._preset_builder(device=check_device(device))

    def meta(self, *components: Any) -> PresetBuilder:
        """Attach meta components (``looprl.meta``), whose hooks run in this order in every
        experiment of the preset."""
        from looprl.meta import MetaStack
        MetaStack(components)  # TypeError now for anything that is not a MetaComponent
        return self._preset_builder(meta=self._meta + components)

    @property
    def components(self) -> tuple[Any, ...]:
        """The meta components ``meta()`` attached, in their order."""
        return self._meta

    def name(self, name: str) -> PresetBuilder:
        """Set the preset's display name (text)."""
        if not isinstance(name, str):  # (was met by the logger, at the run)
            raise TypeError(f"{self.default_name}.name() takes the preset's display name as "
                            f"text, got {a_type(name)} {name!r:.40}")
        return self._preset_builder(name=name)

    def hyperparameters(self, values: Mapping[str, Any] | None = None, /,
                        **hyperparameters: Any) -> PresetBuilder:
        """Override hyperparameters, given as keywords or a dict (``UnknownHyperparameterError``,
        a ``KeyError``, for unknown names); ALL 0.9's names work too
        (``looprl.presets.all_names``). Values are checked against looprl's ranges only for
        looprl's presets: a user's preset's ``sigma`` or ``hidden`` is its own."""
        if values is not None and not isinstance(values, Mapping):
            raise TypeError(f"{self.default_name}.hyperparameters() takes name=value keywords "
                            f"or a dict of them, got {a_type(values)} {values!r:.40}")
        hyperparameters, all_given = self._from_all_names({**(values or {}), **hyperparameters})
        for key, value in hyperparameters.items():
            if key not in self.default_hyperparameters:
                raise no_such_hyperparameter(key, self.default_name, self.default_hyperparameters)
            hyperparameters[key] = check_type(key, value, self.default_hyperparameters[key],
                                              self.default_name, ranged=self._ranged)
        if self._ranged:
            check_ranges(hyperparameters, self.default_name)
        return self._preset_builder(hyperparameters={**self._hyperparameters, **hyperparameters},
                                    all_given=all_given)

    def _from_all_names(self, given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``given`` with ALL's names of this preset (``all_names.ALL_NAMES``) in looprl's, and
        the converted ALL names to keep (their conversions redone on later calls)."""
        from looprl.presets.all_names import Converted, Refused
        table = self.default_hyperparameters.table
        own = self.default_hyperparameters
        ours = {key: value for key, value in given.items() if key in own or key not in table}
        for name in [name for name in given if name not in ours]:
            entry = table[name]
            if isinstance(entry, Refused):
                use = " or ".join(key for key in entry.use if key in own)
                raise UnknownHyperparameterError(
                    f"{self.default_name} has no {name!r} (ALL's): {f'use {use}; ' if use else ''}"
                    f"{entry.why}")
            both = [key for key in ((entry,) if isinstance(entry, str) else entry.keys)
                    if key in given]
            if both:
                raise ValueError(f"{name!r} is ALL's name for {self.default_name}'s {both[0]!r}: "
                                 "give one of them")
            if isinstance(entry, str):
                ours[entry] = given[name]
        converted = {name: entry for name, entry in table.items() if isinstance(entry, Converted)}
        kept = {name: value for name, value in self._all_given.items() if name not in given
                and not any(key in given for key in converted[name].keys)}
        all_given = {**kept, **{name: value for name, value in given.items()
                                if name in converted and name not in own}}
        current = {**self.hyperparameter_defaults,  # (typed: n_envs='abc' is not converted)
                   **{key: check_type(key, value, own[key], self.default_name, self._ranged)
                      for key, value in ours.items() if key in own}}
        for name, value in all_given.items():
            ours.update(converted[name].convert(value, current))
        return ours, all_given

    @property
    def _ranged(self) -> bool:
        """Whether looprl's ranges apply to the values given: a preset of looprl's."""
        return family_of(self) is not None

    @property
    def hyperparameter_defaults(self) -> dict[str, Any]:
        """The valid hyperparameters and the values a preset built from this builder gets:
        the defaults, with the overrides this builder was given (``multiagent.dqn``'s tuned
        values, a ``dqn.hyperparameters(lr=...)``'s ``lr``)."""
        return {**self.default_hyperparameters, **self._hyperparameters}

    def build(self) -> Preset:
        """Build the preset; requires ``env`` to have been set."""
        if self._env is None:
            raise ValueError(f"Call .env(environment) on the {self.default_name} builder first")
        check_default_dtype(f"{self.default_name}.build()")
        self._check_constructors()
        device = self._device if self._device is not None else default_device()
        try:
            preset = self._construct(device)
        except RuntimeError as error:  # (torch's, allocating the networks)
            if not is_out_of_memory(error):
                raise
            sizes = [f"{key} (now {self._hyperparameters[key]})" for key in ("hidden", "atoms")
                     if key in self._hyperparameters]
            gpu = (", or free the GPU (nvidia-smi lists what holds it) or build on device='cpu'"
                   if torch.device(device).type == "cuda" else "")
            raise ValueError(f"{self.default_name}'s networks do not fit in memory "
                             f"({one_line(error)}); lower {' or '.join(sizes) or 'their size'}"
                             f"{gpu}") from None
        preset.env_name = getattr(self._env, "name", None)
        spaces = (getattr(self._env, "observation_space", None),
                  getattr(self._env, "action_space", None))
        if all(isinstance(space, gym.spaces.Space) for space in spaces):  # (not per agent)
            preset.env_spaces = spaces  # (checked where a saved preset plays)
        if isinstance(self._env, MultiagentEnvironment):  # (checked alike, agent by agent)
            preset.agent_spaces = {agent: (self._env.observation_space(agent),
                                           self._env.action_space(agent),
                                           self._env.has_action_mask(agent))
                                   for agent in self._env.possible_agents}
        if isinstance(self._env, Environment | MultiagentPettingZooEnv):
            preset.env_remote = self._env.remote_env()  # what Ray actors make for it
        preset.meta = self._meta
        self._warn_idle(preset)
        return preset

    def _check_constructors(self) -> None:
        """A one-line ``ValueError`` for an ALL model constructor (``model_constructor``, ...)
        given with ``features``, whose network it replaces."""
        hp, defaults = self._hyperparameters, self.default_hyperparameters
        given = given_constructors(hp)
        if given and "features" in hp and hp["features"] != dict.get(defaults, "features"):
            raise ValueError(f"{self.default_name}: {given[0]} builds the network that "
                             f"features={hp['features']!r} would: give one of them")

    def _warn_idle(self, preset: Preset) -> None:
        """A warning line per part that hyperparameters given here need but the preset's
        parts leave out (``preset.idle()``: PER's ``alpha`` without prioritized replay)."""
        needs: dict[str, list[str]] = {}
        for key, part in getattr(preset, "idle", dict)().items():
            if self._hyperparameters.get(key) != self.default_hyperparameters.get(key):
                needs.setdefault(part, []).append(key)
        for part, keys in needs.items():
            warn_once(log, "%s: %s take%s effect only with %s: choose it, or drop %s", preset.name,
                      ", ".join(keys), "" if len(keys) > 1 else "s", part, " and ".join(keys))

    def _construct(self, device: str | torch.device) -> Preset:
        if takes_keywords(self.constructor, self.default_hyperparameters):
            return self.constructor(self._env, device=device, name=self._name,
                                    **self._hyperparameters)
        return self.constructor(self._env, self._name, device, dict(self._hyperparameters))


class ParallelPresetBuilder(PresetBuilder):
    """ALL's builder of parallel presets: its hyperparameters include ``n_envs``."""

    def __init__(self, default_name: str, default_hyperparameters: dict[str, Any],
                 constructor: Callable[..., Preset], **settings: Any):
        if "n_envs" not in default_hyperparameters:
            raise ValueError(f"ParallelPresetBuilder {default_name!r}: the default "
                             "hyperparameters must include n_envs")
        super().__init__(default_name, default_hyperparameters, constructor, **settings)


def takes_keywords(constructor: Callable[..., Any], hyperparameters: dict[str, Any]) -> bool:
    """Whether ``constructor`` takes the hyperparameters as keywords (ALL's presets) rather
    than as one dict (looprl's)."""
    try:
        parameters = inspect.signature(constructor).parameters
    except (TypeError, ValueError):  # no signature to read: looprl's convention
        return False
    return any(p.kind is p.VAR_KEYWORD or name in hyperparameters
               for name, p in parameters.items())
