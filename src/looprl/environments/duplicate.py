"""``DuplicateEnvironment``: ALL's vector environment over a list of looprl environments."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from looprl.core import State, StateArray
from looprl.core.leaves import as_numpy
from looprl.core.suggest import check_device
from looprl.environments.atari import AtariEnvironment
from looprl.environments.base import Environment, VectorEnvironment, wrapped_seed
from looprl.environments.faults import EnvironmentFailure, failure
from looprl.environments.gym import GymEnvironment
from looprl.environments.gym_helpers import deep_copy, shape_changed
from looprl.environments.mujoco import MujocoEnvironment
from looprl.environments.srl_adapters import SRLAgentEnvironment
from looprl.environments.vector import state_array_from_numpy

__all__ = ["DuplicateEnvironment", "atari_copies", "gym_copies", "local_copies", "state_arrays"]


_DEFAULTS = frozenset({"observation", "reward", "done", "mask"})


def state_arrays(state: State) -> tuple[Any, float, bool, bool]:
    """``(observation, reward, terminated, truncated)`` of one ``State`` as NumPy values."""
    terminated = bool(float(state.mask) == 0.0)
    return (as_numpy(state.observation), float(state.reward), terminated,
            bool(state.done) and not terminated)


class DuplicateEnvironment(VectorEnvironment):
    """``envs`` (distinct, of the same spaces) stepped one after another as one batch, next-step
    autoreset, copy ``i`` seeded with ``wrapped_seed(s + i)``; it keeps their common scalars."""

    def __init__(self, envs: Sequence[Environment], device: str | torch.device = "cpu"):
        check_device(device)
        self.envs = _checked(envs)
        self.n_envs = len(self.envs)
        self.name = self.envs[0].name
        self.device = device
        self._over = np.zeros(self.n_envs, dtype=bool)  # the copies the next step resets
        self._extras: dict[str, np.ndarray] = {}
        self._obs: np.ndarray | None = None
        self._steps = [getattr(env, "step_arrays", None) for env in self.envs]
        self._states = all(step is None for step in self._steps)  # (every copy makes States)
        self._users = [not type(env).__module__.startswith("looprl.") for env in self.envs]

    @property
    def observation_space(self) -> Any:
        return self.envs[0].observation_space

    @property
    def action_space(self) -> Any:
        return self.envs[0].action_space

    def reset(self, seed: int | None = None) -> StateArray:
        """Reset every copy (copy ``i`` with ``seed + i``, when given or set by ``seed``)."""
        seed = self._next_seed(seed)  # (each copy restores itself: its own _reset_seed)
        self._over[:] = True
        self._advance(None, seed)
        return self.state

    def step(self, action: Any) -> StateArray:
        """Step every copy with its row of ``action`` (reset those whose episode ended)."""
        self._advance(as_numpy(action))
        return self.state

    def step_arrays(self, action: Any) -> tuple[np.ndarray, ...]:
        """``step`` without making the ``StateArray``: ``(obs, reward, terminated, truncated)``."""
        return self._advance(as_numpy(action))

    def _advance(self, action: Any, seed: int | None = None) -> tuple[np.ndarray, ...]:
        """Step each copy with its row of ``action`` (reset it if its episode ended) into arrays."""
        if action is not None and _rows(action) != self.n_envs:
            got = f"{_rows(action)} rows" if _rows(action) is not None else "one"
            raise ValueError(f"{self.name}: step() takes one action per environment, a list "
                             f"or a tensor of {self.n_envs} rows, got {got} "
                             f"({' '.join(repr(action).split())[:80]})")
        rows: list[tuple[Any, float, bool, bool]] = []
        states: list[State] = []
        try:
            for i, env in enumerate(self.envs):
                if self._over[i]:
                    states.append(env.reset() if seed is None
                                  else env.reset(seed=wrapped_seed(seed + i)))
                    rows.append((state_arrays(states[-1])[0], 0.0, False, False))
                elif self._steps[i] is not None:
                    rows.append(self._steps[i](action[i]))
                else:
                    states.append(env.step(action[i]))
                    rows.append(state_arrays(states[-1]))
        except Exception as error:
            i = len(rows)
            if not self._users[i] or isinstance(error, EnvironmentFailure):
                raise  # (looprl's own environments report their own)
            method = "reset" if self._over[i] else "step"
            raise failure(self.envs[i].name, method, error, copy=i) from error
        self._extras = _common_extras(states) if self._states else {}
        n = self.n_envs
        if self._obs is None:
            first = np.asarray(rows[0][0])
            self._obs = np.zeros((n, *first.shape), first.dtype)
        obs, shape = self._obs, self._obs.shape[1:]
        reward = np.empty(n)  # (float64, as the returns sum them; the states hold float32)
        terminated, truncated = np.empty(n, bool), np.empty(n, bool)
        for i, (observation, reward[i], terminated[i], truncated[i]) in enumerate(rows):
            if np.shape(observation) != shape:
                raise shape_changed(self.name, shape, np.shape(observation))
            obs[i] = observation
        self._over = terminated | truncated
        self._state, self._arrays = None, (obs.copy(), reward, terminated, truncated)
        return self._arrays

    def _make_state(self, *arrays: np.ndarray) -> StateArray:
        return state_array_from_numpy(*arrays, self.device, **self._extras)

    def copy(self) -> DuplicateEnvironment:
        """Independent copies of the environments (deep copies of their ``gymnasium.Env``)."""
        return DuplicateEnvironment([_copy(env) for env in self.envs], self.device)

    def remade(self) -> DuplicateEnvironment:
        """The environments made again (``Environment.remade``)."""
        return DuplicateEnvironment([env.remade() for env in self.envs], self.device)

    def render(self, **kwargs: Any) -> Any:
        """Render the first copy."""
        return self.envs[0].render(**kwargs)

    def checkpoint_ready(self) -> bool:
        """Whether a checkpoint now resumes as the run goes on (one Atari game: at episode ends)."""
        one_game = self.n_envs == 1 and isinstance(self.envs[0], AtariEnvironment)
        return bool(self._over[0]) or not one_game

    def prepare_checkpoint(self, frame: int) -> None:
        for env in self.envs:
            env.prepare_checkpoint(frame)

    @property
    def needs_reset(self) -> bool:  # type: ignore[override]
        return any(env.needs_reset for env in self.envs)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def _rows(action: Any) -> int | None:
    """The number of rows of an action batch (``None``: a single number)."""
    try:
        return len(action)
    except TypeError:  # (a number, a 0-d array)
        return None


def _common_extras(states: list[State]) -> dict[str, np.ndarray]:
    """The further single-number entries that all ``states`` have, one array each."""
    each = []
    for state in states:
        values = {key: np.asarray(as_numpy(v)) for key, v in state.items() if key not in _DEFAULTS}
        each.append({key: v for key, v in values.items() if v.ndim == 0 and v.dtype.kind in "biuf"})
    keys = set(each[0]).intersection(*each[1:]) if each else set()
    return {key: np.stack([extras[key] for extras in each]) for key in sorted(keys)}


def local_copies(build: Callable[[], Environment], one_by_one: bool, n: int
                 ) -> VectorEnvironment:
    """``n`` copies of ``build()``: a ``DuplicateEnvironment`` (``one_by_one``), else duplicated."""
    if one_by_one:
        return DuplicateEnvironment([build() for _ in range(n)])
    first = build()
    try:
        return first.duplicate(n)
    finally:
        first.close()


def gym_copies(env_id: str, make_kwargs: dict[str, Any], one_by_one: bool,
               n: int) -> VectorEnvironment:
    """``local_copies`` of ``GymEnvironment(env_id, **make_kwargs)``."""
    return local_copies(functools.partial(GymEnvironment, env_id, **make_kwargs), one_by_one, n)


def srl_agent_copies(name: str, env_args: dict[str, Any], one_by_one: bool,
                     n: int) -> VectorEnvironment:
    """``local_copies`` of the one-agent SRL environment ``name``'s view (a single-agent
    preset's, as a local run steps it)."""
    return local_copies(functools.partial(SRLAgentEnvironment.made, name, env_args),
                        one_by_one, n)


def atari_copies(env_args: dict[str, Any], one_by_one: bool, n: int) -> VectorEnvironment:
    """``local_copies`` of ``AtariEnvironment(game, **options)``, ``game`` in ``env_args``."""
    options = dict(env_args)
    game = options.pop("game")
    return local_copies(functools.partial(AtariEnvironment, game, **options), one_by_one, n)


def _copy(env: Environment) -> Environment:
    """A copy of a ``GymEnvironment`` (or ``MujocoEnvironment``) over a deep copy of its env."""
    if isinstance(env, GymEnvironment):
        mujoco = {"no_info": env.no_info} if isinstance(env, MujocoEnvironment) else {}
        return (MujocoEnvironment if mujoco else GymEnvironment)(
            deep_copy(env.env, env.name), device=env.device, name=env.name, **mujoco)
    raise NotImplementedError(f"{type(env).__name__} cannot be copied by DuplicateEnvironment; "
                              "evaluate in a DuplicateEnvironment of new environments")


def _checked(envs: Any) -> list[Environment]:
    """``envs`` as a list, or an error saying what DuplicateEnvironment takes."""
    if isinstance(envs, Environment) or not isinstance(envs, Sequence) or not envs:
        raise TypeError("DuplicateEnvironment takes a non-empty list of environments, e.g. "
                        "DuplicateEnvironment([GymEnvironment('CartPole-v1') for _ in range(4)])"
                        "; for n copies of one environment use env.duplicate(n)")
    for env in envs:
        if not isinstance(env, Environment):
            raise TypeError(f"DuplicateEnvironment steps looprl Environments (GymEnvironment, "
                            f"AtariEnvironment, ...), got {type(env).__name__}: wrap a "
                            "gymnasium.Env in GymEnvironment, or use env.duplicate(n)")
    if len({id(env) for env in envs}) < len(envs):
        raise ValueError("DuplicateEnvironment got the same environment more than once: give "
                         "distinct objects, e.g. [GymEnvironment(id) for _ in range(n)]")
    first = envs[0]
    for env in envs[1:]:  # (the agent acts in the first one's spaces)
        if _layout(env) != _layout(first):
            raise ValueError(f"DuplicateEnvironment steps copies of one environment, but "
                             f"{env.name} has observations {env.observation_space} and actions "
                             f"{env.action_space}, {first.name} {first.observation_space} and "
                             f"{first.action_space}: give a list of one environment's copies")
    return list(envs)


def _layout(env: Environment) -> tuple[Any, ...]:
    """What an agent relies on: the observations' shape and the actions' kind, number and shape."""
    actions = env.action_space
    return (getattr(env.observation_space, "shape", None), type(actions),
            getattr(actions, "n", None), getattr(actions, "shape", None))
