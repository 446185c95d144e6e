"""``EnvRunner``: steps copies of a registered environment and cuts their trajectories into
``SampleBatch`` segments. No Ray: the Ray actor worker and ``test_pipeline`` both use it.

Every (env copy, agent) pair is a *stream*; stream ``i * agent_count + a`` is agent ``a`` of
copy ``i``. At each step, the runner asks for one action per stream that received a
``StepResult`` (``request``), then hands the actions to the envs (``step``). A stream's rows
follow ``SampleBatch``'s convention: the row of an observation holds the reward/done/truncated
that came with it and the policy's outputs for it; a row that ends an episode is followed by
the first row of the next one. Every ``segment_length`` rows a stream yields a
``[segment_length + 1]`` segment, whose last row starts the next segment. With several agents
per env, requests and segments say whose rows they hold (``agent``).

The rows are written in place, a batch at a time, into preallocated ``[T + 1, streams]``
arrays (one write per field and step: a stream that does not act in a step, an agent that
waits, is masked out of it), and segments are copied out of them. So every agent's
observations have the same fields and shapes (pad them to one size).

With ``whole_episodes`` (VPG), a stream yields its rows only at the end of the episode that
brings them to ``segment_length`` steps (rows that end an episode do not count), as the local
VPG agent trains, and its next segment starts with the next episode's first row.

The envs are split into ``groups``: while the policy answers one group's request, the caller
may step another group (``ActorWorker`` does, so that env stepping overlaps inference).

With meta components (``meta``), the runner calls their step and episode hooks as the local
loops do (``MetaHub.pre_step`` before a group's request, ``MetaHub.after_step`` after its
envs stepped): ``transition`` holds one row per stream that stepped, and the reward the
post-step hooks leave is the one its row records (returns stay the environment's).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from looprl.core import NamedArray, RolloutRequest, RolloutResult, SampleBatch
from looprl.core.namedarray import concat, recursive_apply, stack
from looprl.environments.srl import checked_results, make
from looprl.meta.component import MetaComponent
from looprl.meta.hub import MetaHub, Parts

__all__ = ["Episode", "EnvRunner", "RolloutSizeError"]


class RolloutSizeError(ValueError):
    """A policy's ``rollout`` answered with a different number of rows than it was asked."""


@dataclass
class Episode:
    """One finished episode of one env copy: the return summed over its agents."""

    ret: float
    length: int
    env: int


def _numpy(value: Any) -> Any:
    if value is None or isinstance(value, np.ndarray):
        return value
    if isinstance(value, NamedArray):
        return value.to_numpy()
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


class EnvRunner:
    """Steps ``n_envs`` copies of the environment ``env_name`` for one actor.

    Args:
        env_name: a registered environment name or a Gymnasium id
            (``looprl.environments.make``), or a function of no arguments building one.
        env_args: keyword arguments of ``make``.
        n_envs: env copies stepped by this runner.
        segment_length: ``T`` of the ``[T + 1, B]`` segments it yields.
        default_policy_state: the policy's ``default_policy_state`` (``None``: feed-forward).
        groups: how many groups the envs are split into (see the module docstring).
        seed: env copy ``i`` is seeded with ``seed + i``.
        exploration: an exploration rate sent with every row (Ape-X epsilons), or ``None``.
        is_evaluation: ask for deterministic actions.
        meta: meta components whose step and episode hooks this runner calls (this copy's
            own; ``metrics['env']`` is the list of env copies).
        policy: the policy acting here, as ``metrics['policy']`` (``None``: remote).
        whole_episodes: cut segments at episode ends only (see the module docstring).
    """

    def __init__(
        self,
        env_name: str | Any,
        env_args: dict[str, Any] | None = None,
        n_envs: int = 1,
        segment_length: int = 64,
        default_policy_state: Any = None,
        groups: int = 1,
        seed: int = 0,
        exploration: float | None = None,
        is_evaluation: bool = False,
        meta: Sequence[MetaComponent] = (),
        policy: Any = None,
        whole_episodes: bool = False,
    ):
        build = env_name if callable(env_name) else lambda: make(env_name, **(env_args or {}))
        if n_envs < groups or groups < 1:
            raise ValueError(f"need 1 <= groups <= n_envs, got groups={groups}, n_envs={n_envs}")
        if segment_length < 1:
            raise ValueError(f"segment_length must be >= 1, got {segment_length}")
        self.envs = [build() for _ in range(n_envs)]
        self.segment_length = segment_length
        self.whole_episodes = whole_episodes
        self.exploration = exploration
        self.is_evaluation = is_evaluation
        self.groups = [list(range(g, n_envs, groups)) for g in range(groups)]
        self.frames = 0
        self.total_frames = 0
        self.env_seconds = 0.0
        self.episodes: list[Episode] = []
        self._streams_init(n_envs, default_policy_state)
        self._segments: list[SampleBatch] = []
        self._asked: dict[int, tuple[np.ndarray, Any, Any]] = {}
        self._returns = np.zeros(n_envs)
        self._lengths = np.zeros(n_envs, dtype=np.int64)
        self._over = np.zeros(n_envs, dtype=bool)  # all agents of the copy are done
        self.hub = MetaHub(list(meta), Parts(policy), self.envs) if meta else None
        if self.hub is not None:
            self.hub.pre_episode()
        self._results: list[list[Any]] = [[] for _ in range(n_envs)]
        for i, env in enumerate(self.envs):
            try:
                env.seed(seed + i)
            except (AttributeError, NotImplementedError):
                pass  # an env without seed() runs unseeded
            self._receive(i, checked_results(env.reset(), env, "reset"))

    def _streams_init(self, n_envs: int, default_policy_state: Any) -> None:
        """The per-stream arrays: what arrived with each stream's latest observation, its
        rows of the segment in progress, and its recurrent state."""
        agents = self.agent_count
        n = n_envs * agents
        self._copy = np.repeat(np.arange(n_envs), agents)  # the env copy of each stream
        self._agent = np.tile(np.arange(agents), n_envs)  # its agent
        self._group_streams = [np.flatnonzero(np.isin(self._copy, g)) for g in self.groups]
        self._present = np.zeros(n, dtype=bool)  # a result waits for an action
        self._reward = np.zeros(n, dtype=np.float32)
        self._done = np.zeros(n, dtype=bool)
        self._truncated = np.zeros(n, dtype=bool)
        self._obs: NamedArray | None = None  # [streams, ...], from the first observations
        self._rows: SampleBatch | None = None  # [rows, streams, ...], from the first rows
        self._t = np.zeros(n, dtype=np.int64)  # rows of each stream's segment in progress
        self._steps = np.zeros(n, dtype=np.int64)  # of them, rows that end no episode
        default = self._default_state = _numpy(default_policy_state)
        self._policy_state = None if default is None else (
            stack if isinstance(default, NamedArray) else np.stack)([default] * n)

    @property
    def agent_count(self) -> int:
        """Agents per env copy."""
        return self.envs[0].agent_count

    # -- the actor's loop ------------------------------------------------------------------
    def request(self, group: int = 0) -> RolloutRequest | None:
        """The observations of ``group``'s streams that wait for an action (``None``: none)."""
        streams = self._group_streams[group]
        asked = streams[self._present[streams]]
        if not len(asked):
            self._asked[group] = (asked, None, None)
            return None
        obs = self._observe(asked)
        states = None if self._policy_state is None else self._policy_state[asked]
        self._asked[group] = (asked, obs, states)
        if self.hub is not None:
            self.hub.pre_step(torch.as_tensor(obs["obs"]))
        n = len(asked)
        exploration = None if self.exploration is None else np.full(n, self.exploration,
                                                                     np.float32)
        agent = self._agent[asked] if self.agent_count > 1 else None
        return RolloutRequest(obs=obs, policy_state=states, is_evaluation=np.full(
            n, self.is_evaluation), exploration=exploration, agent=agent)

    def step(self, group: int, result: RolloutResult | None, version: int = 0) -> None:
        """Record ``result`` (the answer to ``request(group)``) and step ``group``'s envs.

        Raises:
            RolloutSizeError: ``result`` has another number of rows than the request.
        """
        asked, obs, states = self._asked.pop(group, (self._group_streams[group][:0], None,
                                                     None))
        if len(asked):
            result = recursive_apply(result, _numpy)
            n = len(result.action)
            if n != len(asked):
                raise RolloutSizeError(f"rollout returned {n} actions for a request of "
                                       f"{len(asked)} rows; return one row per request row")
            self._record(asked, obs, states, result, version)
        actions = self._actions(group, asked, result)
        start = time.perf_counter()
        stepped = [i for i in self.groups[group] if self._advance(i, actions[i])]
        self.env_seconds += time.perf_counter() - start
        if self.hub is not None and len(asked):
            self._after_step(asked, obs, result, stepped)

    def segments(self) -> list[SampleBatch]:
        """The finished segments since the last call, batched along dim 1 where they match."""
        done, self._segments = self._segments, []
        if not done:
            return []
        batches: dict[Any, list[SampleBatch]] = {}
        for segment in done:
            batches.setdefault(str(segment.shape), []).append(segment)
        return [group[0] if len(group) == 1 else concat(group, dim=1)
                for group in batches.values()]

    @property
    def running_returns(self) -> np.ndarray:
        """Each env copy's return so far in its episode in progress."""
        return self._returns.copy()

    def meta_scalars(self) -> dict[str, float]:
        """The ``log/*`` values the meta components wrote since the last call
        (``MetaHub.log_scalars``: ``log/plr/seen``, ``log/rnd/intrinsic_reward_mean``...):
        what this actor reports."""
        return self.hub.log_scalars() if self.hub is not None else {}

    def pop_episodes(self) -> list[Episode]:
        """The episodes finished since the last call."""
        done, self.episodes = self.episodes, []
        return done

    # -- observations and rows ---------------------------------------------------------------
    def _observe(self, streams: np.ndarray) -> NamedArray:
        """The latest observations of ``streams``, ``[len(streams), ...]``; ``ValueError`` in
        one line if their fields or shapes differ from the first observations'."""
        agents = self.agent_count
        if self._obs is None:
            first = self._results[streams[0] // agents][streams[0] % agents].obs
            self._obs = NamedArray(**{name: np.zeros((len(self._copy), *np.shape(value)),
                                                     np.asarray(value).dtype)
                                      for name, value in first.items()})
        stores = self._obs.items()
        shapes = {name: store.shape[1:] for name, store in stores}
        for s in streams.tolist():
            obs = self._results[s // agents][s % agents].obs
            seen = {name: np.shape(value) for name, value in obs.items()}
            if seen != shapes:
                raise ValueError(f"{type(self.envs[0]).__name__}'s observations changed shape "
                                 f"or fields ({seen} after {shapes}): an environment's "
                                 "observations must keep one shape and one set of fields, the "
                                 "same for every agent (pad them to one size)")
            for name, store in stores:
                store[s] = obs[name]
        return self._obs[streams]

    def _record(self, streams: np.ndarray, obs: NamedArray, states: Any,
                result: RolloutResult, version: int) -> None:
        """Write the rows of ``streams`` (one each), carry their recurrent states, and cut
        the segments they complete."""
        ended = self._done[streams] | self._truncated[streams]
        rows = SampleBatch(
            obs=obs, action=result.action, reward=self._reward[streams],
            done=self._done[streams], truncated=self._truncated[streams], policy_state=states,
            log_prob=_float32(result.log_prob), value=_float32(result.value),
            policy_version=np.full(len(streams), version, np.int64),
            agent=self._agent[streams] if self.agent_count > 1 else None,
        )  # fmt: skip
        if self._rows is None:
            self._rows = recursive_apply(rows, lambda x: np.zeros(
                (self.segment_length + 1, len(self._copy), *x.shape[1:]), x.dtype))
        t = self._t[streams]
        if self.whole_episodes and t.max() == len(self._rows.reward):  # full: double it
            self._rows = recursive_apply(self._rows,
                                         lambda x: np.concatenate((x, np.zeros_like(x))))
        for store, value in zip(_leaves(self._rows), _leaves(rows), strict=True):
            store[t, streams] = value
        self._t[streams] = t + 1
        if self._policy_state is not None:
            self._policy_state[streams] = result.policy_state
            if ended.any():
                self._policy_state[streams[ended]] = self._default_state
        self._cut(streams, ended)

    def _cut(self, streams: np.ndarray, ended: np.ndarray) -> None:
        """Copy out the segments the rows just written complete."""
        t, length = self._t[streams], self.segment_length
        if not self.whole_episodes:
            full = streams[t == length + 1]
            if len(full):
                self._segments.append(self._rows[:, full])  # a copy (an index array)
                self._rows[0, full] = self._rows[length, full]
                self._t[full] = 1
            return
        self._steps[streams] += ~ended
        for s in streams[ended & (self._steps[streams] >= length)].tolist():
            self._segments.append(self._rows[: self._t[s], [s]])
            self._t[s] = self._steps[s] = 0

    # -- the envs --------------------------------------------------------------------------
    def _actions(self, group: int, asked: np.ndarray, result: Any) -> dict[int, list[Any]]:
        """Each env copy's list of actions, one per agent (``None`` for agents not asked)."""
        agents = self.agent_count
        actions: dict[int, list[Any]] = {i: [None] * agents for i in self.groups[group]}
        for row, s in enumerate(asked.tolist()):
            actions[s // agents][s % agents] = result.action[row]
        return actions

    def _advance(self, i: int, actions: list[Any]) -> bool:
        """Step env copy ``i`` (``True``), or reset it when all of its agents are done."""
        env = self.envs[i]
        if self._over[i]:
            self.episodes.append(Episode(float(self._returns[i]), int(self._lengths[i]), i))
            self._returns[i], self._lengths[i] = 0.0, 0
            self._receive(i, checked_results(env.reset(), env, "reset"))
            return False
        self._receive(i, checked_results(env.step(actions), env, "step"))
        self._lengths[i] += 1
        self.frames += 1
        self.total_frames += 1
        return True

    def _receive(self, i: int, results: list[Any]) -> None:
        """Keep env copy ``i``'s new ``results`` for its streams; add their rewards to its
        return; note whether its episode is over (all of its agents are done)."""
        self._results[i] = results
        base, total, present, over = i * self.agent_count, 0.0, False, True
        for a, result in enumerate(results):
            s = base + a
            self._present[s] = result is not None
            if result is None:
                continue
            reward, done, truncated = _scalars(result)
            self._reward[s], self._done[s], self._truncated[s] = reward, done, truncated
            total += reward
            present, over = True, over and (done or truncated)
        self._returns[i] += total
        self._over[i] = present and over

    def _after_step(self, asked: np.ndarray, obs: NamedArray, result: Any,
                    stepped: list[int]) -> None:
        """Run the post-step (and, for episodes that just ended, the episode) hooks on the
        streams that stepped; their rows record the rewards the hooks leave."""
        moved = np.zeros(len(self.envs), dtype=bool)
        moved[stepped] = True
        keep = moved[self._copy[asked]] & self._present[asked]
        keys = asked[keep]
        if not len(keys):
            return
        transition = {
            "state": torch.as_tensor(obs["obs"][keep]),
            "action": torch.as_tensor(np.asarray(result.action)[keep]),
            "reward": torch.as_tensor(self._reward[keys]),
            "next_state": torch.as_tensor(self._observe(keys)["obs"]),
            "terminated": torch.as_tensor(self._done[keys]),
            "truncated": torch.as_tensor(self._truncated[keys]),
            "env_step": self.total_frames,
            "env_index": torch.as_tensor(self._copy[keys]),
        }
        ended = moved & self._over
        reward = self.hub.after_step(transition, self.total_frames, torch.from_numpy(ended),
                                     self._returns[ended].tolist(),
                                     self._lengths[ended].tolist())
        self._reward[keys] = reward.detach().cpu().numpy()


def _leaves(x: NamedArray) -> list[np.ndarray]:
    """The arrays of ``x``, nested fields flattened, in field order (``None`` s left out)."""
    found = []
    for value in x.values():
        if isinstance(value, NamedArray):
            found += _leaves(value)
        elif value is not None:
            found.append(value)
    return found


def _float32(value: Any) -> Any:
    return None if value is None else np.asarray(value, dtype=np.float32)


def _scalars(result: Any) -> tuple[float, bool, bool]:
    """``(reward, done, truncated)`` of a ``StepResult`` (shape-``(1,)`` arrays)."""
    try:
        return float(result.reward[0]), bool(result.done[0]), bool(result.truncated[0])
    except (TypeError, IndexError):
        raise ValueError("a StepResult's reward, done and truncated must be shape-(1,) arrays, "
                         f"got {result.reward!r}, {result.done!r}, {result.truncated!r}; build "
                         "results with looprl.environments.step_result(...)") from None
