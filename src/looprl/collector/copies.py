"""The environment copies an ``EnvRunner`` steps and the latest result of each of their streams:
``Copies``, SRL environments stepped one at a time, and ``VectorCopies``, a
``VectorEnvironment`` stepped as one batch, which differs only in how it calls the environment.
A policy's action is clipped into a ``Box`` or checked against a ``Discrete`` space
(``collector.actions``) before a copy takes it; a copy that raises is rebuilt, its normalizers
going on from the statistics it had."""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np

from looprl.collector.actions import action_spaces, env_action
from looprl.core import NamedArray, StateArray
from looprl.core.leaves import as_numpy
from looprl.environments.base import VectorEnvironment, wrapped_seed
from looprl.environments.faults import EnvironmentFailure, failure
from looprl.environments.gym_helpers import episode_cap
from looprl.environments.srl import agent_count, checked_results, make, result_scalars
from looprl.environments.wrappers import load_normalization, read_normalization

__all__ = ["Copies", "Episode", "VectorCopies", "env_copies", "made"]

#: what ``Copies._call`` returns where the call raised and the copies were rebuilt (not
#: ``None``: an environment's own ``None`` is a wrong result, checked and named)
REBUILT: Any = object()


@dataclass
class Episode:
    """A finished episode of env copy ``env``: its return and each agent's (one agent: ``()``)."""

    ret: float
    length: int
    env: int
    returns: tuple[float, ...] = ()


class Copies:
    """Copies of an SRL environment (``envs``, of ``agent_count`` agents each), stepped one at a
    time, and what their streams last received; ``build`` makes a new copy (to replace one that
    raised, given ``EnvRunner.restarts``); ``episode``: each copy's resets so far.

    Stream ``i * agent_count + a`` is agent ``a`` of copy ``i`` (``stream_copy``,
    ``stream_agent``). Per stream: ``present`` (a result waits for an action), ``obs`` (an array,
    or a ``NamedArray`` of the environment's fields), ``reward``, ``done``, ``truncated``,
    ``agent_returns`` and ``playing`` (its episode goes on, with or without a result now); per
    copy: ``returns``, ``lengths`` and ``over`` (no agent plays on). ``turns``: some agent has been
    without a result (a turn-based game): only the streams ``present`` act."""

    def __init__(self, envs: list[Any], build: Callable[[], Any] | None = None):
        first = envs[0]
        count = agent_count(first)
        name = getattr(first, "name", None)  # (looprl's adapters': the wrapped env's)
        self._start_streams(len(envs), count,
                            name if isinstance(name, str) else type(first).__name__, build)
        self.envs = envs
        self.episode = np.zeros(len(envs), dtype=np.int64)
        self.spaces = action_spaces(first)

    def _start_streams(self, n_envs: int, agent_count: int, name: str,
                       build: Callable[[], Any] | None) -> None:
        """The streams' state before any result: ``n_envs`` copies of ``agent_count`` agents."""
        n = n_envs * agent_count
        self.agent_count, self.name, self.build = agent_count, name, build
        self.stream_copy = np.repeat(np.arange(n_envs), agent_count)
        self.stream_agent = np.tile(np.arange(agent_count), n_envs)
        self.present = np.zeros(n, dtype=bool)
        self.obs: Any = None
        self.reward = np.zeros(n, dtype=np.float32)
        self.done = np.zeros(n, dtype=bool)
        self.truncated = np.zeros(n, dtype=bool)
        self.agent_returns = np.zeros(n)
        self.playing = np.zeros(n, dtype=bool)
        self.returns = np.zeros(n_envs)
        self.lengths = np.zeros(n_envs, dtype=np.int64)
        self.over = np.zeros(n_envs, dtype=bool)
        self.turns = False

    @property
    def needs_reset(self) -> bool:
        """Whether a copy must be reset before it steps (restored from a checkpoint)."""
        return any(getattr(env, "needs_reset", False) for env in self.envs)

    def observe(self, streams: np.ndarray) -> Any:
        """The latest observations of ``streams`` (a copy)."""
        obs = self.obs
        every = len(streams) == len(self.present) and isinstance(obs, np.ndarray)
        return obs.copy() if every else obs[streams]

    def _call(self, runner: Any, i: int | None, method: str, call: Callable[..., Any],
              *args: Any, **kwargs: Any) -> Any:
        """``call(*args, **kwargs)``, env copy ``i``'s ``method`` (``None``: every copy's), noted
        in ``runner.env_call``; ``REBUILT`` if it raised and copies were rebuilt (``_rebuild``)."""
        runner.env_call = (time.monotonic(), i, method)
        try:
            return call(*args, **kwargs)
        except Exception as error:
            if runner.restarts is None or self.build is None:
                if i is None or isinstance(error, EnvironmentFailure):
                    raise  # (a vector environment names its copies' faults itself)
                raise failure(self.name, method, error, *self.place(i, method),
                              copy=i) from error
            self._rebuild(runner, i, method, error)
            return REBUILT
        finally:
            runner.env_call = None

    def report(self, runner: Any, moved: np.ndarray) -> None:
        """Add the episodes the copies that ``moved`` (a bool each) just finished to ``runner``."""
        if not np.count_nonzero(self.over):
            return
        agents = self.agent_count
        for i in np.flatnonzero(self.over & moved).tolist():
            each = self.agent_returns[i * agents:(i + 1) * agents] if agents > 1 else ()
            runner.episodes.append(Episode(float(self.returns[i]), int(self.lengths[i]), i,
                                           tuple(float(r) for r in each)))

    @property
    def env_cap(self) -> int:
        """The environment's ``episode_cap``: its time limit, else ``DEFAULT_EPISODE_CAP``."""
        return episode_cap(self.envs[0])

    #: the runner's ``max_episode_steps`` unless given (``None``: episodes are not cut)
    default_cap = env_cap

    def reset(self, runner: Any, seed: int | None) -> None:
        """Start a new episode in every copy (copy ``i`` seeded with ``seed + i``, if given)."""
        for i, env in enumerate(self.envs):
            if seed is not None:
                _seed(env, wrapped_seed(seed + i))
            self._reset(runner, i)

    def _reset(self, runner: Any, i: int) -> None:
        streams = slice(i * self.agent_count, (i + 1) * self.agent_count)
        self.returns[i], self.lengths[i], self.agent_returns[streams] = 0.0, 0, 0.0
        self.done[streams] = self.truncated[streams] = self.playing[streams] = False
        results = self._env_call(runner, i, "reset")
        if results is not None:
            self._receive(i, results)

    def step(self, runner: Any, group: int, asked: np.ndarray, action: Any) -> np.ndarray:
        """Step the copies of ``runner.groups[group]`` with the ``action`` of each stream ``asked``
        (those whose episode was over reset instead; an agent already done gets ``None``, as in
        SRL), count the frames, report the episodes that ended; which copies stepped (bools)."""
        agents = self.agent_count
        actions: dict[int, list[Any]] = {i: [None] * agents for i in runner.groups[group]}
        done = self.done
        spaces = self.spaces  # (None: no action to clip or check)
        for row, s in enumerate(asked.tolist()):
            if not done[s]:
                one = action[row]
                space = None if spaces is None else spaces[s % agents]
                if space is not None and not isinstance(one, NamedArray):  # (named: as it is)
                    one = env_action(one, space, self.name, s % agents)
                actions[s // agents][s % agents] = one
        stepped = np.zeros(len(self.envs), dtype=bool)
        for i, copy_actions in actions.items():
            if self.over[i]:
                self._reset(runner, i)
                continue
            results = self._env_call(runner, i, "step", copy_actions)
            if results is not None:
                self.lengths[i] += 1
                runner.frames += 1
                runner.total_frames += 1
                stepped[i] = True
                self._receive(i, results)
        self.report(runner, stepped)
        return stepped

    def cut(self, runner: Any, long: np.ndarray) -> None:
        """End the episodes of the copies ``long`` (a bool each) as truncated: agents whose turn has
        not come again at their latest rows, the others at the result waiting for an action."""
        for i in np.flatnonzero(long).tolist():
            streams = np.flatnonzero(self.stream_copy == i)
            waiting = ~self.present[streams]
            self.truncated[streams[~waiting & ~self.done[streams]]] = True
            runner.cut_episodes(streams[waiting])

    def _receive(self, i: int, results: list[Any]) -> None:
        """Keep copy ``i``'s new ``results``; note whether all of its agents are done. A result
        ending an episode already ended counts as ``None`` (SRL's "garbage steps")."""
        base, total, present = i * self.agent_count, 0.0, False
        for a, result in enumerate(results):
            s = base + a
            if result is not None:
                reward, done, truncated = result_scalars(result)
                if (done or truncated) and (self.done[s] or self.truncated[s]):
                    result = None
            self.present[s] = result is not None
            if result is None:
                self.turns = True
                continue
            self.reward[s], self.done[s], self.truncated[s] = reward, done, truncated
            self._store_obs(s, result.obs)
            self.agent_returns[s] += reward
            self.playing[s] = not (done or truncated)
            total += reward
            present = True
        self.returns[i] += total
        self.over[i] = present and not self.playing[base:base + self.agent_count].any()

    def _store_obs(self, stream: int, obs: dict[str, Any]) -> None:
        """Write the observation fields of ``stream`` (checked against the first ones')."""
        seen = {name: np.shape(value) for name, value in obs.items()}
        if self.obs is None:
            self.obs = NamedArray(**{
                name: np.zeros((len(self.present), *seen[name]), np.asarray(value).dtype)
                for name, value in obs.items()})
            self._shapes = seen  # (every later result is checked against these)
        shapes = self._shapes
        if seen != shapes:
            raise ValueError(f"{self.name}'s observations changed shape or fields ({seen} after "
                             f"{shapes}): an environment's observations must keep one shape and "
                             "one set of fields, the same for every agent (pad them to one size)")
        for name, array in self.obs.items():
            value = obs[name]
            dtype = value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype
            if dtype != array.dtype and not np.can_cast(dtype, array.dtype, "same_kind"):
                raise ValueError(f"{self.name}'s observation {name!r} changed dtype ({dtype} after "
                                 f"{array.dtype}), which would cut its values: give it one dtype "
                                 "from the first result on (e.g. np.float32)")
            array[stream] = value

    def _env_call(self, runner: Any, i: int, method: str, *args: Any) -> list[Any] | None:
        """Copy ``i``'s ``method(*args)``, checked; ``None`` if it raised and was rebuilt."""
        env = self.envs[i]
        if method == "reset":
            self.episode[i] += 1
        results = self._call(runner, i, method, getattr(env, method), *args)
        return None if results is REBUILT else checked_results(results, env, method)

    def close(self) -> None:
        """Close every copy; an exception is an ``EnvironmentFailure`` naming the copy."""
        for i, env in enumerate(self.envs):
            try:
                env.close()
            except EnvironmentFailure:
                raise
            except Exception as error:
                raise failure(self.name, "close", error, copy=i) from error

    def place(self, i: int, method: str) -> tuple[int, int | None]:
        """The episode of copy ``i`` and, in ``step``, its step (from 1)."""
        return int(self.episode[i]), int(self.lengths[i]) + 1 if method == "step" else None

    def _rebuild(self, runner: Any, i: int, method: str, error: Exception) -> None:
        """Count ``error``, cut copy ``i``'s episode, and rebuild, seed and reset the copy."""
        restarts = runner.restarts
        restarts.note(self.name, i, method, error, *self.place(i, method), runner.total_frames)
        if method == "step":
            runner.cut_episodes(np.flatnonzero(self.stream_copy == i))
        env = self.envs[i] = _rebuilt(self.envs[i], self.build, self.name)  # (in place)
        _seed(env, wrapped_seed(runner.seed + i + len(self.envs) * restarts.count))
        self._reset(runner, i)


def _seed(env: Any, seed: int) -> None:
    """Seed ``env``'s next reset, if it takes a seed."""
    with suppress(AttributeError, NotImplementedError):
        env.seed(seed)


def _rebuilt(env: Any, build: Callable[[], Any], name: str) -> Any:
    """``build()`` in place of the broken ``env`` (closed, whatever that raises), its
    normalizers going on from ``env``'s statistics (a rebuilt copy scales as before)."""
    statistics = read_normalization(env)
    with suppress(Exception):
        env.close()
    new = build()
    load_normalization(new, statistics, name, freeze=False)
    return new


class VectorCopies(Copies):
    """The copies of a ``VectorEnvironment`` (one agent each), stepped as one batch, their states
    passed through ``process`` (the agent's bodies); ``build`` makes a new one (``None``: its
    ``remade()``). Its episodes are not cut unless asked (``default_cap``): its own time limits
    end them."""

    default_cap = None

    def __init__(self, env: VectorEnvironment, process: Callable[[StateArray], StateArray] | None,
                 build: Callable[[], VectorEnvironment] | None = None):
        self._start_streams(env.n_envs, 1, env.name, build or self._remade)  # (one, not a list)
        self.env = env
        self.process = process
        self.raw = hasattr(env, "step_arrays")  # (its rewards as they came: float64)
        self.arrays = process is None and self.raw  # no StateArray made
        self.everyone = np.ones(env.n_envs, dtype=bool)  # the copies a step moves, mostly
        self.everyone.flags.writeable = False
        self._ones = np.ones(env.n_envs, dtype=np.int64)  # (``lengths += 1``, cheaper)
        self._ones.flags.writeable = False
        self.ended = False  # some copy's episode is over: the next step resets it
        self.episode = np.zeros(env.n_envs, dtype=np.int64)

    @property
    def env_cap(self) -> int:
        return episode_cap(self.env)

    def place(self, i: int | None, method: str) -> tuple[int | None, int | None]:
        """The episode and step (from 1) of a call of a one-copy environment (the local
        single-environment presets'); ``(None, None)`` for several (each copy has its own)."""
        if len(self.episode) != 1:
            return None, None
        if method == "reset" or self.over[0]:  # (an ended copy resets in this step)
            return int(self.episode[0]) + (method != "reset"), None
        return int(self.episode[0]), int(self.lengths[0]) + 1

    def close(self) -> None:
        self.env.close()

    @property
    def needs_reset(self) -> bool:
        return bool(getattr(self.env, "needs_reset", False))

    def reset(self, runner: Any, seed: int | None) -> None:
        """Start a new episode in every copy (from ``seed``, if given, wrapped as ``Copies``')."""
        self.returns[:], self.lengths[:] = 0.0, 0
        self.episode += 1
        env = self.env
        state = self._call(runner, None, "reset", env.reset,
                           **({} if seed is None else {"seed": wrapped_seed(seed)}))
        if state is REBUILT:
            return  # (and reset)
        self._receive_rows(*self._rows(state), np.zeros(env.n_envs), np.zeros(env.n_envs, bool))
        self.present[:] = True  # (every copy answers every step)

    def step(self, runner: Any, group: int, asked: np.ndarray, action: Any) -> np.ndarray:
        if len(asked) != self.env.n_envs:
            raise RuntimeError(f"a vector environment steps all of its {self.env.n_envs} copies "
                               f"at once; {len(asked)} were asked for actions")
        step = self.env.step_arrays if self.raw else self.env.step
        output = self._call(runner, None, "step", step, action)
        if output is REBUILT:
            return ~self.everyone  # (and reset): none stepped
        if self.arrays:
            obs, reward, terminated, truncated = output
            rows, over = (obs, reward, terminated, truncated > terminated), terminated | truncated
        else:  # (the rows of the processed states; the return of the rewards as they came)
            state = self.env.state if self.raw else output
            rows, over = self._rows(state), as_numpy(state.done)
            reward = output[1] if self.raw else as_numpy(state.reward)
        self.lengths += self._ones
        stepped = self.everyone
        if self.ended:  # the previous step ended some: those copies reset (actions ignored)
            stepped = ~self.over
            self.episode += self.over
            self.returns[self.over] = 0.0  # (not ``*= stepped``: a NaN return would stay NaN)
            self.lengths *= stepped
            reward = np.where(stepped, reward, 0)
        frames = self.env.n_envs if stepped is self.everyone else int(np.count_nonzero(stepped))
        runner.frames += frames
        runner.total_frames += frames
        self._receive_rows(*rows, reward, over)
        if self.ended:  # (now: this step ended some episode)
            self.report(runner, stepped)
        return stepped

    def cut(self, runner: Any, long: np.ndarray) -> None:
        """Restart every copy (one cannot be reset alone): ``runner.truncate``."""
        runner.truncate()

    def _receive_rows(self, obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                      truncated: np.ndarray, returned: np.ndarray, over: np.ndarray) -> None:
        """Keep the new rows; ``returned``: the environment's rewards."""
        self.reward[:] = reward
        self.done[:], self.truncated[:] = terminated, truncated
        if self.obs is None:
            self.obs = np.zeros((len(self.present), *np.shape(obs)[1:]), np.asarray(obs).dtype)
        self.obs[:] = obs  # (the vector environment keeps the shape, or says it changed)
        self.returns += returned
        self.over[:] = over
        self.ended = np.count_nonzero(over) > 0  # (a third of ``any()``'s cost)

    def _rebuild(self, runner: Any, i: None, method: str, error: Exception) -> None:
        """Count ``error``, cut every episode, and rebuild, seed and reset the environment."""
        method = getattr(error, "method", method)  # (a copy reset inside ``step``: "reset")
        one = 0 if len(self.present) == 1 else None  # (a one-copy env's: its copy 0, as Ray's)
        runner.restarts.note(self.name, one, method, error, *self.place(0, method),
                             runner.total_frames)
        runner.cut_episodes(np.arange(len(self.present)))
        try:
            self.env = runner.envs = _rebuilt(self.env, self.build, self.name)
        except NotImplementedError as why:  # (``remade`` of a user's env: the fault's line)
            raise EnvironmentFailure(f"{error}; it cannot be rebuilt: {why}", self.name,
                                     method) from error
        if runner.hooks is not None:
            for hub in runner.hooks.hubs:
                hub.metrics["env"] = self.env  # (what the meta components see)
        self.reset(runner, wrapped_seed(runner.seed + self.env.n_envs * runner.restarts.count))

    def _remade(self) -> VectorEnvironment:
        return self.env.remade()

    def _rows(self, state: StateArray) -> tuple[np.ndarray, ...]:
        """``(obs, reward, terminated, truncated)`` of ``state`` as the agent sees it."""
        state = state if self.process is None else self.process(state)
        done, terminal = as_numpy(state.done), as_numpy(state.mask) == 0
        return as_numpy(state.observation), as_numpy(state.reward), done & terminal, done > terminal


def env_copies(env_name: Any, env_args: dict[str, Any] | None, n_envs: int, groups: int,
               process: Callable[[StateArray], StateArray] | None
               ) -> tuple[Any, Copies, int]:
    """``(envs, copies, groups)`` of an ``EnvRunner`` (see its arguments): the env copies (a list
    or a vector environment), their ``Copies`` or ``VectorCopies``, and ``groups`` (vector: 1)."""
    build = None
    if not isinstance(env_name, VectorEnvironment):
        if n_envs < groups or groups < 1:
            raise ValueError(f"need 1 <= groups <= n_envs, got groups={groups}, n_envs={n_envs}")
        build = env_name if callable(env_name) else functools.partial(
            made, env_name, env_args or {})
    first = env_name if build is None else build()
    if isinstance(first, VectorEnvironment):
        return first, VectorCopies(first, process, build), 1
    envs = [first] + [build() for _ in range(n_envs - 1)]
    return envs, Copies(envs, build), groups


def made(name: str, args: dict[str, Any]) -> Any:
    """``make(name, **args)`` on a copy of ``args``: an environment object among them (a
    PettingZoo game built with arguments) is then each env copy's own."""
    return make(name, **copy.deepcopy(args))
