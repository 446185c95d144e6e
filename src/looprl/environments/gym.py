"""Gymnasium environments as looprl environments (numpy <-> torch at the boundary)."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from looprl.core import State
from looprl.core.namedarray import as_numpy
from looprl.core.suggest import did_you_mean
from looprl.environments.base import Environment


def make_gym_env(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` with a one-line error for unknown environment ids."""
    check_env_id(env_id)
    return gym.make(env_id, **kwargs)


def env_name(env: gym.Env) -> str:
    """A Gymnasium environment's id, or its class name when it was not registered."""
    return env.spec.id if env.spec is not None else type(env.unwrapped).__name__


def check_env_id(env_id: str) -> None:
    """Raise ``ValueError`` naming close matches if ``env_id`` is not registered.

    An Atari game (``'ALE/Breakout-v5'``, ``'Breakout'``) gets a pointer to the Atari presets
    and ``AtariEnvironment``, which add the standard preprocessing.
    """
    from looprl.environments.atari import game_name

    if env_id in gym.registry:
        return
    try:
        game = game_name(env_id)
    except (ImportError, ValueError):  # not an Atari game ale-py ships
        game = None
    if game is not None:
        raise ValueError(f"{env_id!r} is an Atari game: train it with an Atari preset (looprl "
                         f"train atari.ppo {game}) or play it in AtariEnvironment({game!r})")
    hint = did_you_mean(env_id, list(gym.registry), n=3)
    raise ValueError(f"Unknown environment {env_id!r}.{hint} "
                     "(Atari and MuJoCo ids need the 'atari'/'mujoco' extras installed.)")


def action_to_numpy(action: Any, space: gym.Space, n_envs: int | None = None) -> Any:
    """Convert an agent's action (tensor, array or number) to what ``space`` expects.

    ``Box`` actions are clipped to the space's bounds, here for every looprl environment (as
    SB3 and CleanRL do), so that rewards such as MuJoCo's control cost see the applied action;
    the agent keeps its unclipped sample for the log-probability.

    Args:
        action: one action, or with ``n_envs`` one action per row.
        space: the action space of one environment.
        n_envs: the number of rows of a vector environment's batch of actions.
    """
    action = as_numpy(action)
    if isinstance(space, gym.spaces.Discrete) and n_envs is None:
        return int(np.asarray(action).reshape(()))
    if isinstance(space, gym.spaces.Box):
        shape = space.shape if n_envs is None else (n_envs, *space.shape)
        array = np.asarray(action, dtype=space.dtype)
        if array.size != math.prod(shape):
            raise ValueError(f"Action of shape {array.shape} does not fit the action space {space}")
        return np.clip(array.reshape(shape), space.low, space.high)
    return action


class GymEnvironment(Environment):
    """A Gymnasium environment whose states are torch ``State`` objects.

    Args:
        env: an environment id (``'CartPole-v1'``) or an existing ``gym.Env``.
        device: where observation tensors are put.
        name: display name (defaults to the id).
        seed: seed of the first reset (later resets continue the environment's RNG).
        **make_kwargs: passed to ``gym.make`` (``render_mode='rgb_array'``, ...).

    Attributes:
        env: the wrapped Gymnasium environment.
    """

    _shape: Any = None  # of the first observation (all must have it)

    def __init__(self, env: str | gym.Env, device: str | torch.device = "cpu",
                 name: str | None = None, seed: int | None = None, **make_kwargs: Any):
        made = isinstance(env, str)
        self._given = None if made else env  # a user's environment (wrappers included)
        self._id = env if made else env_name(env)
        self._make_kwargs = make_kwargs if made else {}
        self.env = make_gym_env(env, **make_kwargs) if made else env
        self.name = name or self._id
        self.device = device
        self.seed = self._seed = seed  # _seed: of the next reset only

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        """Ray actors make the same Gymnasium id with the same ``gym.make`` arguments."""
        return self.name, dict(self._make_kwargs)

    def reset(self, seed: int | None = None) -> State:
        seed, self._seed = (self._seed if seed is None else seed), None
        self._state = State.from_gym(self.env.reset(seed=seed), device=self.device)
        self._check_shape()
        return self._state

    def step(self, action: Any) -> State:
        gym_action = action_to_numpy(action, self.env.action_space)
        try:
            outcome = self.env.step(gym_action)
        except AssertionError as error:  # Gymnasium's check of the action
            raise ValueError(f"Invalid action {gym_action!r} for {self.name} (action space "
                             f"{self.env.action_space}): {error}") from None
        self._state = State.from_gym(outcome, device=self.device)
        self._check_shape()
        return self._state

    def _check_shape(self) -> None:
        """``ValueError`` if the observation has another shape than the first one had (an
        observation that is not one tensor has the shape ``None``)."""
        observation = self._state.observation
        shape = tuple(observation.shape) if isinstance(observation, torch.Tensor) else None
        if self._shape is None:
            self._shape = shape
        elif shape != self._shape:
            raise shape_changed(self.name, self._shape, shape)

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

    def duplicate(self, n: int):
        """``n`` copies as a ``GymVectorEnvironment``: Gymnasium's native vectorized one where
        it exists, or deep copies of a given ``gym.Env`` (wrappers included, own seeds)."""
        from looprl.environments.vector import GymVectorEnvironment

        env = self._id if self._given is None else copies_of(self._given, self.name)
        return GymVectorEnvironment(env, n, device=self.device, name=self.name, seed=self.seed,
                                    **self._make_kwargs)


def copies_of(env: gym.Env, name: str) -> Callable[[], gym.Env]:
    """A factory of independent deep copies of ``env``, each with its own random seed.

    A copy that fails raises ``ValueError`` saying what to give instead.
    """

    def make() -> gym.Env:
        try:
            clone = copy.deepcopy(env)
        except Exception as error:  # noqa: BLE001 - any failure means the same advice
            raise ValueError(f"Cannot copy the environment {name} to run it in parallel "
                             f"({error}); give GymVectorEnvironment a function that makes one, "
                             "e.g. GymVectorEnvironment(lambda: MyWrapper(gymnasium.make(...)), "
                             "n_envs)") from None
        clone.reset(seed=int(np.random.SeedSequence().generate_state(1)[0]))  # own RNG
        return clone

    return make


def shape_changed(name: str, expected: Any, got: Any = None) -> ValueError:
    """The one-line error for an environment whose observations change shape."""
    got = f"shape {tuple(got)}" if got is not None else "another shape"
    return ValueError(f"{name} returned an observation of {got} after observations of "
                      f"shape {tuple(expected)}: an environment's observations must keep one "
                      "shape (pad them to one size, and declare it in observation_space)")
