"""Gymnasium at looprl's boundary: ids, actions, copies of a ``gym.Env``, episode caps."""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import inspect
import logging
import math
import os
import re
import sys
import traceback
import warnings
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import load_env_creator
from gymnasium.utils import EzPickle

from looprl.core.leaves import as_numpy
from looprl.core.suggest import did_you_mean, one_line
from looprl.environments.ale import atari_game
from looprl.environments.faults import PolicyActionError, failure

log = logging.getLogger(__name__)


#: the ids made so far (``warned_once``)
_MADE_IDS: set[str] = set()


@contextlib.contextmanager
def warned_once(env_id: str) -> Iterator[None]:
    """Around a ``gym.make``/``make_vec``: Gymnasium's out-of-date id warning at the first only."""
    if env_id not in _MADE_IDS:
        _MADE_IDS.add(env_id)
        yield
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*is out of date", DeprecationWarning)
        yield


def make_gym_env(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` with one-line errors (an unknown id, a missing dependency, bad arguments)."""
    check_env_id(env_id)
    if "mujoco" in str(gym.registry[env_id].entry_point):
        require_mujoco()
    check_text_arguments(env_id, kwargs)
    check_render_mode(env_id, kwargs)
    try:
        with warned_once(env_id):
            env = gym.make(env_id, **kwargs)
    except ModuleNotFoundError as error:  # (Gymnasium's phys2d and tabular ids need jax)
        if error.name is None:
            raise
        module = error.name.split(".")[0]
        install = ': pip install "gymnasium[jax]"' if module in ("jax", "flax") else ""
        raise ModuleNotFoundError(f"{env_id} needs the module {module!r}, which is not "
                                  f"installed{install}", name=error.name) from error
    except gym.error.DependencyNotInstalled as error:  # (Box2D's: says what, not for which id)
        raise gym.error.DependencyNotInstalled(f"{env_id}: {error}") from error
    except (AttributeError, ValueError) as error:  # (Gymnasium names the kwargs of a TypeError)
        if not kwargs:
            raise
        raise ValueError(f"{env_id} made with {kwargs} raised {type(error).__name__}: "
                         f"{one_line(error)}") from error
    made = env.unwrapped  # pickled (a checkpoint) as its constructor's keyword arguments: some
    if isinstance(made, EzPickle) and made.spec is not None:  # of Gymnasium's (v5
        EzPickle.__init__(made, **made.spec.kwargs)  # InvertedPendulum) pass them out of place
    return env


def _creator(entry_point: Any) -> Any:
    """The class or function a Gymnasium ``entry_point`` names (``None``: it does not load)."""
    try:
        return load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    except Exception:  # noqa: BLE001 - gym.make says what is wrong with it
        return None


def check_text_arguments(env_id: str, kwargs: dict[str, Any]) -> None:
    """``check_argument_types`` of ``env_id``'s registered constructor."""
    check_argument_types(env_id, _creator(gym.registry[env_id].entry_point), kwargs)


def check_argument_types(env_id: str, creator: Any, kwargs: dict[str, Any]) -> None:
    """A one-line ``TypeError`` for an argument of ``creator`` (making ``env_id``) given as text
    where its default is no text, or as a fraction for an int (a whole float is made that int)."""
    if not any(isinstance(value, str | float) for value in kwargs.values()):
        return
    try:
        parameters = inspect.signature(creator).parameters
    except (TypeError, ValueError):  # (no signature: the constructor says what is wrong)
        return
    for key, value in kwargs.items():
        default = parameters[key].default if key in parameters else None
        hint = parameters[key].annotation if key in parameters else None
        if isinstance(value, str) and default is not inspect.Parameter.empty and not isinstance(
                default, (str, os.PathLike, type(None))):
            wanted = ("true or false" if isinstance(default, bool) else "a number" if
                      isinstance(default, (int, float)) else f"a {type(default).__name__}")
            raise TypeError(f"{env_id}'s argument {key} takes {wanted} (default {default!r}), "
                            f"got the text {value!r} (env_kwargs.{key})")
        integer = hint in (int, "int") or (isinstance(default, int) and not isinstance(
            default, bool) and "float" not in str(hint))
        if isinstance(value, float) and integer:
            if value.is_integer():
                kwargs[key] = int(value)
                continue
            shown = "" if default is inspect.Parameter.empty else f" (default {default!r})"
            raise TypeError(f"{env_id}'s argument {key} takes a whole number{shown}, got "
                            f"{value!r} (env_kwargs.{key})")


class RenderModeError(ValueError):
    """A ``render_mode`` the environment does not offer (``check_render_mode``)."""


def check_render_mode(env_id: str, kwargs: dict[str, Any], vector: bool = False) -> None:
    """A one-line ``RenderModeError`` for a ``render_mode`` ``env_id`` (its vector env) lacks."""
    mode = kwargs.get("render_mode")
    if mode is None:
        return
    spec = gym.spec(env_id)
    try:
        modes = list(_creator(spec.vector_entry_point if vector else spec.entry_point)
                     .metadata["render_modes"])
    except Exception:  # noqa: BLE001 - gym.make says what is wrong with it
        return
    wrapped = [] if vector else [f"{each}_list" for each in modes] + (
        ["human"] if "rgb_array" in modes else [])
    if mode not in modes + wrapped:
        offered = ", ".join(repr(each) for each in modes) or "none"
        which = f"{env_id}'s vector environment" if vector else env_id
        raise RenderModeError(f"{which} offers the render modes {offered} (or None), got "
                         f"render_mode={mode!r}")


def require_mujoco() -> None:
    """``ImportError`` unless ``mujoco`` imports (``MUJOCO_GL`` set); its warnings go to logging."""
    if importlib.util.find_spec("mujoco") is None:
        raise ImportError("MuJoCo environments need the 'mujoco' package: pip install "
                          "'looprl[mujoco]'")
    try:
        import mujoco
    except (AttributeError, ImportError, RuntimeError) as error:  # (its backend's library)
        backend = os.environ.get("MUJOCO_GL")
        if backend is None:
            raise
        raise ImportError(f"mujoco does not import with MUJOCO_GL={backend!r} ({one_line(error)})"
                          ": set MUJOCO_GL to a rendering backend this machine has (egl, osmesa "
                          "or glfw), or unset it") from error

    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_log_warning)


def drop_frames(error: BaseException) -> None:
    """Free the locals of the frames ``error`` left (a half-made MuJoCo viewer's), silently."""
    hook, sys.unraisablehook = sys.unraisablehook, lambda _: None
    try:
        traceback.clear_frames(error.__traceback__)
    finally:
        sys.unraisablehook = hook


def _log_warning(message: str) -> None:
    level = logging.DEBUG if "deprecated" in message else logging.WARNING
    log.log(level, "MuJoCo: %s", message)


def env_name(env: gym.Env) -> str:
    """A Gymnasium environment's id, or its class name when it was not registered."""
    return env.spec.id if env.spec is not None else type(env.unwrapped).__name__


#: PettingZoo's families, searched for a name given without one (``"tictactoe_v3"``).
ZOO_FAMILIES = ("classic", "butterfly", "sisl", "mpe", "atari")


def zoo_modules(name: str) -> list[str]:
    """The PettingZoo modules a game's name may stand for (``pettingzoo[.<family>].NAME``...)."""
    derived = [] if name.startswith("pettingzoo.") else [f"pettingzoo.{name}"]
    return derived + ([f"pettingzoo.{family}.{name}" for family in ZOO_FAMILIES] +
                      [f"mpe2.{name}"] if "." not in name else [])


def module_exists(name: str) -> bool:
    """Whether the module ``name`` is there to import (``False`` where its parent is not)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def atari_hint(env_id: str, game: str, preset: str = "ppo") -> str:
    """What to do with the Atari game ``game`` (``env_id`` as given): its Atari ``preset``."""
    return (f"{env_id!r} is an Atari game: train it with an Atari preset (looprl run "
            f"algorithm=atari/{preset} env={game}, or looprl train atari.{preset} {game})")


def check_env_id(env_id: str) -> None:
    """A one-line ``ValueError`` (naming close ids, or the presets) if ``env_id`` is unknown, an
    ``ImportError`` (naming the version to use) if Gymnasium dropped it."""
    if env_id in gym.registry:
        dropped = gym.registry[env_id]
        needs = _needs(dropped.entry_point)
        if not needs:  # (one that does not import: gym.make says what to install)
            return
        newest = max((spec for spec in gym.registry.values() if _needs(spec.entry_point) is None
                      and (spec.namespace, spec.name) == (dropped.namespace, dropped.name)),
            key=lambda spec: spec.version or 0, default=None)
        if newest is None:  # (shimmy's: Gymnasium's line says what to install)
            return
        raise ImportError(f"{env_id} needs {needs}, which Gymnasium 1.x dropped: use {newest.id}")
    game = atari_game(env_id)
    if game is not None:
        raise ValueError(f"{atari_hint(env_id, game)} or play it in AtariEnvironment({game!r})")
    if re.fullmatch(r"[\w.]+_v\d+", env_id) and any(  # (a PettingZoo game's module)
            module_exists(candidate) for candidate in (env_id, *zoo_modules(env_id))):
        raise ValueError(f"{env_id!r} is a PettingZoo game: train it with a multi-agent preset "
                         f"(looprl run algorithm=multiagent/ppo env={env_id}, or looprl train "
                         f"multiagent.ppo {env_id}) or play it in "
                         f"MultiagentPettingZooEnv({env_id!r})")
    hint = did_you_mean(env_id, makeable_ids(), n=3) or (
        " Give a Gymnasium id (gymnasium.pprint_registry() lists them), your environment "
        "class as 'package.module:ClassName', an Atari game or a PettingZoo game.")
    raise ValueError(f"Unknown environment {env_id!r}.{hint} "
                     "(Atari and MuJoCo ids need the 'atari'/'mujoco' extras installed.)")


def makeable_ids() -> Iterator[str]:
    """The Gymnasium ids ``gym.make`` can make here (what to suggest)."""
    return (env_id for env_id, spec in list(gym.registry.items())
            if _needs(spec.entry_point) is None)


@functools.cache
def _needs(entry_point: Any) -> str | None:
    """What ``entry_point`` lacks: a dropped id's package, ``""`` if it does not load, or None."""
    if not isinstance(entry_point, str):
        if getattr(entry_point, "__module__", "") == "gymnasium.envs":
            name = entry_point.__name__.removeprefix("_raise_").removesuffix("_error")
            return name.replace("_", "-")
        return None if callable(entry_point) else ""
    made = _creator(entry_point)
    if made is None:  # (whatever it raises, gym.make would raise it too)
        return ""
    mujoco_py = any(base.__name__ == "MuJocoPyEnv" for base in getattr(made, "__mro__", ()))
    return "mujoco-py" if mujoco_py and importlib.util.find_spec("mujoco_py") is None else None


def action_to_numpy(action: Any, space: gym.Space, n_envs: int | None = None) -> Any:
    """An agent's action (``n_envs``: one per row) as ``space`` expects it (``Box``: clipped)."""
    action = as_numpy(action)
    if isinstance(space, gym.spaces.Discrete) and n_envs is None:
        if isinstance(action, np.integer) or type(action) is int:  # (a row of an int array)
            return int(action)
        array = np.asarray(action)  # (checked: int() would truncate 0.7 to 0)
        if array.size == 1 and (array.dtype.kind in "iub" or (
                array.dtype.kind == "f" and float(array.reshape(())).is_integer())):
            return int(array.reshape(()))
        raise ValueError(f"An action for the space {space} is one whole number (a 0-d or "
                         f"one-element tensor or array), got {_shown(array)}")
    if isinstance(space, gym.spaces.Discrete):
        return discrete_actions(action, space, n_envs)
    if isinstance(space, gym.spaces.Box):
        shape = space.shape if n_envs is None else (n_envs, *space.shape)
        array = np.asarray(action)
        check_finite_actions(array, space)
        if space.dtype.kind in "iu" and array.dtype.kind == "f":  # (nearest, not toward 0)
            array = np.rint(array)
        array = array.astype(space.dtype, copy=False)
        if array.size != math.prod(shape):
            raise ValueError(f"Action of shape {array.shape} does not fit the action space {space}")
        return np.clip(array.reshape(shape), space.low, space.high)
    return action


def check_finite_actions(actions: Any, space: gym.Space | None = None) -> None:
    """A ``PolicyActionError`` if ``actions`` (for ``space``, where known) hold NaN or infinity."""
    array = np.asarray(actions)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise PolicyActionError(
            f"The policy gave non-finite actions ({_shown(array)})"
            f"{'' if space is None else f' for the action space {space}'}: actions must be "
            "finite numbers (a policy whose outputs are NaN diverged: lower its learning rate "
            "or clip its gradients; a policy of your own: check its output)")


def _shown(array: np.ndarray) -> str:
    return repr(array.tolist()) if array.size <= 8 else f"an array of shape {array.shape}"


def discrete_actions(action: Any, space: gym.Space, n_envs: int) -> np.ndarray:
    """One whole number per environment as an ``int64`` array, else a one-line ``ValueError``."""
    if type(action) is np.ndarray and action.dtype == np.int64 and action.shape == (n_envs,):
        return action  # (a policy's argmax, every step: as it is)
    try:
        array = np.asarray(action)
    except ValueError:  # (rows of different lengths)
        array = np.asarray(action, dtype=object)
    whole = array.dtype.kind in "iub" or (
        array.dtype.kind == "f" and bool(np.all(np.mod(array, 1) == 0)))
    if array.size == n_envs and array.ndim <= 2 and whole:
        return array.reshape(n_envs).astype(np.int64, copy=False)
    copies = "1 copy" if n_envs == 1 else f"{n_envs} copies"
    raise ValueError(f"The actions of {copies} of the space {space} are one whole number per "
                     f"copy, got {_shown(array)}")


def deep_copy(env: gym.Env, name: str) -> gym.Env:
    """A deep copy of ``env`` (named ``name``), reset with a random seed of its own."""
    try:
        clone = copy.deepcopy(env)
    except Exception as error:  # noqa: BLE001 - any failure means the same advice
        raise ValueError(f"Cannot copy the environment {name} to run it in parallel "
                         f"({error}); give GymVectorEnvironment a function that makes one, "
                         "e.g. GymVectorEnvironment(lambda: MyWrapper(gymnasium.make(...)), "
                         "n_envs)") from None
    try:
        clone.reset(seed=int(np.random.SeedSequence().generate_state(1)[0]))  # own RNG
    except Exception as error:
        raise failure(name, "reset", error, where="of a new copy") from error
    return clone


def _shape(shape: Any) -> str:
    return f"shape {tuple(shape)}" if shape is not None else "another shape"


def shape_changed(name: str, expected: Any, got: Any = None) -> ValueError:
    """The one-line error for an environment whose observations change shape."""
    return ValueError(f"{name} returned an observation of {_shape(got)} after observations of "
                      f"shape {tuple(expected)}: an environment's observations must keep one "
                      "shape (pad them to one size, and declare it in observation_space)")


def space_name(space: gym.Space) -> str:
    """``space``'s kind: ``Box`` of shape (2, 3), ``MultiDiscrete``, ``Dict``, ..."""
    if isinstance(space, gym.spaces.Box) and len(space.shape) != 1:
        return f"Box of shape {space.shape}"
    return type(space).__name__


def shown_space(space: gym.Space) -> str:
    """``space`` as Gymnasium prints it, else (printed on several lines) its kind and shape."""
    text = str(space)
    if "\n" not in text:
        return text
    return space_name(space) + ("" if space.dtype is None else f" ({space.dtype})")


def space_shape_error(name: str, space: gym.Space, shape: Any = None) -> ValueError:
    """The one-line error of an observation (of ``shape``, where known) not of ``space``'s."""
    return ValueError(f"{name} returned an observation of {_shape(shape)}, but its "
                      f"observation_space {shown_space(space)} has shape {space.shape}: make the "
                      "observations and the declared observation_space agree")


#: NumPy's words (in Gymnasium's vector environments) for an observation of the wrong shape
SHAPE_ERRORS = ("wrong shape", "wrong dimensionality", "could not broadcast")

#: Evaluation steps of an episode without ``max_episode_steps`` (Atari's 108,000 frames / 4).
DEFAULT_EPISODE_CAP = 27_000


def episode_cap(env: Any) -> int:
    """The smallest ``max_episode_steps`` of ``env``'s copies' specs, else the default."""
    steps = []
    for one in getattr(env, "envs", None) or [env]:
        inner = getattr(one, "env", one)
        spec = getattr(inner, "spec", None) or getattr(getattr(inner, "unwrapped", None),
                                                      "spec", None)
        steps.append(int(getattr(spec, "max_episode_steps", None) or 0))
    return min((n for n in steps if n), default=DEFAULT_EPISODE_CAP)
