"""The SRL multi-agent environment API (seed 004): ``reset()`` and ``step(actions)`` return one
``StepResult`` per agent (``None``: it does not act now), ``step`` takes one action per agent
in that order; observations are dicts of arrays, ``reward``/``done``/``truncated`` ``(1,)``
arrays. When every agent is done or truncated, the caller resets."""

from __future__ import annotations

import dataclasses
import numbers
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

import gymnasium as gym
import numpy as np

from looprl.core.imports import import_module, is_import_path
from looprl.core.leaves import as_numpy
from looprl.core.namedarray import NamedArray
from looprl.core.registry import Registry
from looprl.core.suggest import check_count, is_bad_input
from looprl.environments.faults import EnvironmentOutputError, failure
from looprl.environments.gym_helpers import check_argument_types, makeable_ids


@dataclasses.dataclass
class StepResult:
    """What one agent receives from ``reset`` or ``step`` (SRL's field order): observation arrays by
    name, the reward since its previous one, ``done`` (terminated), ``info``, ``truncated``."""

    obs: dict[str, np.ndarray]
    reward: np.ndarray
    done: np.ndarray
    info: dict
    truncated: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(1, dtype=bool))


def step_result(obs: dict[str, Any], reward: float, done: bool, info: dict | None = None,
                truncated: bool = False) -> StepResult:
    """A ``StepResult`` from plain values (``obs``: arrays by name), as ``(1,)`` arrays."""
    if not callable(getattr(obs, "items", None)):
        raise TypeError(f"step_result's obs is a dict of arrays by name, {{'obs': array}} (SRL's "
                        f"observations), got {type(obs).__name__}")
    for name, flag in (("done", done), ("truncated", truncated)):  # (bool("no") is True)
        if not (isinstance(flag, numbers.Real | np.bool_) and flag in (0, 1)):
            raise TypeError(f"step_result's {name} is True/False (or 0/1), got {flag!r}")
    if not isinstance(reward, numbers.Real):  # (float("1.0") reads a text)
        raise TypeError(f"step_result's reward is a number, got {reward!r}")
    return StepResult(obs={key: np.asarray(value) for key, value in obs.items()},
                      reward=np.array([reward], dtype=np.float64), done=np.array([bool(done)]),
                      info=dict(info or {}), truncated=np.array([bool(truncated)]))


def checked_results(results: Any, env: Environment, call: str) -> list[StepResult | None]:
    """``env.reset()``'s or ``env.step()``'s results: one ``StepResult`` or ``None`` per agent."""
    name = f"{type(env).__name__}.{call}()"
    if not isinstance(results, list | tuple):
        raise EnvironmentOutputError(f"{name} returned {type(results).__name__}, not a list; "
                                     "return one StepResult (or None) per agent")
    for agent, result in enumerate(results):
        lacks = [key for key in ("reward", "done") if not hasattr(result, key)]
        if result is not None and call == "step" and hasattr(result, "obs") and lacks:
            raise EnvironmentOutputError(
                f"{name} returned a {type(result).__name__} without {' and '.join(lacks)} for "
                f"agent {agent}; return a StepResult(obs, reward, done, info) "
                "(looprl.environments.step_result(...) builds one) or None")
        reward = getattr(result, "reward", 0.0)  # (a text "1.0": float() would read it)
        if call == "step" and result is not None and np.asarray(reward).dtype.kind not in "biuf":
            raise EnvironmentOutputError(
                f"{name} returned the reward {reward!r} for agent {agent}: a reward is a number, "
                "in a shape-(1,) array (looprl.environments.step_result(...) builds it)")
        if result is not None and not isinstance(getattr(result, "obs", None), Mapping):
            what = type(result).__name__ + (f" whose obs is a {type(result.obs).__name__}, not a "
                                            "dict of arrays" if hasattr(result, "obs") else "")
            raise EnvironmentOutputError(
                f"{name} returned a {what} for agent {agent}; return a StepResult(obs={{'obs': "
                "array, ...}, reward, done, info) (looprl.environments.step_result(...) builds "
                "one) or None")
    if len(results) != env.agent_count:
        raise EnvironmentOutputError(f"{name} returned {len(results)} results for "
                                     f"{env.agent_count} agents; return one StepResult (or None) "
                                     "per agent")
    if call == "reset" and all(result is None for result in results):
        raise EnvironmentOutputError(f"{name} returned None for every agent, so no agent can "
                                     "act; return a StepResult for (at least) the agents that "
                                     "move first")
    if call == "reset":  # (each episode's first observations against the declared spaces,
        with suppress(NotImplementedError, AttributeError):  # where it declares them)
            for result, space in zip(results, spaces_of(env, "observation_spaces"), strict=True):
                if result is not None:
                    check_observation(f"{name} returned", result.obs, space)
    return list(results)


def check_observation(where: str, obs: Mapping[str, Any], space: gym.Space) -> None:
    """An ``EnvironmentOutputError`` (``where``: ``"MyEnv.reset() returned"``) unless ``obs``
    has the fields of the ``Dict`` space ``space``, each ``Box`` field numbers of its shape."""
    if not isinstance(space, gym.spaces.Dict):
        return
    if sorted(obs) != sorted(space.spaces):
        raise EnvironmentOutputError(
            f"{where} an observation of the fields {sorted(obs)}, but its observation_spaces "
            f"declare {sorted(space.spaces)}: return the fields it declares (a preset learns "
            "from those)")
    for key, box in space.spaces.items():
        kind, shape = getattr(obs[key], "dtype", np.dtype(float)).kind, np.shape(obs[key])
        if isinstance(box, gym.spaces.Box) and (kind not in "biuf" or shape != box.shape):
            what = f"of shape {shape}" if kind in "biuf" else f"of {obs[key].dtype} (not numbers)"
            raise EnvironmentOutputError(
                f"{where} obs[{key!r}] {what}, but its observation space is {box}: make the "
                "observations and the declared space agree")


def agent_count(env: Any) -> int:
    """``env.agent_count``, checked: a whole number >= 1 (a method in its place: one line)."""
    count, name = env.agent_count, f"{type(env).__name__}.agent_count"
    if callable(count):  # (a bound method: "must be positive, got <bound method ...>")
        raise TypeError(f"{name} is a method; make it a @property that returns the number of "
                        "agents")
    check_count(**{f"{name} (a property)": count})
    return int(count)


def spaces_of(env: Environment, attribute: str) -> list[gym.Space]:
    """``env.observation_spaces`` or ``env.action_spaces``, checked: one Gymnasium space per
    agent, else an ``EnvironmentOutputError`` (a ``NotImplementedError`` as the env raises it)."""
    spaces, n = getattr(env, attribute), env.agent_count
    where = f"{type(env).__name__}.{attribute}"
    if not isinstance(spaces, list | tuple) or len(spaces) != n:
        got = len(spaces) if isinstance(spaces, list | tuple) else type(spaces).__name__
        raise EnvironmentOutputError(f"{where} must be a list of {n} Gymnasium spaces (one per "
                                     f"agent), got {got}")
    for i, space in enumerate(spaces):
        if not isinstance(space, gym.Space):
            raise EnvironmentOutputError(f"{where}[{i}] is a {type(space).__name__}, not a "
                                         "Gymnasium space")
    return list(spaces)


def result_scalars(result: Any) -> tuple[float, bool, bool]:
    """``(reward, done, truncated)`` of a ``StepResult``, checked to be ``(1,)`` arrays (of a
    number, and of flags)."""
    try:
        if len(result.reward) == len(result.done) == len(result.truncated) == 1:
            done, truncated = result.done[0], result.truncated[0]
            if done in (0, 1) and truncated in (0, 1) and isinstance(
                    result.reward[0], numbers.Real | np.bool_):  # (not a text: "1.0")
                return float(result.reward[0]), bool(done), bool(truncated)
    except TypeError:  # (a number, a 0-d array)
        pass
    raise EnvironmentOutputError(
        "a StepResult's reward, done and truncated must be shape-(1,) arrays, got "
        f"{result.reward!r}, {result.done!r}, {result.truncated!r} (reward: a number; done and "
        "truncated: True/False or 0/1); build results with looprl.environments.step_result(...)")


def action_value(action: Any) -> Any:
    """An action as numpy: a ``NamedArray``'s field ``x`` (or its only field), a tensor."""
    if isinstance(action, NamedArray):
        if "x" in action.fields:
            action = action.x
        elif len(action.fields) == 1:
            action = action[action.fields[0]]
        else:
            raise TypeError(f"cannot read an action from a NamedArray with fields "
                            f"{list(action.fields)}: put the action in a field named 'x' (SRL's "
                            "DiscreteAction(x=...))")
    return as_numpy(action)


class Environment(ABC):
    """An SRL environment: ``agent_count``, ``reset`` and ``step``; optional: the spaces
    (``observation_spaces``/``action_spaces``, or the seed's singular ones) and the rest."""

    @property
    @abstractmethod
    def agent_count(self) -> int:
        """The length of every list ``reset`` and ``step`` return."""

    @abstractmethod
    def reset(self) -> list[StepResult | None]:
        """Start a new episode: one ``StepResult`` per agent, ``None`` for one that waits."""

    @abstractmethod
    def step(self, actions: list[Any | None]) -> list[StepResult | None]:
        """Apply one action per agent (``None`` for agents that got ``None``)."""

    @property
    def observation_spaces(self) -> list[Any]:
        """One Gymnasium ``Dict`` space per agent, with the keys of the obs dict."""
        return self._seed_spaces("observation_space", "to let tools check observations")

    @property
    def action_spaces(self) -> list[Any]:
        """One Gymnasium space per agent, for sampling and checking actions."""
        return self._seed_spaces("action_space", "or call test_environment(..., "
                                 "test_stepping=False)")

    def _seed_spaces(self, name: str, advice: str) -> list[Any]:
        """The seed's ``observation_space``/``action_space`` (one, or one per agent), per agent."""
        found = getattr(self, name, None)
        if callable(found):
            found = found()
            if found is None:  # (defined, its ``return`` forgotten)
                raise EnvironmentOutputError(f"{type(self).__name__}.{name}() returned None; "
                                             "return a Gymnasium space (or one per agent)")
        if found is None:
            raise NotImplementedError(
                f"{type(self).__name__} does not define {name}s; implement the property (a "
                f"list of gymnasium spaces, one per agent; or {name}: one for every agent) "
                f"{advice}")
        return list(found) if isinstance(found, list | tuple) else [found] * self.agent_count

    def seed(self, seed: int) -> int:
        """Seed the environment's randomness (from the next ``reset`` on); return the seed."""
        raise NotImplementedError(f"{type(self).__name__} does not implement seed(seed)")

    def set_curriculum_stage(self, stage_name: str) -> None:
        """Switch to the curriculum stage ``stage_name`` (from the next ``reset`` on)."""
        raise NotImplementedError(f"{type(self).__name__} has no curriculum: it cannot set the "
                                  f"stage {stage_name!r}")

    def render(self) -> Any:
        """The current frame as an ``(H, W, 3)`` uint8 RGB array (``None``: drawn in a window)."""
        raise NotImplementedError(f"{type(self).__name__} does not render: implement "
                                  "render() returning an RGB array to watch it")

    def close(self) -> None:
        """Release the environment's resources."""


#: the registered environments (``distributed.config`` carries them to the workers)
_REGISTRY: dict[str, type | str] = {}

_ADAPTERS = "looprl.environments.srl_adapters"


def _environments() -> Registry:
    """The registry of ``_REGISTRY`` (read at each call: tests swap that dict)."""
    return Registry("environment", _REGISTRY, advice=(
        ". Any Gymnasium id (e.g. 'CartPole-v1') also works through the Gymnasium adapter; "
        "register your own with looprl.environments.register(name, 'package.module:ClassName')"))


def register(name: str, env_class: type | str, module: str | None = None) -> None:
    """Register under ``name`` for ``make`` an ``Environment`` class, a function returning one, or
    a lazy ``"package.module:ClassName"`` (SRL's ``register(name, "ClassName", "module")`` too)."""
    if isinstance(env_class, str) and module is not None:
        env_class = f"{module}:{env_class}"
    _environments().register(name, env_class)  # (``TypeError`` if no class, factory or path)


def registered_environments() -> list[str]:
    """The registered names, sorted (Gymnasium ids work in ``make`` without registration)."""
    return _environments().names()


def make(name: str, /, **env_args: Any) -> Environment:
    """The environment ``name`` made with ``env_args``: a registered one, any Gymnasium id (the
    ``"gym"`` adapter; ``"atari"`` with ``atari_wrappers=True``) or ``"my_pkg.envs:MyEnv"``."""
    if not isinstance(name, str):  # (a class or a function: what register takes)
        called = getattr(name, "__name__", type(name).__name__)
        raise TypeError(f"make takes an environment's name, got {called!r} itself: register it "
                        f"first (looprl.environments.register({called.lower()!r}, {called})) and "
                        "pass that name")
    environments, given = _environments(), name
    if name not in _REGISTRY and is_import_path(name):  # "package.module:NAME"
        _, name = import_environment(name)  # registered here, or a Gymnasium id
    if name not in _REGISTRY and is_gymnasium_id(name):
        if env_args.pop("atari_wrappers", False):
            env = environments.get("atari")(name, **env_args)
        else:  # (named as the user gave it, as a local run names it)
            env = environments.get("gym")(name, label=given, **env_args)
    else:  # (``UnknownName`` if it is not registered)
        creator = environments.get(name, also=makeable_ids(), n=3)
        check_argument_types(name, creator, env_args)  # (text for a number, 2.5 for an int)
        try:
            env = creator(**env_args)
        except Exception as error:  # (the user's simulator that cannot start: one line)
            if is_bad_input(error):
                raise
            raise failure(name, "__init__", error) from error
    if not isinstance(env, Environment):
        raise TypeError(f"environment {name!r} built a {type(env).__name__}, not a looprl."
                        "environments.SRLEnvironment; wrap a Gymnasium env in GymnasiumEnvironment")
    return env


def import_environment(path: str) -> tuple[str, str]:
    """Import ``path``'s module (``package.module:NAME``): ``("srl", name)`` for an ``Environment``
    class or an SRL name it registered, ``("gym", id)`` for a ``gymnasium.Env`` class or an id."""
    module_name, _, attr = path.partition(":")
    found = getattr(import_module(module_name, f"environment {path!r}"), attr, None)
    if isinstance(found, type) and issubclass(found, Environment):
        _REGISTRY.setdefault(path, found)
        return "srl", path
    if isinstance(found, type) and issubclass(found, gym.Env):
        gym_id = f"{module_name}.{attr}"
        if gym_id not in gym.registry:
            gym.register(id=gym_id, entry_point=found)
        return "gym", gym_id
    if found is not None:
        what = f"the class {found.__name__}" if isinstance(found, type) else "a " + type(
            found).__name__
        raise TypeError(f"environment {path!r} is {what}, not a gymnasium.Env class or a "
                        "looprl.environments.SRLEnvironment class (a function making a "
                        "PettingZoo game: with a multi-agent preset)")
    if attr in _REGISTRY:
        return "srl", attr
    if attr in gym.registry:
        return "gym", attr
    raise ImportError(f"environment {path!r}: module {module_name!r} has no {attr!r} and "
                      f"registered no environment {attr!r} (with gymnasium.register or "
                      "looprl.environments.register)")


def is_gymnasium_id(name: str) -> bool:
    """Whether ``gymnasium.make(name)`` knows ``name`` (Atari ids included when ale-py is)."""
    if name not in gym.registry:
        with suppress(ImportError):  # register ale-py's ``ALE/...`` ids
            import ale_py

            gym.register_envs(ale_py)
    return name in gym.registry


register("gym", f"{_ADAPTERS}:GymnasiumEnvironment")
register("atari", f"{_ADAPTERS}:AtariGameEnvironment")
register("pettingzoo", f"{_ADAPTERS}:PettingZooEnvironment")
register("contextual", "looprl.environments.contextual:contextual_environment")
