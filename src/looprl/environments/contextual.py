"""Contextual environments, as in CARL (Benjamin et al., 2023): Gymnasium's environments with
their physical parameters as a *context*, and an *instance set* of contexts by instance id.
Example:
    >>> train = sample_contexts('CartPole-v1', 8, {'length': (0.25, 1.0)}, seed=0)
    >>> env = ContextualEnvironment('CartPole-v1', train, seed=0).duplicate(4)
    >>> len(contextual_envs(env))
    4"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from looprl.core.suggest import check_flag, check_seed, did_you_mean, is_whole, warn_once
from looprl.environments.base import VectorEnvironment
from looprl.environments.duplicate import DuplicateEnvironment, local_copies
from looprl.environments.gym import GymEnvironment
from looprl.environments.gym_helpers import deep_copy, make_gym_env
from looprl.environments.srl_adapters import GymnasiumEnvironment
from looprl.environments.vector import GymVectorEnvironment
from looprl.environments.wrappers import _wrappers

log = logging.getLogger(__name__)
Context = dict[str, float]
INSTANCE_MODES = ("random", "round_robin")


@dataclass(frozen=True)
class ContextFeature:
    """One physical parameter of an environment: its Gymnasium default and allowed range."""

    default: float
    low: float
    high: float


def _mujoco_features(torso_mass: float) -> dict[str, ContextFeature]:
    """Features of a MuJoCo locomotion task whose root body is ``torso``."""
    return {
        "gravity": ContextFeature(9.81, 0.1, 50.0),  # magnitude: opt.gravity[2] = -gravity
        "friction": ContextFeature(1.0, 0.05, 10.0),  # scale of every geom's friction
        "torso_mass": ContextFeature(torso_mass, torso_mass / 10, torso_mass * 10),
    }


_MUJOCO_TORSO_MASS = {"HalfCheetah-v5": 6.25020920502092, "Hopper-v5": 3.6651914291880923,
                      "Walker2d-v5": 3.6651914291880923, "Ant-v5": 0.32724923474893675}


#: The context features of each supported id, in observation order (defaults: Gymnasium's).
CONTEXT_FEATURES: dict[str, dict[str, ContextFeature]] = {
    "CartPole-v1": {
        "gravity": ContextFeature(9.8, 0.1, 100.0),
        "masscart": ContextFeature(1.0, 0.01, 10.0),
        "masspole": ContextFeature(0.1, 0.01, 10.0),
        "length": ContextFeature(0.5, 0.05, 10.0),  # half the pole's length
        "force_mag": ContextFeature(10.0, 1.0, 100.0),
        "tau": ContextFeature(0.02, 0.002, 0.2),
    },
    "Pendulum-v1": {
        "g": ContextFeature(10.0, 0.1, 100.0),
        "m": ContextFeature(1.0, 0.05, 10.0),
        "l": ContextFeature(1.0, 0.1, 10.0),
        "max_speed": ContextFeature(8.0, 0.5, 40.0),
        # (actions are clipped to the action space, [-2, 2]: a larger limit has no effect)
        "max_torque": ContextFeature(2.0, 0.1, 2.0),
        "dt": ContextFeature(0.05, 0.005, 0.5),
    },
    "MountainCar-v0": {
        "force": ContextFeature(0.001, 0.0001, 0.01),
        "gravity": ContextFeature(0.0025, 0.0001, 0.01),
        "goal_position": ContextFeature(0.5, 0.0, 0.6),  # positions are clipped to 0.6
        "max_speed": ContextFeature(0.07, 0.01, 0.5),
    },
    "Acrobot-v1": {
        "LINK_LENGTH_1": ContextFeature(1.0, 0.1, 10.0),
        "LINK_LENGTH_2": ContextFeature(1.0, 0.1, 10.0),  # drawn only: not in the dynamics
        "LINK_MASS_1": ContextFeature(1.0, 0.1, 10.0),
        "LINK_MASS_2": ContextFeature(1.0, 0.1, 10.0),
        "LINK_COM_POS_1": ContextFeature(0.5, 0.05, 5.0),
        "LINK_COM_POS_2": ContextFeature(0.5, 0.05, 5.0),
        "LINK_MOI": ContextFeature(1.0, 0.05, 10.0),  # of both links
    },
    **{env_id: _mujoco_features(mass) for env_id, mass in _MUJOCO_TORSO_MASS.items()},
}

#: Observation entries bounded by ``±feature``, widened to the feature's upper bound.
_OBSERVATION_LIMITS = {"Pendulum-v1": {2: "max_speed"}, "MountainCar-v0": {1: "max_speed"}}


def _set_attributes(env: gym.Env, context: Mapping[str, float], baseline: Any) -> None:
    """Classic control: the features are attributes that ``step`` reads."""
    for name, value in context.items():
        setattr(env, name, value)


def _set_cartpole(env: gym.Env, context: Mapping[str, float], baseline: Any) -> None:
    """CartPole caches ``total_mass`` and ``polemass_length`` in ``__init__``: recompute them."""
    _set_attributes(env, context, baseline)
    env.total_mass = env.masspole + env.masscart
    env.polemass_length = env.masspole * env.length


def _set_mujoco(env: gym.Env, context: Mapping[str, float], baseline: Any) -> None:
    """MuJoCo: gravity, friction (a scale of the friction when wrapped) and torso mass."""
    import mujoco

    model = env.model
    model.opt.gravity[2] = -context["gravity"]
    model.geom_friction[:] = baseline * context["friction"]
    model.body_mass[model.body("torso").id] = context["torso_mass"]
    mujoco.mj_setConst(model, env.data)  # derived constants (subtree masses, inverse weights)


#: How a context is written into each environment (others: ``_set_attributes``).
_APPLY: dict[str, Callable[[gym.Env, Mapping[str, float], Any], None]] = {
    "CartPole-v1": _set_cartpole, **dict.fromkeys(_MUJOCO_TORSO_MASS, _set_mujoco)
}


def features_of(env_id: str) -> dict[str, ContextFeature]:
    """The context features of ``env_id``; ``ValueError`` listing the supported ids if none."""
    if env_id not in CONTEXT_FEATURES:
        raise ValueError(f"No context features for {env_id!r}; supported environments: "
                         f"{', '.join(CONTEXT_FEATURES)}")
    return CONTEXT_FEATURES[env_id]


def _check_value(env_id: str, name: str, value: Any) -> float:
    features = features_of(env_id)
    if name not in features:
        hint = did_you_mean(name, list(features), n=3)
        raise ValueError(f"{env_id} has no context feature {name!r}.{hint} Valid features: "
                         f"{', '.join(features)}")
    feature = features[name]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{env_id} feature {name!r} must be a number, got {value!r}")
    if not feature.low <= value <= feature.high:  # also rejects nan
        raise ValueError(f"{env_id} feature {name!r} = {value!r} is outside its bounds "
                         f"[{feature.low}, {feature.high}]")
    return float(value)


def _check_instance_set(env_id: str, contexts: Mapping[int, Mapping[str, Any]] | None
                        ) -> dict[int, Context]:
    """The contexts checked and completed with the defaults (``None``: instance 0, the default)."""
    contexts = {0: {}} if contexts is None else contexts
    if not isinstance(contexts, Mapping) or len(contexts) == 0:
        raise ValueError(f"contexts must be a non-empty dict of instance id -> context, got "
                         f"{contexts!r}")
    for key, ctx in contexts.items():
        if not is_whole(key):
            raise ValueError(f"Instance ids must be integers, got {key!r}")
        if not isinstance(ctx, Mapping):
            raise ValueError(f"Instance {key}'s context must be a dict of feature -> value "
                             f"(e.g. {{'length': 0.5}}), got {ctx!r}")
    defaults = {name: feature.default for name, feature in features_of(env_id).items()}
    return {int(key): {**defaults, **{name: _check_value(env_id, name, value) for name, value
                                      in ctx.items()}} for key, ctx in contexts.items()}


def _instance_rng(seed: int | None) -> np.random.Generator:
    """The instance-choosing RNG: a stream apart from the environment's ``np_random``."""
    return np.random.default_rng(None if seed is None else [seed, 0xC0471E7])


class ContextualEnv(gym.Wrapper):
    """A Gymnasium environment (a ``CONTEXT_FEATURES`` id) whose physics each reset sets from
    ``next_instance`` or an instance ``instance_mode`` draws; ``hide_context=False`` observes it."""

    def __init__(self, env_or_id: str | gym.Env,
                 contexts: Mapping[int, Mapping[str, float]] | None = None,
                 hide_context: bool = True, instance_mode: str = "random", seed: int | None = None,
                 **make_kwargs: Any):
        if not isinstance(env_or_id, str) and env_or_id.spec is None:
            raise ValueError("ContextualEnv needs an environment made by gymnasium.make (it has no "
                             f"spec); supported environments: {', '.join(CONTEXT_FEATURES)}")
        env_id = env_or_id if isinstance(env_or_id, str) else env_or_id.spec.id
        features_of(env_id)
        check_flag("hide_context", hide_context)
        if instance_mode not in INSTANCE_MODES:
            raise ValueError(f"Unknown instance_mode {instance_mode!r}; use one of "
                             f"{', '.join(INSTANCE_MODES)}")
        super().__init__(make_gym_env(env_id, **make_kwargs) if isinstance(env_or_id, str)
                         else env_or_id)  # (make_gym_env: require_mujoco for a MuJoCo id)
        self.env_id = env_id
        self.make_kwargs = dict(make_kwargs)
        self.hide_context = hide_context
        self.instance_mode = instance_mode
        self.instance_id: int | None = None
        self.context: Context | None = None
        self._instances = _check_instance_set(env_id, contexts)
        self._next: int | None = None
        self._cursor = 0
        self._rng = _instance_rng(check_seed(env_id, seed))
        # what a context is applied relative to: a MuJoCo model's friction when wrapped
        self._baseline = (self.env.unwrapped.model.geom_friction.copy()
                          if env_id in _MUJOCO_TORSO_MASS else None)
        self._observation_space = self._make_observation_space()

    @property
    def instance_ids(self) -> list[int]:
        """The ids of the instance set, in round-robin order."""
        return list(self._instances)

    @property
    def contexts(self) -> dict[int, Context]:
        """The instance set: instance id -> full context (a copy)."""
        return {key: dict(ctx) for key, ctx in self._instances.items()}

    @property
    def next_instance(self) -> int | None:
        """The instance the next reset uses (then cleared); ``None``: ``instance_mode`` picks."""
        return self._next

    @next_instance.setter
    def next_instance(self, instance_id: int | None) -> None:
        if instance_id is not None and instance_id not in self._instances:
            ids = self.instance_ids
            more = f", ... ({len(ids)} in all)" if len(ids) > 10 else ""
            raise ValueError(f"next_instance {instance_id!r} is not in the instance set "
                             f"(ids {', '.join(map(str, ids[:10]))}{more})")
        self._next = instance_id

    def set_instance_set(self, contexts: Mapping[int, Mapping[str, float]] | None) -> None:
        """Replace the instance set from the next reset on (round robin starts again)."""
        self._instances = _check_instance_set(self.env_id, contexts)
        self._cursor = 0
        if self._next not in self._instances:
            self._next = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self._rng, self._cursor = _instance_rng(seed), 0
        self._apply()
        obs, info = self.env.reset(seed=seed, options=options)
        return self._observe(obs), {**info, "instance_id": self.instance_id}

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = {**info, "instance_id": self.instance_id}
        return self._observe(obs), reward, terminated, truncated, info

    def _apply(self) -> None:
        """Choose the next instance and write its context into the environment."""
        ids = self.instance_ids
        if self._next is not None:  # (in the set: checked when set, cleared when it changes)
            self.instance_id, self._next = self._next, None
        elif self.instance_mode == "round_robin":
            self._cursor += 1
            self.instance_id = ids[(self._cursor - 1) % len(ids)]
        else:
            self.instance_id = ids[int(self._rng.integers(len(ids)))]
        self.context = dict(self._instances[self.instance_id])
        _APPLY.get(self.env_id, _set_attributes)(self.env.unwrapped, self.context, self._baseline)

    def _observe(self, obs: Any) -> Any:
        if self.hide_context:
            return obs
        values = np.array(list(self.context.values()), dtype=np.float32)
        return np.concatenate([obs, values]).astype(self._observation_space.dtype)

    def _make_observation_space(self) -> gym.Space:
        space, limits = self.env.observation_space, _OBSERVATION_LIMITS.get(self.env_id)
        if limits:
            low, high = space.low.copy(), space.high.copy()
            for index, name in limits.items():
                bound = features_of(self.env_id)[name].high
                low[index], high[index] = min(low[index], -bound), max(high[index], bound)
            space = gym.spaces.Box(low, high, dtype=space.dtype)
        if self.hide_context:
            return space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise ValueError(f"hide_context=False needs a flat Box observation space, "
                             f"{self.env_id} has {space}")
        features = features_of(self.env_id).values()
        dtype = np.promote_types(space.dtype, np.float32)
        low = np.concatenate([space.low, np.float32([f.low for f in features])]).astype(dtype)
        high = np.concatenate([space.high, np.float32([f.high for f in features])]).astype(dtype)
        return gym.spaces.Box(low, high, dtype=dtype)


def sample_contexts(env_id: str, n: int, features: Mapping[str, tuple[float, float]],
                    seed: int | None = None) -> dict[int, Context]:
    """``n`` instances with ``features`` drawn uniformly in their ``(low, high)`` ranges."""
    if not is_whole(n) or n < 1:
        raise ValueError(f"n must be a positive number of instances, got {n!r}")
    if not isinstance(features, Mapping):
        raise ValueError(f"features maps context features to (low, high) ranges, e.g. "
                         f"{{'length': (0.25, 1.0)}}, got {features!r}")
    if n > 1 and not features:  # (context.train=5 alone trained on five alike, unsaid)
        warn_once(log, "%d instances of %s with no features drawn are %d copies of the default "
                  "one: give ranges of the features to vary (context.ranges.length=[0.25,1.0]; "
                  "its features: %s)", n, env_id, n, ", ".join(features_of(env_id)))
    ranges = {name: _check_range(env_id, name, span) for name, span in features.items()}
    order = [name for name in features_of(env_id) if name in ranges]
    rng = np.random.default_rng(check_seed("sample_contexts", seed))
    return {i: {name: float(rng.uniform(*ranges[name])) for name in order} for i in range(n)}


def _check_range(env_id: str, name: str, span: Any) -> tuple[float, float]:
    if not isinstance(span, (tuple, list)) or len(span) != 2:
        raise ValueError(f"The range of {name!r} must be a (low, high) pair, got {span!r}")
    low, high = (_check_value(env_id, name, value) for value in span)
    if not low <= high:
        raise ValueError(f"The range of {name!r} must have low <= high, got {span!r}")
    return low, high


def contextual_envs(env: Any) -> list[ContextualEnv]:
    """The ``ContextualEnv`` of each copy in ``env`` (a looprl or Gymnasium env, or a list)."""
    found = [next((wrapper for wrapper in _wrappers(single) if isinstance(wrapper, ContextualEnv)),
                  None) for single in _gym_envs(env)]
    if not found or any(wrapper is None for wrapper in found):
        if isinstance(env, list | tuple):  # a Ray actor's copies (SRL environments)
            raise ValueError(f"the env copies ({type(env[0]).__name__ if env else 'none'}) hold "
                             "no ContextualEnv; make them with make('contextual', env_id=..., "
                             "contexts=...) (a preset built on a ContextualEnvironment plays it "
                             "on Ray)")
        raise ValueError(f"{getattr(env, 'name', type(env).__name__)} holds no ContextualEnv; "
                         "make it with ContextualEnvironment(env_id, contexts) (and "
                         ".duplicate(n) for copies)")
    return found


def _gym_envs(env: Any) -> list[gym.Env]:
    if isinstance(env, DuplicateEnvironment):
        env = env.envs
    if isinstance(env, list | tuple):
        return [single for copy in env for single in _gym_envs(copy)]
    if isinstance(env, (GymEnvironment, GymVectorEnvironment, GymnasiumEnvironment)):
        env = env.env
    if isinstance(env, gym.Env):
        return [env]
    if isinstance(env, gym.vector.VectorEnv):
        if not hasattr(env, "envs"):
            raise ValueError(f"{type(env).__name__} has no list of environments to search for "
                             "a ContextualEnv; make copies with ContextualEnvironment(...)"
                             ".duplicate(n)")
        return list(env.envs)
    raise TypeError(f"contextual_envs needs a looprl or Gymnasium environment, got {env!r}")


class ContextualEnvironment(GymEnvironment):
    """A ``GymEnvironment`` around a ``ContextualEnv`` (the arguments are theirs)."""

    def __init__(self, env_id: str, contexts: Mapping[int, Mapping[str, float]] | None = None,
                 hide_context: bool = True, instance_mode: str = "random", seed: int | None = None,
                 device: str | torch.device = "cpu", name: str | None = None, **make_kwargs: Any):
        wrapper = ContextualEnv(env_id, contexts, hide_context, instance_mode, seed, **make_kwargs)
        super().__init__(wrapper, device=device, name=name or env_id, seed=seed)

    @property
    def contextual(self) -> ContextualEnv:
        """The ``ContextualEnv`` this environment steps."""
        return self.env

    def duplicate(self, n: int) -> GymVectorEnvironment:
        return GymVectorEnvironment(functools.partial(_copy, self.contextual, self.name), n,
                                    device=self.device, name=self.name, seed=self.given_seed)

    def remade(self) -> ContextualEnvironment:
        w = self.contextual
        return ContextualEnvironment(w.env_id, w.contexts, w.hide_context, w.instance_mode,
                                     self.given_seed, self.device, self.name, **w.make_kwargs)

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        """Ray actors play ``make("contextual", ...)`` with this instance set."""
        w = self.contextual
        return "contextual", {"env_id": w.env_id, "contexts": w.contexts, "hide_context":
                              w.hide_context, "instance_mode": w.instance_mode, **w.make_kwargs}


def _copy(env: ContextualEnv, name: str) -> ContextualEnv:
    """A deep copy of ``env`` with RNGs of its own, its round robin at the start again."""
    clone = deep_copy(env, name)
    clone._cursor = 0
    return clone


def contextual_copies(env_args: dict[str, Any], one_by_one: bool, n: int) -> VectorEnvironment:
    """``local_copies`` of ``ContextualEnvironment(**env_args)`` (``remote_env``'s arguments)."""
    return local_copies(functools.partial(ContextualEnvironment, **env_args), one_by_one, n)


def contextual_environment(env_id: str, contexts: Any = None, hide_context: bool = True,
                           instance_mode: str = "random", **make_kwargs: Any
                           ) -> GymnasiumEnvironment:
    """A ``ContextualEnv`` as a single-agent SRL environment, registered as ``"contextual"``."""
    return GymnasiumEnvironment(ContextualEnv(env_id, contexts, hide_context, instance_mode,
                                              **make_kwargs))
