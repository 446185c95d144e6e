"""Vectorized Gymnasium environments producing ``StateArray`` batches."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from looprl.core import StateArray
from looprl.core.observations import as_observation
from looprl.core.suggest import check_device, check_seed, is_whole
from looprl.environments.base import VectorEnvironment, forwarded
from looprl.environments.faults import (
    EnvironmentOutputError,
    failure,
    gym_reset_output,
    gym_step_output,
    unpack_hint,
    vector_rewards,
)
from looprl.environments.gym_helpers import (
    SHAPE_ERRORS,
    action_to_numpy,
    check_env_id,
    check_render_mode,
    check_text_arguments,
    env_name,
    make_gym_env,
    shape_changed,
    space_shape_error,
    warned_once,
)


def check_copies(owner: str, n_envs: Any) -> int:
    """``n_envs`` as an ``int`` (a NumPy integer too), or a one-line ``TypeError`` naming
    ``owner`` for what is no whole number >= 1."""
    if not is_whole(n_envs) or n_envs < 1:
        raise TypeError(f"{owner} needs the number of copies n_envs as an int >= 1, got "
                        f"{n_envs!r}")
    return int(n_envs)


def make_vector_env(env_id: str | Callable[[], gym.Env], n_envs: int, **kwargs: Any
                    ) -> gym.vector.VectorEnv:
    """Gymnasium's own vector env of ``env_id`` (next-step autoreset), else a ``SyncVectorEnv``."""
    if "vectorization_mode" in kwargs or "vector_kwargs" in kwargs:
        raise TypeError("GymVectorEnvironment(env, n_envs) steps its copies in this process and "
                        "takes no vectorization_mode or vector_kwargs: for Gymnasium's other "
                        "vector environments (copies in subprocesses), make one and give it, "
                        "GymVectorEnvironment(gymnasium.make_vec(id, n_envs, "
                        "vectorization_mode='async'), name)")
    if callable(env_id) and kwargs:
        raise TypeError(f"GymVectorEnvironment(factory, n_envs) got gym.make arguments "
                        f"{sorted(kwargs)}, which a factory does not take: pass them to "
                        f"gymnasium.make inside the factory")
    if not callable(env_id):
        check_env_id(env_id)
        if gym.spec(env_id).vector_entry_point:
            check_text_arguments(env_id, kwargs)
            check_render_mode(env_id, kwargs, vector=True)
            try:
                with warned_once(env_id):
                    made = gym.make_vec(env_id, num_envs=n_envs,
                                        vectorization_mode="vector_entry_point", **kwargs)
            except TypeError as error:  # (as gym.make's: naming the id)
                raise TypeError(f"{error} was raised from the environment creator for {env_id} "
                                f"with kwargs ({kwargs})") from error
            if _autoreset_mode(made) == gym.vector.AutoresetMode.NEXT_STEP:
                return made
            made.close()  # (it resets a done copy in the same step, or never: copies instead)
        # (not make_vec's "sync" mode: its copies' closure does not pickle into a checkpoint)
        env_id = partial(make_gym_env, env_id, **kwargs)
    return gym.vector.SyncVectorEnv([partial(CheckedOutput.made, env_id)] * n_envs)


class CheckedOutput(gym.Wrapper):
    """A copy whose ``step`` and ``reset`` outputs are checked as ``GymEnvironment``'s."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._name = env_name(env)
        self.observation: Any = None  # (the last, to name its shape if it cannot be batched)

    @classmethod
    def made(cls, make: Callable[[], gym.Env]) -> CheckedOutput:
        return cls(make())

    def step(self, action: Any) -> Any:
        output = gym_step_output(self.env.step(action), self._name)
        self.observation = output[0]
        return output

    def reset(self, **kwargs: Any) -> Any:
        output = gym_reset_output(self.env.reset(**kwargs), self._name)
        self.observation = output[0]
        return output


def _odd_shape(vector_env: gym.vector.VectorEnv, expected: tuple[int, ...]) -> Any:
    """The odd shape of a ``CheckedOutput`` copy's last observation (not ``expected``), or None."""
    shapes = (np.shape(one.observation) for one in getattr(vector_env, "envs", ()) if isinstance(
        getattr(one, "observation", None), np.ndarray | np.generic | int | float))
    return next((shape for shape in shapes if shape != expected), None)


def tuple_rows(obs: Any, space: gym.Space) -> Any:
    """A ``Tuple`` space's batch (one per item) as one row per copy; any other batch as it is."""
    if isinstance(space, gym.spaces.Tuple) and isinstance(obs, tuple):
        with suppress(ValueError):  # (items of different shapes: not numbers of one shape)
            return np.stack(obs, axis=1)
    return obs


def state_array_from_numpy(obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                           truncated: np.ndarray, device: str | torch.device,
                           **extra: np.ndarray) -> StateArray:
    """A ``StateArray`` from one batched Gymnasium step; ``extra`` arrays become entries too."""
    reward = np.asarray(reward, dtype=np.float32)
    arrays = {
        "observation": as_observation(obs, batch_dims=1), "reward": reward,
        "done": terminated | truncated, "mask": (~terminated).astype(np.float32),
        **{key: np.asarray(value) for key, value in extra.items()},
    }  # fmt: skip
    if device == "cpu" or getattr(device, "type", None) == "cpu":  # no .to() calls (per step)
        x = {key: torch.from_numpy(value) for key, value in arrays.items()}
    else:
        x = {key: torch.from_numpy(value).to(device) for key, value in arrays.items()}
    return StateArray(x, (reward.shape[0],), device=device)


class NumpyVectorEnvironment(VectorEnvironment):
    """Base of vector environments around ``env``, which has Gymnasium's ``VectorEnv`` API."""

    _t = 0  # steps since the last reset (for the line of a failing step)
    _shape: tuple[int, ...] | None = None  # of each copy's observations (the first reset's)

    def __init__(self, env: Any, name: str, n_envs: int, device: str | torch.device = "cpu",
                 seed: int | None = None):
        check_device(device)
        self.env = env
        self.name = name
        self.n_envs = n_envs
        self.device = device
        self._seed = check_seed(name, seed)

    def reset(self, seed: int | None = None) -> StateArray:
        obs, info = self.reset_output(seed)
        zeros = np.zeros(self.n_envs, dtype=bool)
        self._state = self._make_state(obs, np.zeros(self.n_envs, np.float32), zeros, zeros, info)
        return self._state

    def reset_output(self, seed: int | None = None) -> tuple[np.ndarray, Any]:
        """The copies' ``reset`` (seeded with ``seed``, or the constructor's for the first)."""
        seed = self._reset_seed(seed)
        self._t = 0
        try:
            obs, info = self.env.reset(seed=seed)
        except EnvironmentOutputError:
            raise
        except Exception as error:
            if isinstance(error, ValueError) and any(words in str(error)
                                                     for words in SHAPE_ERRORS):
                raise space_shape_error(self.name, self.observation_space) from error
            raise self._failure("reset", error) from error
        return self._kept_shape(as_observation(tuple_rows(obs, self.observation_space),
                                               self.name, batch_dims=1)), info

    def _kept_shape(self, obs: np.ndarray) -> np.ndarray:
        """``obs``, whose rows must keep the first reset's shape (else a one-line error)."""
        if self._shape is None:
            self._shape = obs.shape[1:]
        elif obs.shape[1:] != self._shape:
            raise shape_changed(self.name, self._shape, obs.shape[1:])
        return obs

    def _failure(self, method: str, error: Exception) -> Exception:
        where = f"in one of its {self.n_envs} copies" + (
            f", vector step {self._t} since reset" if method == "step" else "")
        return failure(self.name, method, error, hint=unpack_hint(error, method), where=where)

    def _make_state(self, obs, reward, terminated, truncated, info: Any = None) -> StateArray:
        return state_array_from_numpy(obs, reward, terminated, truncated, self.device)

    observation_space = forwarded("env.single_observation_space")
    action_space = forwarded("env.single_action_space")

    def close(self) -> None:
        try:
            self.env.close()
        except Exception as error:
            raise self._failure("close", error) from error

    def __reduce_ex__(self, protocol: Any) -> Any:
        """As ``object``'s, refused over an ``AsyncVectorEnv``, whose pipes a copy would close."""
        if isinstance(self.env.unwrapped, gym.vector.AsyncVectorEnv):
            raise TypeError(f"{self.name}: a {type(self).__name__} over a gymnasium "
                            "AsyncVectorEnv (copies in subprocesses) cannot be copied or "
                            "pickled; make a new one for each copy")
        return super().__reduce_ex__(protocol)


class GymVectorEnvironment(NumpyVectorEnvironment):
    """``n_envs`` copies of a Gymnasium environment (an id or a factory), ``GymVectorEnvironment(
    'CartPole-v1', 8)``, or ALL's ``GymVectorEnvironment(vec_env, name)`` of a ``VectorEnv``."""

    def __init__(self, env: str | Callable[[], gym.Env] | gym.vector.VectorEnv,
                 n_envs: int | str | None = None, device: str | torch.device = "cpu",
                 name: str | None = None, seed: int | None = None, **make_kwargs: Any):
        if isinstance(env, gym.vector.VectorEnv):
            vector_env, name = env, _given_name(env, n_envs, name, make_kwargs)
            n_envs = vector_env.num_envs
        else:
            if not (isinstance(env, str) or callable(env)):
                raise TypeError(f"GymVectorEnvironment takes an id, a function that makes a "
                                f"gym.Env or a gymnasium.vector.VectorEnv, got "
                                f"{type(env).__name__}")
            n_envs = check_copies(f"GymVectorEnvironment({env!r}, n_envs)", n_envs)
            vector_env = make_vector_env(env, n_envs, **make_kwargs)
        if name is None:
            name = env if isinstance(env, str) else env_name(vector_env.envs[0])
        super().__init__(vector_env, name, n_envs, device, seed)
        self._id = env
        self._make_kwargs = make_kwargs

    def step(self, action: Any) -> StateArray:
        """Step every copy with one action per row (``Box`` actions clipped to the bounds)."""
        self.step_arrays(action)
        return self.state

    def step_arrays(self, action: Any) -> tuple[np.ndarray, ...]:
        """``step`` without making the ``StateArray``: ``(obs, reward, terminated, truncated)``."""
        action = action_to_numpy(action, self.action_space, self.n_envs)
        self._t += 1
        try:
            obs, reward, terminated, truncated, info = self.env.step(action)
        except EnvironmentOutputError:
            raise
        except Exception as error:  # (Gymnasium's environments assert valid actions)
            if isinstance(error, AssertionError) and not self.env.action_space.contains(action):
                raise ValueError(f"Invalid actions {action!r} for {self.name} (action space of "
                                 f"each of the {self.n_envs} environments: "
                                 f"{self.action_space}): {error}") from error
            if isinstance(error, ValueError) and any(  # (Gymnasium's and NumPy's words for it)
                    words in str(error) for words in SHAPE_ERRORS):
                expected = tuple(self.state.observation.shape[1:])
                raise shape_changed(self.name, expected, _odd_shape(self.env, expected)) from error
            raise self._failure("step", error) from error
        if isinstance(info, dict) and ("final_obs" in info or "final_observation" in info):
            raise ValueError(f"{self.name} reset a copy in the step that ended its episode (its "
                             f"info holds the final observation: same-step autoreset, which its "
                             f"metadata['autoreset_mode'] does not declare); GymVectorEnvironment "
                             f"steps vector environments with next-step autoreset: make it reset "
                             f"a done copy on the next step (AutoresetMode.NEXT_STEP)")
        if isinstance(obs, tuple):  # (a Tuple space's batch: one row per copy)
            obs = tuple_rows(obs, self.observation_space)
        obs = as_observation(obs, self.name, batch_dims=1)
        if obs.shape[1:] != self._shape:  # (reset kept the first shape)
            self._kept_shape(obs)
        self._state = None
        self._arrays = (obs, vector_rewards(reward, self.name, self._t), terminated, truncated)
        return self._arrays

    def copy(self) -> GymVectorEnvironment:
        if isinstance(self._id, gym.vector.VectorEnv):
            raise NotImplementedError(f"{self.name}: a given Gymnasium vector environment "
                                      "cannot be remade; give GymVectorEnvironment an id or a "
                                      "factory to have copies")
        return GymVectorEnvironment(self._id, self.n_envs, self.device, self.name,
                                    **self._make_kwargs)

    remade = copy  # (a copy is made anew)


def _autoreset_mode(vector_env: gym.vector.VectorEnv) -> gym.vector.AutoresetMode:
    """How ``vector_env`` resets a copy whose episode ended (undeclared: next step)."""
    mode = vector_env.metadata.get("autoreset_mode")
    try:
        return gym.vector.AutoresetMode(mode or gym.vector.AutoresetMode.NEXT_STEP)
    except ValueError:  # (Python's "'next_step' is not a valid AutoresetMode")
        raise ValueError(f"{type(vector_env).__name__}'s metadata['autoreset_mode'] is "
                         f"{mode!r}, no gymnasium.vector.AutoresetMode: give "
                         "AutoresetMode.NEXT_STEP") from None


def _given_name(vector_env: gym.vector.VectorEnv, n_envs: Any, name: str | None,
                make_kwargs: dict[str, Any]) -> str | None:
    """The name of a given vector environment: ALL's second argument, or ``name``."""
    if make_kwargs:
        raise TypeError(f"GymVectorEnvironment got a made vector environment and gym.make "
                        f"arguments {sorted(make_kwargs)}: pass them to gymnasium.make_vec")
    mode = _autoreset_mode(vector_env)
    if mode != gym.vector.AutoresetMode.NEXT_STEP:
        raise ValueError(f"GymVectorEnvironment steps vector environments with next-step "
                         f"autoreset (a done row's next action is ignored), got one made with "
                         f"autoreset_mode={mode.name}: make it with "
                         f"vector_kwargs={{'autoreset_mode': "
                         f"gymnasium.vector.AutoresetMode.NEXT_STEP}} (the default)")
    if n_envs is not None and not isinstance(n_envs, str):
        raise TypeError(f"GymVectorEnvironment(vec_env, name, device=...) takes the name "
                        f"second, got {n_envs!r}: the vector environment has "
                        f"{vector_env.num_envs} copies already")
    name = n_envs if name is None else name  # (ALL's second argument, or None)
    if name is None:
        name = vector_env.spec.id if vector_env.spec is not None else type(vector_env).__name__
    return name
