"""Gymnasium's wrappers in looprl: ``env_wrappers`` by import path, vector wrappers refused, and
the normalizers' statistics carried into evaluation and saved with a run."""

from __future__ import annotations

import contextlib
import copy
import inspect
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from looprl.core.files import load_file, save_atomically
from looprl.core.imports import import_object
from looprl.core.suggest import warn_once
from looprl.environments.vector import CheckedOutput

__all__ = ["NORMALIZATION_FILE", "NORMALIZERS", "Wrappers", "load_normalization",
           "most_counted", "normalizers_of", "preset_normalization", "read_normalization",
           "refuse_vector_wrapper", "save_normalization", "saved_normalization",
           "sync_normalization"]

log = logging.getLogger(__name__)


class Wrappers:
    """A ``wrap_env`` of Gymnasium wrapper classes by import path, applied in order (pickles so)."""

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
    """A one-line ``TypeError`` if ``wrapper`` (``given``) is one of Gymnasium's vector wrappers."""
    if isinstance(wrapper, type) and issubclass(wrapper, gym.vector.VectorWrapper):
        raise TypeError(f"{given} wraps vector environments, but it is given to wrap each "
                        "copy (a gymnasium.Env): give the single-environment wrapper of "
                        "gymnasium.wrappers, or wrap a gymnasium.make_vec(...) in it and give "
                        "that to GymVectorEnvironment(vec_env, name)")


def _required_arguments(made: Any) -> list[str]:
    """The arguments ``made`` cannot be called without (none where its signature is unknown)."""
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
    """A Gymnasium (vector) environment's wrappers, outermost first, but ``CheckedOutput``."""
    chain = []
    while isinstance(env, (gym.Wrapper, gym.vector.VectorWrapper)):
        if not isinstance(env, CheckedOutput):
            chain.append(env)
        env = env.env
    return chain


def _gym_envs(env: Any) -> tuple[list[Any], list[Any]]:
    """The Gymnasium vector envs and envs that the looprl environment ``env`` (or a list) steps."""
    inner = getattr(env, "env", None)
    if isinstance(inner, gym.vector.VectorEnv):
        return [inner], list(getattr(inner.unwrapped, "envs", []))
    if isinstance(inner, gym.Env):
        return [], [inner]
    envs = env if isinstance(env, list) else getattr(env, "envs", None)
    if not isinstance(envs, list):
        return [], []
    return [], [one for each in envs for one in _gym_envs(each)[1]]


def normalizers_of(env: Any) -> list[Any]:
    """The ``NORMALIZERS`` of each copy the looprl environment ``env`` (or a list of them) steps."""
    return [wrapper for group in _gym_envs(env) for one in group for wrapper in _wrappers(one)
            if isinstance(wrapper, NORMALIZERS)]


@contextlib.contextmanager
def sync_normalization(training: Any, evaluation: Any) -> Iterator[None]:
    """While entered, ``evaluation`` scales observations and rewards as ``training`` did (SB3's
    ``sync_envs_normalization``): ``load_normalization`` of it, or its normalizers frozen."""
    if training is not evaluation:
        load_normalization(evaluation, read_normalization(training), training.name)
        yield
        return
    frozen = normalizers_of(training)
    updating = [wrapper.update_running_mean for wrapper in frozen]
    for wrapper in frozen:
        wrapper.update_running_mean = False
    try:
        yield
    finally:
        for wrapper, update in zip(frozen, updating, strict=True):
            wrapper.update_running_mean = update


def read_normalization(env: Any) -> list[dict[str, Any] | None]:
    """The statistics of the ``NORMALIZERS`` of the first copy of ``env`` (of its vector env and
    first env), as picklable data: the wrapper chain's paths and each one's mean, var and count."""
    return [_statistics(group[0]) if group else None for group in _gym_envs(env)]


def load_normalization(env: Any, statistics: Sequence[dict[str, Any] | None] | None,
                       name: str, freeze: bool = True) -> None:
    """Load ``read_normalization`` (of the training environment ``name``) into the ``NORMALIZERS``
    at the same place in each copy of ``env``, frozen (chains that differ: a warning, no load)."""
    for source, targets in zip(statistics or (), _gym_envs(env)):
        paths, saved = (source["wrappers"], source["normalizers"]) if source else ([], [])
        for target in targets:
            tested = _wrappers(target)
            normalizers = [wrapper for wrapper in tested if isinstance(wrapper, NORMALIZERS)]
            if not saved and not normalizers:
                continue
            chain = [_path(wrapper) for wrapper in tested]
            if paths != chain:
                shown = [", ".join(path.rpartition(".")[2] for path in each) or "none"
                         for each in (chain, paths)]
                warn_once(log, "%s: an environment's wrappers (%s) are not those of the "
                          "training one (%s), so its normalization statistics are its own, "
                          "not training's: wrap its copies alike", name, *shown)
                break
            for frozen, trained in zip(normalizers, saved):
                for key, values in trained.items():
                    statistics_of = copy.copy(getattr(frozen, key))
                    for field, value in values.items():
                        setattr(statistics_of, field, copy.deepcopy(value))
                    setattr(frozen, key, statistics_of)
                frozen.update_running_mean = frozen.update_running_mean and not freeze


def most_counted(statistics: Sequence[list[dict[str, Any] | None] | None]
                 ) -> list[dict[str, Any] | None] | None:
    """Of several ``read_normalization`` (``None``: none), the first that counted the most steps."""
    return max((each for each in statistics if each is not None), default=None,
               key=lambda each: sum(values["count"] for source in each if source
                                    for normalizer in source["normalizers"]
                                    for values in normalizer.values()))


#: the file beside a run's ``preset.pt`` holding its normalizers' statistics (``best_``: best's)
NORMALIZATION_FILE = "normalization.pt"


def save_normalization(statistics: list[dict[str, Any] | None] | None,
                       run_dir: str | os.PathLike, prefix: str = "") -> None:
    """Write ``read_normalization`` to ``run_dir``'s ``NORMALIZATION_FILE`` if it has any."""
    if any(source and source["normalizers"] for source in statistics or ()):
        save_atomically(statistics, Path(run_dir) / (prefix + NORMALIZATION_FILE))


def saved_normalization(run_dir: str | os.PathLike, prefix: str = "", env: Any = None
                        ) -> list[dict[str, Any] | None] | None:
    """The statistics ``save_normalization`` wrote to ``run_dir`` (``None``: none)."""
    path = Path(run_dir) / (prefix + NORMALIZATION_FILE)
    if path.is_file():
        return load_file(path, "normalization statistics", "delete it, or train the run again")
    _warn_unsaved(env, run_dir)
    return None


def preset_normalization(preset_file: str | os.PathLike, env: Any = None
                         ) -> list[dict[str, Any] | None] | None:
    """The statistics saved beside ``preset_file`` (``[best_]normalization.pt``), or ``None``."""
    path = Path(preset_file)
    statistics = (saved_normalization(path.parent, path.name.removesuffix("preset.pt"))
                  if path.name.endswith("preset.pt") else None)
    if statistics is None:
        _warn_unsaved(env, path)
    return statistics


def _warn_unsaved(env: Any, saved: str | os.PathLike) -> None:
    """A warning where ``env`` has normalizers but ``saved`` (a preset file, a run) has none."""
    normalizers = dict.fromkeys(type(wrapper).__name__ for wrapper in normalizers_of(env))
    if normalizers:
        warn_once(log, "%s: no normalization statistics were saved with it (a looprl before "
                  "they were saved, or a preset saved alone): the statistics of its "
                  "environment's %s start anew and update as it plays, not as trained; train "
                  "the run again to watch it as trained", saved, ", ".join(normalizers))


def _statistics(first: Any) -> dict[str, Any]:
    """``read_normalization`` of one Gymnasium (vector) environment."""
    chain = _wrappers(first)
    return {"wrappers": [_path(wrapper) for wrapper in chain],
            "normalizers": [{key: {field: copy.deepcopy(getattr(getattr(wrapper, key), field))
                                   for field in ("mean", "var", "count")}
                             for key in ("obs_rms", "return_rms") if hasattr(wrapper, key)}
                            for wrapper in chain if isinstance(wrapper, NORMALIZERS)]}


def _path(wrapper: Any) -> str:
    return f"{type(wrapper).__module__}.{type(wrapper).__qualname__}"
