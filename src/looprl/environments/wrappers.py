"""Gymnasium's wrappers in looprl: ``env_wrappers`` by import path (``Wrappers``), vector
wrappers refused where each copy is wrapped, and the normalizers' running statistics carried
from training into evaluation (``sync_normalization``)."""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from looprl.core.imports import import_object
from looprl.core.suggest import warn_once

__all__ = ["NORMALIZERS", "Wrappers", "refuse_vector_wrapper", "sync_normalization"]

log = logging.getLogger(__name__)


class Wrappers:
    """A ``wrap_env`` of Gymnasium wrapper classes given by import path
    (``gymnasium.wrappers.FlattenObservation`` or ``my_pkg.wrappers:MyWrapper``), applied in
    order, each called as ``Wrapper(env)``: Mighty's ``env_wrappers``. It pickles as the paths,
    so Ray's actors wrap their copies alike."""

    def __init__(self, paths: Sequence[str]):
        if isinstance(paths, str) or not all(isinstance(p, str) for p in paths):
            raise TypeError(f"env_wrappers is a list of import paths of gymnasium.Wrapper "
                            f"classes (e.g. [gymnasium.wrappers.FlattenObservation]), got "
                            f"{paths!r}")
        self.paths = tuple(paths)
        self.classes = [import_object(path, "env wrapper") for path in self.paths]
        for path, cls in zip(self.paths, self.classes):
            if not callable(cls):
                raise TypeError(f"env wrapper {path!r} is a {type(cls).__name__}, not a "
                                "gymnasium.Wrapper class")
            refuse_vector_wrapper(cls, f"env wrapper {path!r}")
            needed = _required_arguments(cls)[1:]  # (after the environment)
            if needed:
                raise TypeError(f"env wrapper {path!r} needs the arguments {', '.join(needed)}, "
                                "which env_wrappers cannot give (each is called as "
                                "Wrapper(env)): give the import path of a function of yours "
                                "that applies it, e.g. my_pkg.wrappers:wrap with def wrap(env): "
                                f"return {cls.__name__}(env, ...)")

    def __call__(self, env: gym.Env) -> gym.Env:
        for cls in self.classes:
            env = cls(env)
        return env

    def __reduce__(self) -> tuple[type, tuple[tuple[str, ...]]]:
        return Wrappers, (self.paths,)

    def __repr__(self) -> str:
        return f"Wrappers({list(self.paths)!r})"


def refuse_vector_wrapper(wrapper: Any, given: str) -> None:
    """A one-line ``TypeError`` if ``wrapper`` (``given``) is a class of Gymnasium's vector
    wrappers, given where each copy (a ``gymnasium.Env``) is wrapped."""
    if isinstance(wrapper, type) and issubclass(wrapper, gym.vector.VectorWrapper):
        raise TypeError(f"{given} wraps vector environments, but it is given to wrap each "
                        "copy (a gymnasium.Env): give the single-environment wrapper of "
                        "gymnasium.wrappers, or wrap a gymnasium.make_vec(...) in it and give "
                        "that to GymVectorEnvironment(vec_env, name)")


def _required_arguments(made: Any) -> list[str]:
    """The names of the arguments ``made`` (a class or a function) cannot be called without
    (none where its signature is unknown)."""
    try:
        parameters = inspect.signature(made).parameters.values()
    except (TypeError, ValueError):  # (a builtin's)
        return []
    return [p.name for p in parameters if p.default is p.empty and p.kind not in (
        p.VAR_POSITIONAL, p.VAR_KEYWORD)]


#: Gymnasium's wrappers that learn running statistics (``obs_rms``, ``return_rms``) as they step
NORMALIZERS = (gym.wrappers.NormalizeObservation, gym.wrappers.NormalizeReward,
               gym.wrappers.vector.NormalizeObservation, gym.wrappers.vector.NormalizeReward)


def _wrappers(env: Any) -> list[Any]:
    """The wrappers of a Gymnasium (vector) environment, outermost first."""
    chain = []
    while isinstance(env, (gym.Wrapper, gym.vector.VectorWrapper)):
        chain.append(env)
        env = env.env
    return chain


def _gym_envs(env: Any) -> tuple[list[Any], list[Any]]:
    """The Gymnasium vector environments and environments that the looprl environment ``env``
    steps: its ``env`` (a vector one: with its copies), or its ``envs``' (a
    ``DuplicateEnvironment``'s)."""
    inner = getattr(env, "env", None)
    if isinstance(inner, gym.vector.VectorEnv):
        return [inner], list(getattr(inner.unwrapped, "envs", []))
    if isinstance(inner, gym.Env):
        return [], [inner]
    envs = getattr(env, "envs", None)
    if not isinstance(envs, list):
        return [], []
    return [], [one for each in envs for one in _gym_envs(each)[1]]


def sync_normalization(training: Any, evaluation: Any) -> None:
    """Copy the running statistics of the ``NORMALIZERS`` of ``training``'s first copy into
    those at the same place in each copy of ``evaluation`` (looprl environments), frozen there
    (``update_running_mean = False``): evaluation scales observations and rewards as training
    did (SB3's ``sync_envs_normalization``). Wrapper chains that differ: a warning, no copy."""
    if training is evaluation:
        return
    for source, targets in zip(_gym_envs(training), _gym_envs(evaluation)):
        chain = _wrappers(source[0]) if source else []
        for target in targets:
            tested = _wrappers(target)
            if not any(isinstance(wrapper, NORMALIZERS) for wrapper in chain + tested):
                continue
            if [type(wrapper) for wrapper in chain] != [type(wrapper) for wrapper in tested]:
                warn_once(log, "%s: the evaluation environment's wrappers (%s) are not the "
                          "training one's (%s), so its normalization statistics are its own, "
                          "not training's: evaluate in copies wrapped alike", training.name,
                          _names(tested), _names(chain))
                break
            for trained, frozen in zip(chain, tested):
                if isinstance(frozen, NORMALIZERS):
                    for key in ("obs_rms", "return_rms"):
                        if hasattr(trained, key):
                            setattr(frozen, key, copy.deepcopy(getattr(trained, key)))
                    frozen.update_running_mean = False


def _names(chain: list[Any]) -> str:
    return ", ".join(type(wrapper).__name__ for wrapper in chain) or "none"
