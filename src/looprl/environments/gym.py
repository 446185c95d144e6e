"""Gymnasium environments as looprl environments (numpy <-> torch at the boundary)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium as gym
import torch

from looprl.core import State
from looprl.core.state import as_observation
from looprl.environments.base import Environment
from looprl.environments.faults import failure, gym_reset_output, gym_step_output
from looprl.environments.gym_helpers import (
    action_to_numpy,
    copies_of,
    env_name,
    make_gym_env,
    shape_changed,
)
from looprl.environments.vector import GymVectorEnvironment


def check_gymnasium(legacy_gym: bool, wrap_env: Any = None) -> None:
    """One-line errors for ALL's ``legacy_gym=True`` and for a ``wrap_env`` that is not
    callable."""
    if legacy_gym:
        raise ValueError("legacy_gym=True asks for the old 'gym' package, which looprl does not "
                         "run: drop it and use Gymnasium's id (gymnasium.make covers gym's "
                         "environments), or port the environment to gymnasium.Env")
    if wrap_env is not None and not callable(wrap_env):
        raise TypeError(f"wrap_env must be a function from a gymnasium.Env to a wrapped one, "
                        f"got {type(wrap_env).__name__}")


def _made_and_wrapped(env_id: str, wrap_env: Callable[[gym.Env], gym.Env],
                      make_kwargs: dict[str, Any]) -> gym.Env:
    """``wrap_env(gym.make(env_id, **make_kwargs))``: one copy of a wrapped environment."""
    return wrap_env(make_gym_env(env_id, **make_kwargs))


class GymEnvironment(Environment):
    """A Gymnasium environment whose states are torch ``State`` objects (ALL's arguments, plus
    ``seed``).

    Args:
        env: an environment id (``'CartPole-v1'``) or an existing ``gym.Env``.
        device: where observation tensors are put.
        name: display name (defaults to the id).
        legacy_gym: ALL's switch to the old ``gym`` package: looprl runs Gymnasium only, so
            ``True`` raises a ``ValueError`` saying what to do instead.
        wrap_env: a function from the made ``gym.Env`` to a wrapped one; ``duplicate`` wraps
            every copy with it too.
        seed: seed of the first reset (later resets continue the environment's RNG).
        **make_kwargs: passed to ``gym.make`` (``render_mode='rgb_array'``, ...).

    Attributes:
        env: the wrapped Gymnasium environment.
    """

    _shape: Any = None  # of the first observation (all must have it)
    _outcome: Any = None  # Gymnasium's last reset or step output (``state`` is made from it)
    _episode = 0  # episodes begun (for the line of a failing step or reset)
    _t = 0  # steps into the episode

    def __init__(self, env: str | gym.Env, device: str | torch.device = "cpu",
                 name: str | None = None, legacy_gym: bool = False,
                 wrap_env: Callable[[gym.Env], gym.Env] | None = None,
                 seed: int | None = None, **make_kwargs: Any):
        check_gymnasium(legacy_gym, wrap_env)
        made = isinstance(env, str)
        self._id = env if made else env_name(env)
        self._make_kwargs = make_kwargs if made else {}
        self.env = make_gym_env(env, **make_kwargs) if made else env
        self._given = None if made else env  # a user's environment (wrappers included)
        self._wrap_env = wrap_env
        if wrap_env is not None:
            self.env = wrap_env(self.env)
        self.name = name or self._id
        self.device = device
        self.seed = self._seed = seed  # _seed: of the next reset only

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        """Ray actors make the same Gymnasium id with the same ``gym.make`` arguments."""
        return self.name, dict(self._make_kwargs)

    def reset(self, seed: int | None = None) -> State:
        """Start an episode (seeded with ``seed``, or the constructor's for the first)."""
        self._outcome, self._state = self.reset_output(seed), None
        return self.state

    def reset_output(self, seed: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Gymnasium's ``reset``, checked to be its ``(observation, info)``; an exception inside
        it is an ``EnvironmentFailure`` naming the environment and the episode."""
        seed, self._seed = (self._seed if seed is None else seed), None
        self._episode, self._t = self._episode + 1, 0
        try:
            output = self.env.reset(seed=seed)
        except Exception as error:
            raise failure(self.name, "reset", error, self._episode) from error
        return gym_reset_output(output, self.name)

    def step(self, action: Any) -> State:
        self._outcome, self._state = self.step_output(action), None
        return self.state

    def step_arrays(self, action: Any) -> tuple[Any, float, bool, bool]:
        """``step`` without making the ``State`` (``state`` makes it when read):
        ``(observation, reward, terminated, truncated)`` as NumPy values (the collector reads
        them)."""
        obs, reward, terminated, truncated, _ = self._outcome = self.step_output(action)
        self._state = None
        return as_observation(obs, self.name), float(reward), bool(terminated), bool(truncated)

    def step_output(self, action: Any) -> tuple[Any, ...]:
        """Gymnasium's step of ``action``, checked to be its 5-tuple; ``ValueError`` in one
        line for an invalid action, ``EnvironmentFailure`` for an exception inside the
        environment's ``step`` (naming the episode and the step)."""
        gym_action = action_to_numpy(action, self.env.action_space)
        self._t += 1
        try:
            output = self.env.step(gym_action)
        except Exception as error:
            raise self._failed(gym_action, error) from error
        return gym_step_output(output, self.name)

    def _failed(self, action: Any, error: Exception) -> Exception:
        """What an exception in ``step`` of ``action`` becomes: ``ValueError`` for an action
        outside the action space (Gymnasium's environments assert it), else an
        ``EnvironmentFailure``."""
        space = self.env.action_space
        if isinstance(error, AssertionError) and not space.contains(action):
            return ValueError(f"Invalid action {action!r} for {self.name} (action space "
                              f"{space}): {error}")
        return failure(self.name, "step", error, self._episode, self._t)

    @property
    def state(self) -> State:
        """The current ``State``, made from Gymnasium's last output when first read;
        ``ValueError`` if its observation has another shape than the first one had."""
        if self._state is None and self._outcome is not None:
            self._state = State.from_gym(self._outcome, device=self.device, source=self.name)
            observation = self._state.observation
            shape = tuple(observation.shape) if isinstance(observation, torch.Tensor) else None
            if self._shape is None:
                self._shape = shape
            elif shape != self._shape:
                raise shape_changed(self.name, self._shape, shape)
        return super().state

    @property
    def observation_space(self) -> gym.Space:
        return self.env.observation_space

    @property
    def action_space(self) -> gym.Space:
        return self.env.action_space

    def render(self, **kwargs: Any) -> Any:
        return self.env.render(**kwargs)

    def close(self) -> None:
        self.env.close()

    def duplicate(self, n: int) -> GymVectorEnvironment:
        """``n`` copies as a ``GymVectorEnvironment``: Gymnasium's native vectorized one where
        it exists, or deep copies of a given ``gym.Env`` (wrappers included, own seeds)."""
        if self._given is not None:
            env = copies_of(self.env, self.name)
        elif self._wrap_env is not None:  # made from the id, each copy wrapped alike
            env = partial(_made_and_wrapped, self._id, self._wrap_env, self._make_kwargs)
        else:
            env = self._id
        return GymVectorEnvironment(env, n, device=self.device, name=self.name, seed=self.seed,
                                    **self._make_kwargs)

