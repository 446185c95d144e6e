"""``EnvRunner``, the one collector (see the package docstring)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from looprl.collector.copies import Episode, env_copies
from looprl.collector.recovery import EnvRestarts
from looprl.core import NamedArray, RolloutRequest, RolloutResult, SampleBatch, StateArray
from looprl.core.leaves import as_numpy
from looprl.core.namedarray import concat, stack
from looprl.core.suggest import a_type
from looprl.environments.gym_helpers import DEFAULT_EPISODE_CAP, check_finite_actions
from looprl.memory.segments import SegmentBuffer, leaves, segment_rows
from looprl.meta.component import MetaComponent
from looprl.meta.hub import MetaHub, StreamHooks

__all__ = ["Episode", "EnvRunner", "RolloutSizeError", "check_result", "log_cuts",
           "report_cuts", "restart_episodes"]

log = logging.getLogger(__name__)


class RolloutSizeError(ValueError):
    """A policy's ``rollout`` answered with a different number of rows than it was asked."""


def _numpy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):  # (what policies answer, once per step)
        return as_numpy(value)
    if isinstance(value, NamedArray):
        return value.to_numpy()
    return None if value is None else np.asarray(value)


class EnvRunner:
    """Steps ``n_envs`` copies of the environment ``env_name`` for one actor.

    Args:
        env_name: a name for ``looprl.environments.make``, a function of no arguments building
            one, or a ``VectorEnvironment`` (``n_envs`` and ``groups`` are then its own).
        segment_length: ``T`` of the ``[T + 1, B]`` segments (``None``: no rows kept).
        seed: env copy ``i`` is seeded with ``seed + i``.
        exploration: an exploration rate sent with every row (Ape-X epsilons), or ``None``.
        meta: meta components whose hooks this runner calls (``policy``: their
            ``metrics['policy']``); ``hub``: a ``MetaHub`` or ``StreamHooks`` to use instead;
            ``agent_names``: one copy of ``meta`` per agent; ``meta_state``: the ``state_dict``
            of each of their components (``components``' order: a resumed run's) to load.
        whole_episodes: cut segments at episode ends only (VPG).
        process: a vector environment's states as the agent sees them (its bodies).
        first_stream: this runner's first stream number in its segments' ``stream`` field.
        restarts: recover from an exception in an env copy (``None``: raise it): its episode
            is cut, the copy rebuilt (a vector environment: all of it), reseeded and reset.
        max_episode_steps: cut an episode at this many steps (truncated), report it and warn at
            the first cut (``cuts`` counts them); a vector environment, which cannot reset one
            copy, restarts every copy (``truncate``). ``None``: an SRL env's ``env_cap``; a
            vector environment's are not cut (its own time limits end them).

    ``env_call``: ``(time.monotonic() at its start, copy, method)`` of the env call in progress.
    """

    cuts = 0  # episodes cut at ``max_episode_steps`` so far (class default: older checkpoints)

    def __init__(self, env_name: str | Any, env_args: dict[str, Any] | None = None, n_envs: int = 1,
                 segment_length: int | None = 64, default_policy_state: Any = None, groups: int = 1,
                 seed: int = 0, exploration: float | None = None, is_evaluation: bool = False,
                 meta: Sequence[MetaComponent] = (), policy: Any = None,
                 whole_episodes: bool = False, hub: MetaHub | StreamHooks | None = None,
                 process: Callable[[StateArray], StateArray] | None = None, first_stream: int = 0,
                 agent_names: Sequence[str] = (), restarts: EnvRestarts | None = None,
                 max_episode_steps: int | None = None, meta_state: Sequence[dict[str, Any]] = ()):
        if segment_length is not None and segment_length < 1:
            raise ValueError(f"segment_length must be >= 1 (or None: no rows kept), got "
                             f"{segment_length}")
        self.restarts = restarts
        self.seed = seed
        self.env_call: tuple[float, int | None, str] | None = None
        self.envs, copies, groups = env_copies(env_name, env_args, n_envs, groups, process)
        self._copies = copies
        self.max_episode_steps = (copies.default_cap if max_episode_steps is None
                                  else max_episode_steps)
        self.exploration = exploration
        self.is_evaluation = is_evaluation
        self.groups = [list(range(g, len(copies.returns), groups)) for g in range(groups)]
        self.frames = 0
        self.total_frames = 0
        self.env_seconds = 0.0
        self.episodes: list[Episode] = []
        n = len(copies.present)
        self._group_streams = [np.flatnonzero(np.isin(copies.stream_copy, g))
                               for g in self.groups]
        default = self._default_state = _numpy(_check_default(default_policy_state))
        self._policy_state = None if default is None else (
            stack if isinstance(default, NamedArray) else np.stack)([default] * n)
        self.buffer = None if segment_length is None else SegmentBuffer(
            segment_length, n, whole_episodes, first_stream)
        self._asked: dict[int, tuple[np.ndarray, Any, Any]] = {}  # request(): not recorded
        self._recorded: dict[int, tuple[np.ndarray, Any, Any]] = {}  # record(): not stepped
        self._restart = False  # the next step resets every copy (``truncate``)
        self._flags: dict[int, np.ndarray] = {}
        self._waiting: dict[int, tuple[Any, np.ndarray]] = {}  # (``_ending``)
        self._versions: tuple[int, int, np.ndarray] | None = None  # (rows, version, array)
        self.hooks = StreamHooks.over(meta, policy, self.envs, agent_names) if meta else None
        if hub is not None:
            self.hooks = hub if isinstance(hub, StreamHooks) else StreamHooks([hub])
        if self.hooks is not None:
            if seed is not None:
                self.hooks.seed_run(seed)
            for component, state in zip(self.hooks.components, meta_state):
                component.load_state_dict(state)
            self.hooks.pre_episode()
        copies.reset(self, seed)

    @property
    def agent_count(self) -> int:
        """Agents per env copy."""
        return self._copies.agent_count

    @property
    def env_cap(self) -> int:
        """The environment's ``episode_cap``: its time limit, else ``DEFAULT_EPISODE_CAP``."""
        return self._copies.env_cap

    @property
    def env_name(self) -> str:
        """The environment's name in the collector's warnings."""
        return self._copies.name

    @property
    def max_episode_steps(self) -> int | None:
        """The steps at which an episode is cut (``None``: none is)."""
        return self._cap

    @max_episode_steps.setter
    def max_episode_steps(self, steps: int | None) -> None:
        self._cap = steps
        self._unchecked = 0  # advances before an episode can reach the cap (``_cut_long``)

    def request(self, group: int = 0) -> RolloutRequest | None:
        """The observations of ``group``'s streams that wait for an action (``None``: none)."""
        copies, asked = self._copies, self._group_streams[group]
        if copies.turns:  # (only the agents whose turn it is)
            asked = asked[copies.present[asked]]
        if not len(asked):
            self._asked[group] = (asked, None, None)
            return None
        obs = copies.observe(asked)
        states = None if self._policy_state is None else self._policy_state[asked]
        self._asked[group] = (asked, obs, states)
        n = len(asked)
        ended = copies.done | copies.truncated
        ended = ended if n == len(ended) else ended[asked]
        if self.hooks is not None and not ended.all():  # (all ended: they reset, none steps)
            self.hooks.pre_step(obs, copies.stream_agent[asked])
        exploration = None if self.exploration is None else np.full(n, self.exploration, np.float32)
        agent = copies.stream_agent[asked] if copies.agent_count > 1 else None
        return RolloutRequest(obs=obs, policy_state=states, is_evaluation=self._evaluation(n),
                              exploration=exploration, agent=agent, done=ended)

    def states(self, group: int = 0) -> StateArray:
        """The rows of the last ``request(group)`` as an ``Agent``'s ``act`` takes them (the
        rewards after the step hooks; other observation fields and ``agent`` as entries)."""
        copies, (asked, obs, _) = self._copies, self._asked[group]
        terminated, ended = copies.done[asked], copies.done[asked] | copies.truncated[asked]
        entries = {}
        if isinstance(obs, NamedArray):
            entries = {key: torch.as_tensor(value) for key, value in obs.items() if key != "obs"}
            obs = obs["obs"]
        if copies.agent_count > 1:
            entries["agent"] = torch.as_tensor(copies.stream_agent[asked])
        return StateArray({"observation": torch.as_tensor(obs),
                           "reward": torch.as_tensor(copies.reward[asked]),
                           "done": torch.as_tensor(ended),
                           "mask": torch.as_tensor(~terminated, dtype=torch.float32),
                           **entries}, (len(asked),))

    def _evaluation(self, n: int) -> np.ndarray:
        """``is_evaluation`` of a request of ``n`` rows (one array per size)."""
        flags = self._flags.get(n)
        if flags is None:
            flags = self._flags[n] = np.full(n, self.is_evaluation)
        return flags

    def _version_rows(self, n: int, version: int) -> np.ndarray:
        """``policy_version`` of ``n`` rows (remade only when ``n`` or ``version`` change)."""
        made = self._versions
        if made is None or made[0] != n or made[1] != version:
            made = self._versions = (n, version, np.full(n, version, np.int64))
        return made[2]

    def step(self, group: int, result: RolloutResult | None, version: int = 0) -> None:
        """``record`` then ``advance``."""
        self.record(group, result, version)
        self.advance(group)

    def record(self, group: int, result: RolloutResult | None, version: int = 0) -> None:
        """Write the rows of ``result``, the answer to ``request(group)``, made by ``version``;
        ``PolicyActionError`` if an action is NaN or infinite."""
        asked, obs, states = (self._asked.pop(group, None)
                              or (self._group_streams[group][:0], None, None))
        action = None
        if len(asked):
            check_result(result, len(asked), self._policy_state)
            action = _numpy(result.action)
            for leaf in leaves(action):
                check_finite_actions(leaf)  # (every environment's, not only Gymnasium's)
            _record(self, asked, obs, states, action, result, version)
        self._recorded[group] = (asked, obs, action)

    def advance(self, group: int = 0) -> None:
        """Step ``group``'s envs with the actions ``record`` wrote; run the hooks."""
        asked, obs, action = self._recorded.pop(group)
        start = time.perf_counter()
        if self._restart:
            self._restart = False
            self._copies.reset(self, None)
            if self.hooks is not None:
                self.hooks.pre_episode()
            return
        stepped = self._copies.step(self, group, asked, action)
        self.env_seconds += time.perf_counter() - start
        if self._cap is not None:
            self._unchecked -= 1
            if self._unchecked <= 0:
                _cut_long(self, stepped)
        if self.hooks is not None and len(asked):
            _after_step(self, asked, obs, action, stepped)

    def close(self) -> None:
        """Close the environment copies (one that raises: an ``EnvironmentFailure``)."""
        self._copies.close()

    def env_place(self, copy: int | None, method: str) -> tuple[str, int | None, int | None]:
        """``(env name, episode, step)`` of an ``env_call`` (``EnvWatch`` names it)."""
        return self._copies.name, *self._copies.place(copy, method)

    def truncate(self) -> None:
        """End every episode in progress as truncated at the latest observations (not
        reported); the next ``advance`` resets every env copy instead of stepping it."""
        copies = self._copies
        cut = copies.present & ~copies.done & ~copies.truncated
        copies.truncated |= cut
        self._restart = True
        if self._recorded:  # (else the next record writes the flags)
            self.cut_episodes(np.flatnonzero(cut))

    def cut_episodes(self, streams: np.ndarray) -> None:
        """End the episodes of ``streams`` as truncated at their latest rows."""
        if self.buffer is not None:
            self.buffer.end_episodes(streams)
        for stream in streams.tolist():
            self._waiting.pop(stream, None)
        if self._policy_state is not None:
            self._policy_state[streams] = self._default_state

    def segments(self) -> list[SampleBatch]:
        """The finished segments since the last call, batched along dim 1 where they match."""
        return [] if self.buffer is None else self.buffer.segments()

    @property
    def needs_reset(self) -> bool:
        """Whether an env copy must be reset before it steps (restored without its episode)."""
        return self._copies.needs_reset

    @property
    def needs_action(self) -> bool:
        """Whether group 0 waits for ``record`` before it can ``advance`` (e.g. after Ctrl-C)."""
        return 0 not in self._recorded

    @property
    def running_returns(self) -> np.ndarray:
        """Each env copy's return so far in its episode in progress."""
        return self._copies.returns.copy()

    def meta_scalars(self) -> dict[str, float]:
        """The ``log/*`` values the meta components wrote since the last call."""
        return self.hooks.log_scalars() if self.hooks is not None else {}

    def pop_episodes(self) -> list[Episode]:
        """The episodes finished since the last call."""
        done, self.episodes = self.episodes, []
        return done


#: the fields of a ``RolloutResult`` with one row per request row
_ROWS = ("action", "log_prob", "value", "policy_state")


def _check_default(state: Any) -> Any:
    """``state`` (a policy's ``default_policy_state``) unless it is no memory of one row."""
    if state is None or isinstance(state, (NamedArray, np.ndarray, torch.Tensor)):
        return state
    raise TypeError(f"default_policy_state is {a_type(state)}; return one row's memory "
                    "as a NamedArray (NamedArray(hx=...), NamedArray.from_dict(...) for a "
                    "dict), an array, or None for no memory")


def _row_shapes(x: Any) -> Any:
    """The shape of one row of each leaf of ``x`` (a dict for a ``NamedArray``)."""
    if isinstance(x, NamedArray):
        return {name: _row_shapes(value) for name, value in x.items()}
    return None if x is None else tuple(np.shape(x))[1:]


def check_result(result: Any, rows: int, memory: Any = None, policy: str = "") -> None:
    """A one-line error unless ``result`` is a ``RolloutResult`` of ``rows`` rows in every field
    and, where ``memory`` (the rows' recurrent states) is given, a ``policy_state`` of rows
    shaped as its; ``policy``: the policy's name, for the message."""
    what = f"{policy}.rollout" if policy else "rollout"
    if not isinstance(result, RolloutResult):
        raise TypeError(f"{what} returned a {type(result).__name__}; return a "
                        "looprl.core.RolloutResult(action=..., policy_state=..., ...) with one "
                        "row per request row")
    if memory is not None and result.policy_state is None:
        raise ValueError(f"{what} returned no policy_state, but the policy's default_policy_state "
                         "is not None: return each row's memory after this step in "
                         "RolloutResult(policy_state=...)")
    fields = result.__dict__
    for name in _ROWS:
        value = fields[name]
        if value is None or type(value) is torch.Tensor and value.shape[:1] == (rows,):
            continue  # (a policy's tensor of one row per request row: every step)
        for leaf in leaves(value):
            shape = getattr(leaf, "shape", None)  # (a tensor's or an array's: the usual case)
            shape = np.shape(leaf) if shape is None else shape
            if not shape or shape[0] != rows:
                field = "actions" if name == "action" else f"rows of {name}"
                raise RolloutSizeError(
                    f"{what} returned {shape[0] if len(shape) else 'no'} {field} for a request "
                    f"of {rows} rows; return one row per request row"
                    + (" (each row's memory stacked on a new first axis)"
                       if name == "policy_state" else ""))
    if memory is not None and (got := _row_shapes(result.policy_state)) != (
            want := _row_shapes(memory)):
        raise ValueError(f"{what} returned policy_state rows of shape {got}, but "
                         f"default_policy_state's are {want}; return each row's memory in the "
                         "shape of default_policy_state, stacked on a new first axis")


def _record(runner: EnvRunner, streams: np.ndarray, obs: Any, states: Any, action: np.ndarray,
            result: RolloutResult, version: int) -> None:
    """Write ``runner``'s rows of ``streams`` and carry their recurrent states."""
    copies, buffer = runner._copies, runner.buffer
    every = len(streams) == len(copies.present)  # (one group, every agent's turn)
    reward, done, truncated = copies.reward, copies.done, copies.truncated
    if not every:
        reward, done, truncated = reward[streams], done[streams], truncated[streams]
    carried = runner._policy_state is not None
    # (the buffer reads the episode ends with whole episodes only)
    ended = done | truncated if carried or (buffer is not None and buffer.whole_episodes) \
        else None
    if buffer is not None:
        rows = segment_rows(obs, action, reward, done, truncated, result,
                            runner._version_rows(len(streams), version), states,
                            copies.stream_agent[streams] if copies.agent_count > 1 else None)
        buffer.write(None if every else streams, rows, ended)
    if carried:
        runner._policy_state[streams] = _numpy(result.policy_state)
        if ended.any():
            runner._policy_state[streams[ended]] = runner._default_state


def _after_step(runner: EnvRunner, asked: np.ndarray, obs: Any, action: np.ndarray,
                moved: np.ndarray) -> None:
    """Run the post-step and episode hooks on the transitions that ended in this step."""
    keys, obs, action = _ending(runner, asked, obs, action, moved)
    if not len(keys):
        return
    copies = runner._copies
    transition = {
        "state": runner.hooks.observations(obs),
        "action": torch.as_tensor(action),
        "reward": torch.as_tensor(copies.reward[keys]),
        "next_state": runner.hooks.observations(copies.observe(keys)),
        "terminated": torch.as_tensor(copies.done[keys]),
        "truncated": torch.as_tensor(copies.truncated[keys]),
        "env_step": runner.total_frames,
        "env_index": torch.as_tensor(copies.stream_copy[keys]),
    }
    ended = moved & copies.over
    returns = (copies.returns[ended, None] if copies.agent_count == 1
               else copies.agent_returns.reshape(len(ended), -1)[ended])
    reward = runner.hooks.after_step(transition, runner.total_frames, ended, returns,
                                     copies.lengths[ended].tolist(), copies.stream_agent[keys])
    copies.reward[keys] = reward.detach().cpu().numpy()


def _ending(runner: EnvRunner, asked: np.ndarray, obs: Any, action: np.ndarray,
            moved: np.ndarray) -> tuple[np.ndarray, Any, np.ndarray]:
    """``(streams, observations, actions)`` of the transitions that end in this step (in a
    turn-based game an agent's rows wait in ``_waiting`` for its next turn)."""
    copies, waiting = runner._copies, runner._waiting
    moving = moved[copies.stream_copy[asked]]
    keep = moving & copies.present[asked]
    arrived = [s for s in waiting if copies.present[s] and moved[copies.stream_copy[s]]]
    for j in np.flatnonzero(moving & ~keep).tolist():
        if not (copies.done[asked[j]] or copies.truncated[asked[j]]):
            waiting[int(asked[j])] = (obs[j : j + 1], action[j : j + 1])
    if not arrived:
        return asked[keep], obs[keep], action[keep]
    rows = [waiting.pop(s) for s in arrived]
    return (np.concatenate((asked[keep], np.asarray(arrived, dtype=asked.dtype))),
            concat([obs[keep], *(row[0] for row in rows)]),
            np.concatenate((action[keep], *(row[1] for row in rows))))


def report_cuts(runner: EnvRunner, before: int) -> None:
    """Warn how many episodes ``runner`` cut at its cap since it had cut ``before`` (at the end
    of a training or evaluation call), unless none, or only the one its warning named."""
    if runner.cuts > 1:
        log_cuts(runner.cuts - before, runner.env_name, runner._cap)


def restart_episodes(runner: EnvRunner) -> None:
    """Start the episodes of ``runner``'s env copies again from its seed, before its first
    ``request``: a Ray actor's, to scale its first observations with the statistics it loaded."""
    runner._copies.reset(runner, runner.seed)


def log_cuts(cut: int, name: str, cap: int | None) -> None:
    """Warn that ``cut`` episodes (if any) of ``name`` were cut at the cap of ``cap`` steps."""
    if cut:
        log.warning("%d episode%s of %s %s cut at the cap of %s steps", cut, "s" * (cut > 1),
                    name, "were" if cut > 1 else "was", cap)


def _cut_long(runner: EnvRunner, stepped: np.ndarray) -> None:
    """Cut (truncated), report and count the episodes ``max_episode_steps`` long, warning at the
    first; the next check waits until an episode can reach the cap (a step an ``advance``)."""
    copies, cap = runner._copies, runner._cap
    runner._unchecked = max(1, cap - int(copies.lengths.max()))
    long = stepped & ~copies.over & (copies.lengths >= cap)
    if long.any():
        if not runner.cuts:
            log.warning("an episode of %s ran %d steps without ending: cut there (the cap: "
                        "max_episode_steps, by default the env's time limit, else %d; looprl "
                        "watch: --max-steps); later ones are counted, their total logged at "
                        "the end", copies.name, cap, DEFAULT_EPISODE_CAP)
        runner.cuts += int(long.sum())
        copies.over |= long
        copies.report(runner, long)
        copies.cut(runner, long)
