"""The environment copies an ``EnvRunner`` steps (``SRLCopies``: one at a time;
``VectorCopies``: a ``VectorEnvironment``, as one batch) and what it keeps of their results."""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np

from looprl.core import NamedArray, StateArray
from looprl.core.namedarray import as_numpy
from looprl.environments.base import VectorEnvironment
from looprl.environments.srl import checked_results, make

__all__ = ["Episode", "SRLCopies", "VectorCopies", "count_frames", "env_copies", "made",
           "receive", "receive_all", "report_episodes", "store_obs"]


@dataclass
class Episode:
    """A finished episode of env copy ``env``: its return and each agent's (one agent: ``()``)."""

    ret: float
    length: int
    env: int
    returns: tuple[float, ...] = ()


class SRLCopies:
    """Copies of an SRL environment, stepped one at a time; ``build`` makes a new copy."""

    plain = False  # observations are NamedArrays of the environment's fields

    def __init__(self, envs: list[Any], build: Callable[[], Any] | None = None):
        self.envs = envs
        self.build = build
        self.agent_count = envs[0].agent_count
        self.name = getattr(envs[0], "_name", None) or type(envs[0]).__name__
        self.episode = np.zeros(len(envs), dtype=np.int64)  # each copy's resets so far

    def reset(self, runner: Any, seed: int | None) -> None:
        """Reset every copy (copy ``i`` seeded with ``seed + i`` the first time)."""
        for i, env in enumerate(self.envs):
            if seed is not None:
                _seed(env, seed + i)
            self._reset(runner, i)

    def _reset(self, runner: Any, i: int) -> None:
        agents = self.agent_count
        runner._returns[i], runner._lengths[i] = 0.0, 0
        runner._stream_returns[i * agents:(i + 1) * agents] = 0.0
        results = self._call(runner, i, "reset")
        if results is not None:
            receive(runner, i, results)

    def step(self, runner: Any, group: int, asked: np.ndarray, action: Any) -> list[int]:
        """Step (or reset, if over) ``group``'s copies; which copies stepped (a bool each)."""
        agents = self.agent_count
        actions: dict[int, list[Any]] = {i: [None] * agents for i in runner.groups[group]}
        for row, s in enumerate(asked.tolist()):
            actions[s // agents][s % agents] = action[row]
        stepped = np.zeros(len(self.envs), dtype=bool)
        for i, copy_actions in actions.items():
            if runner._over[i]:
                self._reset(runner, i)
                continue
            results = self._call(runner, i, "step", copy_actions)
            if results is not None:
                runner._lengths[i] += 1
                count_frames(runner, 1)
                stepped[i] = True
                receive(runner, i, results)
        report_episodes(runner, stepped)
        return stepped

    def _call(self, runner: Any, i: int, method: str, *args: Any) -> list[Any] | None:
        """Copy ``i``'s ``method(*args)``, checked; ``None`` if it raised and was rebuilt."""
        env = self.envs[i]
        if method == "reset":
            self.episode[i] += 1
        runner.env_call = (time.monotonic(), i, method)
        try:
            results = getattr(env, method)(*args)
        except Exception as error:
            if runner.restarts is None or self.build is None:
                raise
            self._rebuild(runner, i, method, error)
            return None
        finally:
            runner.env_call = None
        return checked_results(results, env, method)

    def _rebuild(self, runner: Any, i: int, method: str, error: Exception) -> None:
        """Count ``error``, cut copy ``i``'s episode, and rebuild, seed and reset the copy."""
        step = int(runner._lengths[i]) + 1 if method == "step" else None
        restarts = runner.restarts
        restarts.note(self.name, i, method, error, int(self.episode[i]), step, runner.total_frames)
        if method == "step":
            runner.cut_episodes(np.flatnonzero(runner._copy == i))
        _close(self.envs[i])
        env = self.envs[i] = self.build()  # (in place: the meta components see the list)
        _seed(env, runner.seed + i + len(self.envs) * restarts.count)
        self._reset(runner, i)


def _seed(env: Any, seed: int) -> None:
    """Seed ``env``'s next reset, if it takes a seed."""
    with suppress(AttributeError, NotImplementedError):
        env.seed(seed)


def _close(env: Any) -> None:
    """Close a broken ``env``, whatever it raises (it is being replaced)."""
    with suppress(Exception):
        env.close()


class VectorCopies:
    """The copies of a ``VectorEnvironment`` (one agent each), stepped as one batch, their
    states passed through ``process`` (the agent's bodies) for the rows; ``build`` makes a
    new one (to rebuild them all when one raised, ``EnvRunner.restarts``)."""

    agent_count = 1
    plain = True  # observations are arrays (as the agent's ``act`` sees them)

    def __init__(self, env: VectorEnvironment, process: Callable[[StateArray], StateArray] | None,
                 build: Callable[[], VectorEnvironment] | None = None):
        self.env = env
        self.process = process
        self.build = build
        self.name = env.name
        self.arrays = process is None and hasattr(env, "step_arrays")  # no StateArray made
        self.everyone = np.ones(env.n_envs, dtype=bool)  # the copies a step moves, mostly
        self.everyone.flags.writeable = False

    def reset(self, runner: Any, seed: int | None) -> None:
        state = self._call(runner, "reset", seed)
        if state is None:
            return  # rebuilt and reset
        none = np.zeros(self.env.n_envs, dtype=bool)
        receive_all(runner, *self._rows(state), np.zeros(self.env.n_envs), none)
        runner._present[:] = True  # (every copy answers every step)

    def step(self, runner: Any, group: int, asked: np.ndarray, action: Any) -> np.ndarray:
        """Step every copy (those whose episode was over reset); which copies stepped."""
        if len(asked) != self.env.n_envs:
            raise RuntimeError(f"a vector environment steps all of its {self.env.n_envs} copies "
                               f"at once; {len(asked)} were asked for actions")
        output = self._call(runner, "step", action)
        if output is None:
            return ~self.everyone  # rebuilt and reset: none stepped
        if self.arrays:
            obs, reward, terminated, truncated = output
            rows, over = (obs, reward, terminated, truncated > terminated), terminated | truncated
        else:
            rows, reward, over = self._rows(output), as_numpy(output.reward), as_numpy(output.done)
        runner._lengths += 1
        stepped = self.everyone
        if runner._ended:  # the previous step ended some: those copies reset (actions ignored)
            stepped = ~runner._over
            runner._returns *= stepped
            runner._lengths *= stepped
            reward = reward * stepped
        count_frames(runner, self.env.n_envs if stepped is self.everyone else int(stepped.sum()))
        receive_all(runner, *rows, reward, over)
        if runner._ended:  # (now: this step ended some episode)
            report_episodes(runner, stepped)
        return stepped

    def _call(self, runner: Any, method: str, argument: Any) -> Any:
        """``reset(seed=argument)`` or ``step(argument)``; ``None`` if it raised and was rebuilt."""
        runner.env_call = (time.monotonic(), None, method)
        try:
            if method == "reset":
                return self.env.reset() if argument is None else self.env.reset(seed=argument)
            return (self.env.step_arrays if self.arrays else self.env.step)(argument)
        except Exception as error:
            if runner.restarts is None or self.build is None:
                raise
            self._rebuild(runner, getattr(error, "method", method), error)
            return None
        finally:
            runner.env_call = None

    def _rebuild(self, runner: Any, method: str, error: Exception) -> None:
        """Count ``error``, cut every episode, and rebuild, seed and reset the environment."""
        runner.restarts.note(self.name, None, method, error, None, None, runner.total_frames)
        runner.cut_episodes(np.arange(len(runner._copy)))
        _close(self.env)
        self.env = runner.envs = self.build()
        if runner.hooks is not None:
            for hub in runner.hooks.hubs:
                hub.metrics["env"] = self.env  # (what the meta components see)
        runner._returns[:], runner._lengths[:] = 0.0, 0
        self.reset(runner, runner.seed + self.env.n_envs * runner.restarts.count)

    def _rows(self, state: StateArray) -> tuple[np.ndarray, ...]:
        """``(obs, reward, terminated, truncated)`` of ``state`` as the agent sees it."""
        state = state if self.process is None else self.process(state)
        done, terminal = as_numpy(state.done), as_numpy(state.mask) == 0
        return as_numpy(state.observation), as_numpy(state.reward), done & terminal, done > terminal


def env_copies(env_name: Any, env_args: dict[str, Any] | None, n_envs: int, groups: int,
               process: Callable[[StateArray], StateArray] | None
               ) -> tuple[Any, SRLCopies | VectorCopies, int, int]:
    """``(envs, copies, n_envs, groups)`` of an ``EnvRunner`` (see its arguments): the env
    copies (a list, or a vector environment), their ``SRLCopies`` or ``VectorCopies``, and
    ``n_envs`` and ``groups`` (a vector environment's own)."""
    build = None
    if not isinstance(env_name, VectorEnvironment):
        if n_envs < groups or groups < 1:
            raise ValueError(f"need 1 <= groups <= n_envs, got groups={groups}, n_envs={n_envs}")
        build = env_name if callable(env_name) else functools.partial(
            made, env_name, env_args or {})
    first = env_name if build is None else build()
    if isinstance(first, VectorEnvironment):
        return first, VectorCopies(first, process, build), first.n_envs, 1
    envs = [first] + [build() for _ in range(n_envs - 1)]
    return envs, SRLCopies(envs, build), n_envs, groups


def made(name: str, args: dict[str, Any]) -> Any:
    """``make(name, **args)`` on a copy of ``args``: an environment object among them (a
    PettingZoo game built with arguments) is then each env copy's own."""
    return make(name, **copy.deepcopy(args))


def store_obs(runner: Any, streams: Any, obs: dict[str, Any]) -> None:
    """Write the observations of ``streams`` (an index, or a slice for all); ``ValueError`` if
    their fields or shapes differ from the first ones'."""
    batched = isinstance(streams, slice)
    seen = {name: np.shape(value)[batched:] for name, value in obs.items()}
    if runner._obs is None:
        runner._obs = NamedArray(**{
            name: np.zeros((len(runner._copy), *seen[name]), np.asarray(value).dtype)
            for name, value in obs.items()})
    store = runner._obs
    shapes = {name: array.shape[1:] for name, array in store.items()}
    if seen != shapes:
        raise ValueError(f"{runner._copies.name}'s observations changed shape or fields "
                         f"({seen} after {shapes}): an environment's observations must keep "
                         "one shape and one set of fields, the same for every agent (pad "
                         "them to one size)")
    for name, array in store.items():
        array[streams] = obs[name]


def report_episodes(runner: Any, moved: np.ndarray) -> None:
    """Report the episodes that the copies that ``moved`` (a bool per copy) just finished."""
    if not runner._over.any():
        return
    for i in np.flatnonzero(runner._over & moved).tolist():
        agents = runner.agent_count
        each = runner._stream_returns[i * agents:(i + 1) * agents] if agents > 1 else ()
        runner.episodes.append(Episode(float(runner._returns[i]), int(runner._lengths[i]), i,
                                       tuple(float(r) for r in each)))

def count_frames(runner: Any, frames: int) -> None:
    runner.frames += frames
    runner.total_frames += frames

def receive(runner: Any, i: int, results: list[Any]) -> None:
    """Keep env copy ``i``'s new ``results``; note whether all of its agents are done."""
    base, total, present, over = i * runner.agent_count, 0.0, False, True
    for a, result in enumerate(results):
        s = base + a
        runner._present[s] = result is not None
        if result is None:
            continue
        reward, done, truncated = _scalars(result)
        runner._reward[s], runner._done[s], runner._truncated[s] = reward, done, truncated
        store_obs(runner, s, result.obs)
        runner._stream_returns[s] += reward
        total += reward
        present, over = True, over and (done or truncated)
    runner._returns[i] += total
    runner._over[i] = present and over

def receive_all(runner: Any, obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                truncated: np.ndarray, returned: np.ndarray, over: np.ndarray) -> None:
    """Keep a vector environment's new rows; ``returned``: the environment's rewards."""
    runner._reward[:] = reward
    runner._done[:], runner._truncated[:] = terminated, truncated
    if runner._obs is None:
        store_obs(runner, slice(None), {"obs": obs})
    else:  # the vector environment keeps the shape (or says it changed)
        runner._obs.obs[:] = obs
    runner._returns += returned
    runner._over[:] = over
    runner._ended = bool(over.any())


def _scalars(result: Any) -> tuple[float, bool, bool]:
    """``(reward, done, truncated)`` of a ``StepResult`` (shape-``(1,)`` arrays)."""
    try:
        return float(result.reward[0]), bool(result.done[0]), bool(result.truncated[0])
    except (TypeError, IndexError):
        raise ValueError("a StepResult's reward, done and truncated must be shape-(1,) arrays, "
                         f"got {result.reward!r}, {result.done!r}, {result.truncated!r}; build "
                         "results with looprl.environments.step_result(...)") from None
