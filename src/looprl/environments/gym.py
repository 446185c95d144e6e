"""Gymnasium environments as looprl environments (numpy <-> torch at the boundary)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium as gym
import torch

from looprl.core import State
from looprl.core.imports import is_import_path
from looprl.core.observations import as_observation
from looprl.core.suggest import check_device, check_seed
from looprl.environments.base import Environment, forwarded
from looprl.environments.faults import failure, gym_reset_output, gym_step_output, unpack_hint
from looprl.environments.gym_helpers import (
    action_to_numpy,
    deep_copy,
    drop_frames,
    env_name,
    make_gym_env,
    shape_changed,
    space_shape_error,
)
from looprl.environments.srl import import_environment
from looprl.environments.vector import GymVectorEnvironment
from looprl.environments.wrappers import refuse_vector_wrapper


def _made_and_wrapped(env_id: str, wrap_env: Callable[[gym.Env], gym.Env],
                      make_kwargs: dict[str, Any]) -> gym.Env:
    return wrap_env(make_gym_env(env_id, **make_kwargs))


def _not_an_env(env: Any) -> str:
    """What ``GymEnvironment`` takes, for ``env``, which is none of it."""
    if isinstance(env, gym.vector.VectorEnv):
        return (f"GymEnvironment plays one environment, got the vector environment "
                f"{type(env).__name__}: give it to GymVectorEnvironment(vec_env, name)")
    if isinstance(env, type) and issubclass(env, gym.Env):
        return (f"GymEnvironment takes an environment, got the class {env.__name__}: give "
                f"{env.__name__}(...) or its import path 'package.module:{env.__name__}'")
    what = f"the looprl environment {env.name}" if isinstance(env, Environment) else (
        f"{type(env).__name__} {env!r:.40}")
    return (f"GymEnvironment takes a Gymnasium id, an import path 'package.module:EnvClass' or "
            f"a gymnasium.Env, got {what}")


def refuse_gymnasium(env: Any, where: str) -> Any:
    """``env``; a one-line ``TypeError`` for a bare Gymnasium (vector) environment."""
    if isinstance(env, gym.vector.VectorEnv):
        raise TypeError(f"{where} takes a looprl environment, got the Gymnasium vector "
                        f"environment {type(env).__name__}: wrap it in "
                        "GymVectorEnvironment(vec_env, name)")
    if isinstance(env, gym.Env):
        raise TypeError(f"{where} takes a looprl environment, got the gymnasium.Env "
                        f"{env_name(env)}: wrap it in GymEnvironment(env)")
    return env


class GymEnvironment(Environment):
    """A Gymnasium environment ``env`` (an id or ``package.module:EnvClass``, made with
    ``make_kwargs``, or a ``gym.Env``) producing ``State`` objects; ``wrap_env`` wraps each copy."""

    _shape: Any = None  # of the first observation (all must have it)
    _outcome: Any = None  # Gymnasium's last reset or step output (``state`` is made from it)
    _episode = _t = 0  # episodes begun, steps into the current one
    _given_id: str | None = None  # (environments pickled before it was kept: their id)

    def __init__(self, env: str | gym.Env, device: str | torch.device = "cpu",
                 name: str | None = None, legacy_gym: bool = False,
                 wrap_env: Callable[[gym.Env], gym.Env] | None = None,
                 seed: int | None = None, **make_kwargs: Any):
        check_device(device)
        if legacy_gym:
            raise ValueError("legacy_gym=True asks for the old 'gym' package, which looprl does "
                             "not run: drop it and use Gymnasium's id (gymnasium.make covers "
                             "gym's environments), or port the environment to gymnasium.Env")
        if wrap_env is not None and not callable(wrap_env):
            raise TypeError(f"wrap_env must be a function from a gymnasium.Env to a wrapped one, "
                            f"got {type(wrap_env).__name__}")
        refuse_vector_wrapper(wrap_env, f"wrap_env={getattr(wrap_env, '__name__', '')}")
        made = isinstance(env, str)
        if not made and not isinstance(env, gym.Env):
            raise TypeError(_not_an_env(env))
        self._given_id = env if made else None  # what Ray's actors make: the id or path given
        if made and is_import_path(env):
            kind, env = import_environment(env)  # (registers the class with Gymnasium)
            if kind != "gym":
                raise ValueError(f"{self._given_id} is an SRL environment, not a Gymnasium "
                                 "one: give its name to a preset (looprl run env=..., or "
                                 "run_experiment(preset, name): one agent with a single-agent "
                                 "preset, several with a multi-agent one), or give a "
                                 "gymnasium.Env class")
        self._id = env if made else env_name(env)
        self._make_kwargs = make_kwargs if made else {}
        self._given = None if made else env  # a user's environment (wrappers included)
        self._wrap_env = wrap_env
        env = make_gym_env(env, **make_kwargs) if made else env
        self.env = env if wrap_env is None else wrap_env(env)
        self.name = name or self._given_id or self._id
        self.device = device
        self._seed = self.given_seed = check_seed(self.name, seed)

    def remote_env(self) -> tuple[str, dict[str, Any]] | str:
        """The id given and its ``gym.make`` arguments (``wrap_env`` too), else why Ray cannot."""
        if self._given is not None:
            return (f"{self.name} was given as a gymnasium.Env, which Ray's actors cannot make "
                    "again (they make environments from an id): register it with "
                    "gymnasium.register and give its id (wrappers: wrap_env), or run it locally")
        kwargs = dict(self._make_kwargs)
        if self._wrap_env is not None:
            try:
                pickle.dumps(self._wrap_env)
            except Exception:
                return (f"{self.name}'s wrap_env {self._wrap_env!r} does not pickle, so Ray's "
                        "actors cannot wrap their copies: give a function or class defined at "
                        "a module's top level (e.g. gymnasium.wrappers.FlattenObservation), "
                        "not a lambda or a local function")
            kwargs["wrap_env"] = self._wrap_env
        return self._given_id or self._id, kwargs

    def remade(self) -> GymEnvironment:
        """A new environment of the id given (with its arguments, ``wrap_env`` and seed)."""
        if self._given is not None:
            raise NotImplementedError("it was given as a gymnasium.Env, which cannot be made "
                                      "again: give GymEnvironment its id to have it rebuilt")
        return type(self)(self._given_id or self._id, device=self.device, name=self.name,
                          wrap_env=self._wrap_env, seed=self.given_seed, **self._make_kwargs)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> State:
        """Start an episode (seeded with ``seed``, or the constructor's first; with ``options``)."""
        self._outcome, self._state = self.reset_output(seed, options), None
        return self.state

    def reset_output(self, seed: int | None = None, options: dict[str, Any] | None = None
                     ) -> tuple[Any, dict[str, Any]]:
        """Gymnasium's ``reset``, checked to be its ``(observation, info)``."""
        seed = self._reset_seed(seed)
        self._episode, self._t = self._episode + 1, 0
        try:
            output = self.env.reset(seed=seed, options=options)
        except Exception as error:
            raise failure(self.name, "reset", error, self._episode,
                          hint=unpack_hint(error, "reset")) from error
        return gym_reset_output(output, self.name)

    def step(self, action: Any) -> State:
        self._outcome, self._state = self.step_output(action), None
        return self.state

    def step_arrays(self, action: Any) -> tuple[Any, float, bool, bool]:
        """``step`` without making the ``State``: ``(obs, reward, terminated, truncated)``."""
        obs, reward, terminated, truncated, _ = self._outcome = self.step_output(action)
        self._state = None
        return as_observation(obs, self.name), float(reward), bool(terminated), bool(truncated)

    def step_output(self, action: Any) -> tuple[Any, ...]:
        """Gymnasium's step of ``action``, checked to be its 5-tuple."""
        gym_action = action_to_numpy(action, self.env.action_space)
        self._t += 1
        try:
            output = self.env.step(gym_action)
        except Exception as error:
            space = self.env.action_space  # (Gymnasium's environments assert valid actions)
            if isinstance(error, AssertionError) and not space.contains(gym_action):
                raise ValueError(f"Invalid action {gym_action!r} for {self.name} (action space "
                                 f"{space}): {error}") from error
            raise failure(self.name, "step", error, self._episode, self._t,
                          hint=unpack_hint(error, "step")) from error
        return gym_step_output(output, self.name)

    @property
    def state(self) -> State:
        """The current ``State``, made from Gymnasium's last output when first read."""
        if self._state is None and self._outcome is not None:
            self._state = State.from_gym(self._outcome, device=self.device, source=self.name)
            observation = self._state.observation
            shape = tuple(observation.shape) if isinstance(observation, torch.Tensor) else None
            if self._shape is None:
                space = self.observation_space  # (a Box: what the presets size networks from)
                if isinstance(space, gym.spaces.Box) and shape not in (None, space.shape):
                    raise space_shape_error(self.name, space, shape)
                self._shape = shape
            elif shape != self._shape:
                raise shape_changed(self.name, self._shape, shape)
        return super().state

    observation_space = forwarded("env.observation_space")
    action_space = forwarded("env.action_space")

    def render(self, **kwargs: Any) -> Any:
        try:
            return self.env.render(**kwargs)
        except Exception as error:
            drop_frames(error)
            raise

    def close(self) -> None:
        try:
            self.env.close()
        except Exception as error:
            raise failure(self.name, "close", error) from error

    def duplicate(self, n: int) -> GymVectorEnvironment:
        """``n`` copies as a ``GymVectorEnvironment`` (deep copies of a given ``gym.Env``)."""
        kwargs: dict[str, Any] = {}
        if self._given is not None:
            env = partial(deep_copy, self.env, self.name)
        elif self._wrap_env is not None:  # made from the id, each copy wrapped alike
            env = partial(_made_and_wrapped, self._id, self._wrap_env, self._make_kwargs)
        else:
            env, kwargs = self._id, self._make_kwargs
        return GymVectorEnvironment(env, n, device=self.device, name=self.name,
                                    seed=self.given_seed, **kwargs)


def gym_registrations(*envs: Any) -> dict[str, Any]:
    """The Gymnasium registrations made here of the ids of ``envs``, for a run's Ray processes."""
    made = [env.remote_env() if isinstance(env, GymEnvironment) else env for env in envs]
    ids = [args.get("env_id") if env_id == "contextual" else env_id
           for env_id, args in (entry for entry in made if isinstance(entry, tuple))]
    ids += [env._id for env in envs if isinstance(env, GymEnvironment)]  # (an import path's:
    # its class registered here as ``module.Class``, the id its copies are made from)
    return {env_id: gym.registry[env_id] for env_id in ids
            if isinstance(env_id, str) and env_id in gym.registry}


def install_gym_registrations(registry: dict[str, Any]) -> None:
    """Register here the ids of ``registry`` (``gym_registrations``) that are missing."""
    for env_id, env_spec in registry.items():
        gym.registry.setdefault(env_id, env_spec)
