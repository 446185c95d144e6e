"""``EnvRunner``: steps copies of a registered environment and cuts their trajectories into
``SampleBatch`` segments. No Ray: the Ray actor worker and ``test_pipeline`` both use it.

Every (env copy, agent) pair is a *stream*. At each step, the runner asks for one action per
stream that received a ``StepResult`` (``request``), then hands the actions to the envs
(``step``). A stream's rows follow ``SampleBatch``'s convention: the row of an observation
holds the reward/done/truncated that came with it and the policy's outputs for it; a row that
ends an episode is followed by the first row of the next one. Every ``segment_length`` rows
a stream yields a ``[segment_length + 1]`` segment, whose last row starts the next segment.
With several agents per env, requests and segments say whose rows they hold (``agent``).

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
from dataclasses import dataclass, field
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


@dataclass
class _Stream:
    rows: list[dict[str, Any]] = field(default_factory=list)
    policy_state: Any = None


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
        self.default_policy_state = default_policy_state
        self.exploration = exploration
        self.is_evaluation = is_evaluation
        self.groups = [list(range(g, n_envs, groups)) for g in range(groups)]
        self.frames = 0
        self.episodes: list[Episode] = []
        self._streams: dict[tuple[int, int], _Stream] = {}
        self._segments: list[SampleBatch] = []
        self._asked: dict[int, tuple[list[tuple[int, int]], list[NamedArray]]] = {}
        self._returns = np.zeros(n_envs)
        self._lengths = np.zeros(n_envs, dtype=np.int64)
        self._over = np.zeros(n_envs, dtype=bool)  # all agents of the copy are done
        self.hub = MetaHub(list(meta), Parts(policy), self.envs) if meta else None
        self._shaped: dict[tuple[int, int], float] = {}  # rewards the hooks changed
        self._shapes: dict[Any, dict[str, tuple]] = {}  # observation fields' shapes, by agents
        self.total_frames = 0
        if self.hub is not None:
            self.hub.pre_episode()
        self._results = []
        for i, env in enumerate(self.envs):
            try:
                env.seed(seed + i)
            except (AttributeError, NotImplementedError):
                pass  # an env without seed() runs unseeded
            self._results.append(checked_results(env.reset(), env, "reset"))
            self._took(i)
        self.env_seconds = 0.0

    @property
    def agent_count(self) -> int:
        """Agents per env copy."""
        return self.envs[0].agent_count

    # -- the actor's loop ------------------------------------------------------------------
    def request(self, group: int = 0) -> RolloutRequest | None:
        """The observations of ``group``'s streams that wait for an action (``None``: none)."""
        keys = [(i, a) for i in self.groups[group]
                for a, result in enumerate(self._results[i]) if result is not None]
        rows = [NamedArray(**self._results[i][a].obs) for i, a in keys]
        self._asked[group] = (keys, rows)
        if not keys:
            return None
        obs = self._stack(rows, frozenset(a for _, a in keys) if self.agent_count > 1 else 0)
        if self.hub is not None:
            self.hub.pre_step(_observations([self._results[i][a] for i, a in keys]))
        states = None
        if self.default_policy_state is not None:
            states = stack([self._stream(key).policy_state for key in keys])
        n = len(keys)
        exploration = None if self.exploration is None else np.full(n, self.exploration,
                                                                     np.float32)
        agent = np.array([a for _, a in keys]) if self.agent_count > 1 else None
        return RolloutRequest(obs=obs, policy_state=states, is_evaluation=np.full(
            n, self.is_evaluation), exploration=exploration, agent=agent)

    def step(self, group: int, result: RolloutResult | None, version: int = 0) -> None:
        """Record ``result`` (the answer to ``request(group)``) and step ``group``'s envs.

        Raises:
            RolloutSizeError: ``result`` has another number of rows than the request.
        """
        keys, rows = self._asked.pop(group, ([], []))
        actions: dict[int, list[Any]] = {i: [None] * self.agent_count for i in self.groups[group]}
        if keys:
            result = recursive_apply(result, _numpy)
            n = len(result.action)
            if n != len(keys):
                raise RolloutSizeError(f"rollout returned {n} actions for a request of "
                                       f"{len(keys)} rows; return one row per request row")
            for row, key in enumerate(keys):
                actions[key[0]][key[1]] = self._record(key, rows[row], result, row, version)
        previous = {key: self._results[key[0]][key[1]] for key in keys} if self.hub else {}
        start = time.perf_counter()
        stepped = [i for i, agent_actions in actions.items() if self._advance(i, agent_actions)]
        self.env_seconds += time.perf_counter() - start
        if self.hub is not None:
            self._after_step(previous, actions, stepped)

    def segments(self) -> list[SampleBatch]:
        """The finished segments since the last call, batched along dim 1 where they match."""
        done, self._segments = self._segments, []
        if not done:
            return []
        batches: dict[Any, list[SampleBatch]] = {}
        for segment in done:
            batches.setdefault(str(segment.shape), []).append(segment)
        return [concat(group, dim=1) for group in batches.values()]

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

    # -- internals ---------------------------------------------------------------------------
    def _stack(self, rows: list[NamedArray], agents: Any) -> NamedArray:
        """The observations of a request, stacked; ``ValueError`` in one line if their fields
        or shapes differ from each other or from those of the first request of the same
        ``agents`` (agents may see different shapes)."""
        try:
            obs = stack(rows)
            shapes = {name: value.shape[1:] for name, value in obs.items() if value is not None}
        except (ValueError, RuntimeError, KeyError) as error:
            shapes, reason = None, str(error).splitlines()[0]
        else:
            first = self._shapes.setdefault(agents, shapes)
            reason = f"{shapes} after {first}"
        if shapes is None or shapes != self._shapes[agents]:
            raise ValueError(f"{type(self.envs[0]).__name__}'s observations changed shape or "
                             f"fields ({reason}): an environment's observations must keep one "
                             "shape and one set of fields (pad them to one size)")
        return obs

    def _stream(self, key: tuple[int, int]) -> _Stream:
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = _Stream(policy_state=self.default_policy_state)
        return stream

    def _record(self, key: tuple[int, int], obs: NamedArray, result: RolloutResult, row: int,
                version: int) -> Any:
        """Append the row of stream ``key``; return its action."""
        stream = self._stream(key)
        reward, done, truncated = _scalars(self._results[key[0]][key[1]])
        if self._shaped:
            reward = self._shaped.pop(key, reward)
        action = result.action[row]
        stream.rows.append({
            "obs": obs,
            "action": action,
            "reward": np.float32(reward),
            "done": done,
            "truncated": truncated,
            "policy_state": stream.policy_state,
            "log_prob": None if result.log_prob is None else np.float32(result.log_prob[row]),
            "value": None if result.value is None else np.float32(result.value[row]),
            "policy_version": np.int64(version),
            "agent": np.int64(key[1]) if self.agent_count > 1 else None,
        })
        ended = stream.rows[-1]["done"] or stream.rows[-1]["truncated"]
        if self.default_policy_state is not None:
            stream.policy_state = (self.default_policy_state if ended
                                   else result.policy_state[row])
        if self._complete(stream.rows, ended):
            self._segments.append(_segment(stream.rows))
            stream.rows = [] if self.whole_episodes else stream.rows[-1:]
        return action

    def _complete(self, rows: list[dict[str, Any]], ended: bool) -> bool:
        """Whether ``rows`` (the last one ``ended`` its episode or not) make a segment."""
        if not self.whole_episodes:
            return len(rows) == self.segment_length + 1
        steps = sum(not (row["done"] or row["truncated"]) for row in rows) if ended else 0
        return steps >= self.segment_length

    def _advance(self, i: int, actions: list[Any]) -> bool:
        """Step env copy ``i`` (``True``), or reset it when all of its agents are done."""
        env = self.envs[i]
        if self._over[i]:
            self.episodes.append(Episode(float(self._returns[i]), int(self._lengths[i]), i))
            self._returns[i], self._lengths[i] = 0.0, 0
            self._results[i] = checked_results(env.reset(), env, "reset")
            self._took(i)
            return False
        self._results[i] = checked_results(env.step(actions), env, "step")
        self._took(i)
        self._lengths[i] += 1
        self.frames += 1
        self.total_frames += 1
        return True

    def _took(self, i: int) -> None:
        """Add env copy ``i``'s new rewards to its return; note whether its episode is over."""
        present = [_scalars(r) for r in self._results[i] if r is not None]
        self._returns[i] += sum(reward for reward, _, _ in present)
        self._over[i] = bool(present) and all(done or truncated for _, done, truncated in present)

    def _after_step(self, previous: dict[tuple[int, int], Any], actions: dict[int, list[Any]],
                    stepped: list[int]) -> None:
        """Run the post-step (and, for episodes that just ended, the episode) hooks on the
        streams that stepped; keep the rewards they leave for the rows."""
        keys = [key for key in previous
                if key[0] in stepped and self._results[key[0]][key[1]] is not None]
        if not keys:
            return
        new = [self._results[i][a] for i, a in keys]
        scalars = [_scalars(result) for result in new]
        transition = {
            "state": _observations([previous[key] for key in keys]),
            "action": torch.as_tensor(np.stack([np.asarray(actions[i][a]) for i, a in keys])),
            "reward": torch.tensor([reward for reward, _, _ in scalars], dtype=torch.float32),
            "next_state": _observations(new),
            "terminated": torch.tensor([done for _, done, _ in scalars], dtype=torch.bool),
            "truncated": torch.tensor([cut for _, _, cut in scalars], dtype=torch.bool),
            "env_step": self.total_frames,
            "env_index": torch.tensor([i for i, _ in keys], dtype=torch.long),
        }
        ended = np.zeros(len(self.envs), dtype=bool)
        ended[stepped] = self._over[stepped]
        reward = self.hub.after_step(transition, self.total_frames, torch.from_numpy(ended),
                                     self._returns[ended].tolist(),
                                     self._lengths[ended].tolist())
        for key, value in zip(keys, reward.tolist(), strict=True):
            self._shaped[key] = value


def _observations(results: list[Any]) -> torch.Tensor:
    """The ``"obs"`` arrays of ``StepResult`` s, one row each (``transition['state']``)."""
    return torch.as_tensor(np.stack([np.asarray(result.obs["obs"]) for result in results]))


def _scalars(result: Any) -> tuple[float, bool, bool]:
    """``(reward, done, truncated)`` of a ``StepResult`` (shape-``(1,)`` arrays)."""
    try:
        return float(result.reward[0]), bool(result.done[0]), bool(result.truncated[0])
    except (TypeError, IndexError):
        raise ValueError("a StepResult's reward, done and truncated must be shape-(1,) arrays, "
                         f"got {result.reward!r}, {result.done!r}, {result.truncated!r}; build "
                         "results with looprl.environments.step_result(...)") from None


def _segment(rows: list[dict[str, Any]]) -> SampleBatch:
    """Stack ``rows`` into a ``[T + 1, 1]`` ``SampleBatch``."""
    first = rows[0]

    def column(name: str) -> Any:
        if first.get(name) is None:  # fields no actor records (weight) stay None
            return None
        if isinstance(first[name], NamedArray):
            return stack([row[name] for row in rows])[:, None]
        return np.stack([np.asarray(row[name]) for row in rows])[:, None]

    return SampleBatch(**{name: column(name) for name in SampleBatch._field_names})
