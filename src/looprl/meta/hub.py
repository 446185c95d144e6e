"""``MetaHub``: the metrics dictionary of one run and the calls of its components' hooks (as a
``Learner``'s ``hooks``, the update hooks around ``Trainer.step``); the one form of what hooks
receive: observation rows ``[N, ...]`` and update batches of tensors. The transition keys
components add are logged as the means ``log/transition/<key>`` (``TransitionMeans``)."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np
import torch

from looprl.core import AgentBase, Hyperparameter, SampleBatch, Trainer, TrainerStepResult
from looprl.core.leaves import as_tensor
from looprl.core.namedarray import NamedArray, recursive_apply
from looprl.environments.base import wrapped_seed
from looprl.meta.component import MetaComponent, MetaStack, check_transition
from looprl.meta.hyperparameters import (
    agent_hyperparameters,
    check_writes,
    set_hyperparameter,
    unknown_hyperparameter,
    worker_keys,
)


@dataclass
class Parts(AgentBase):
    """What a hub sees in a Ray actor worker, which has no agent: the policy, no trainer."""

    policy: Any
    trainer: Any = None
    acts: bool = True  # (``False``: policy workers act, ``MetaHub.acts_elsewhere``)

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The policy's ``hp/*`` keys (``{}`` without any, or one that does not act)."""
        return getattr(self.policy, "hyperparameters", dict)() if self.acts else {}


def written_by(error: KeyError | ValueError, components: Iterable[MetaComponent],
               hook: str, key: str | None = None) -> KeyError | ValueError:
    """``error``, a refused write (of ``hp/*`` ``key``), naming the ``components`` at ``hook``
    that declare ``key`` in their ``writes``, else the user's (looprl's declare theirs)."""
    at = [c for c in components if c.methods(hook)]
    at = [c for c in at if key in c.writes] or [
        c for c in at if not type(c).__module__.startswith("looprl.")] or at
    return type(error)(f"{', '.join(type(c).__name__ for c in at)} at {hook}: {error.args[0]}")


class TransitionMeans:
    """Running sums (and row counts) of the transition keys components added; the hub notices
    added keys by the dictionary's length alone (no work per step when there are none)."""

    def __init__(self) -> None:
        self._sums: dict[str, list[Any]] = {}

    def add(self, transition: dict[str, Any], known: int) -> None:
        """Add the values of ``transition``'s keys after its first ``known`` (the loop's);
        values that are no number or 0-d/1-d numeric tensor or array are left out."""
        for key, value in islice(transition.items(), known, None):
            if (total := _row_sum(value)) is not None:
                old = self._sums.get(key, (0.0, 0))
                self._sums[key] = [old[0] + total[0], old[1] + total[1]]

    def take(self) -> dict[str, float]:
        """The mean of each key since the last call; starts anew."""
        sums, self._sums = self._sums, {}
        return {"log/transition/" + key: float(total) / n for key, (total, n) in sums.items() if n}


def _row_sum(value: Any) -> tuple[Any, int] | None:
    """``(sum, rows)`` of a number or a 0-d/1-d numeric tensor or array; else ``None``."""
    if isinstance(value, bool | int | float | np.number):
        return float(value), 1
    if isinstance(value, torch.Tensor) and value.ndim <= 1 and value.numel():
        if value.is_floating_point() or value.dtype in (torch.bool, torch.int32, torch.int64):
            return value.detach().sum(dtype=torch.float64), value.numel()  # (float32: 2**24)
    if isinstance(value, np.ndarray) and value.ndim <= 1 and value.size:
        if np.issubdtype(value.dtype, np.number) or value.dtype == np.bool_:
            return float(value.sum()), value.size
    return None


class MetaHub:
    """The metrics dictionary and the meta components of one run (of ``agent``, or a Ray
    worker's ``Parts``: its ``hp/*`` keys as ``worker_keys``, ``"actor"`` or ``"trainer"``)."""

    #: the sums of the transition keys components added (made when one first adds a key)
    _means: TransitionMeans | None = None
    _worker: str | None = None
    _applying: str | None = None  # the hp/* key being applied (a refused one's)

    def __init__(self, components: list[MetaComponent], agent: Any, env: Any,
                 worker: str | None = None):
        self._worker = worker
        self.stack = MetaStack(components)
        inner = self._inner = agent.unwrapped
        self.metrics: dict[str, Any] = {"env": env, "model": None, "step": 0, "episode": 0,
                                        "update": 0, "policy": None, "buffer": inner.buffer}
        self.bind_parts()
        self._published: dict[str, Any] = {}
        self._trainer: dict[str, Any] = {}  # (a Ray actor's: ``trainer_values``)
        self._writes: dict[str, tuple[int, Any]] = {}  # a Ray worker's of the other's keys
        self._serial = 0  # (writes so far: tells a write from the next of the same value)
        self._seen: dict[str, tuple[int, Any]] = {}  # a Ray actor's: the trainer's, applied
        self._log_keys: set[str] = set()  # the log/* keys seen so far
        if worker is None:  # (a Ray worker's keys are the trainer's and the actor's together)
            check_writes(self.components, self.hyperparameters)
        self._publish()
        self._size = len(self.metrics)  # keys when last looked at (new ones: see _new_keys)

    @property
    def components(self) -> list[MetaComponent]:
        """The run's meta components, in the order their hooks run."""
        return self.stack.components

    def bind_parts(self) -> None:
        """Find what the hooks see of the agent (again where its trainer was replaced: a
        loaded checkpoint's, rank 0's in a trainer group): its policy and model, the
        approximations whose gradient norms they read, the exploration and the ``hp/*`` keys."""
        policy, trainer = self._inner.policy, self._inner.trainer  # (None: a Ray actor's)
        self.metrics.update(model=_module(policy), policy=policy)
        own = trainer.approximations() if trainer is not None else {}
        found = getattr(policy, "approximations", dict)  # (a duck-typed SRL policy: none)
        self.approximations = {**found(), **own}
        for approximation in self.approximations.values():
            approximation.track_grad_norm = True
        self._exploration = getattr(policy, "exploration", None)
        self._hyperparameters: dict[str, Hyperparameter] | None = None

    @property
    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The agent's ``hp/*`` keys with their getters and setters."""
        if self._hyperparameters is None:  # (and loaded from a checkpoint: declared again)
            found = agent_hyperparameters(self._inner)
            self._hyperparameters = found if self._worker is None else worker_keys(
                found, self._inner.policy, self._worker == "actor", self._trainer, self._write)
        return self._hyperparameters

    def trainer_values(self, values: dict[str, Any],
                       written: dict[str, tuple[int, Any]] | None = None) -> None:
        """(A Ray actor's hub) The trainer's ``hp/*`` values as it published them last, which
        the step and episode hooks read as a local run's read the trainer's own, and its update
        hooks' ``written`` exploration keys (``published_writes``): each new one is set here
        (an actor whose policy workers act: in them, ``PolicyCopy``; read here from ``values``)."""
        new = not values.keys() <= self._trainer.keys()
        self._trainer.update(values)
        if new:
            self._hyperparameters = None  # (declared again, with them)
        for key, write in (written or {}).items() if self._inner.acts else ():
            if self._seen.get(key) != write:
                self._seen[key] = write
                set_hyperparameter(self.hyperparameters, key, write[1])

    def acts_elsewhere(self) -> None:
        """(A Ray actor's hub whose policy workers act) Its policy copy shows the hooks the
        parameters but never acts: the exploration's ``hp/*`` keys are the trainer's (read as
        it published them; a write goes to it, which publishes it to the policy workers)."""
        self._inner.acts, self._exploration, self._hyperparameters = False, None, None

    def _write(self, key: str, value: Any) -> None:
        self._serial += 1
        self._writes[key] = (self._serial, value)

    def take_writes(self) -> dict[str, Any]:
        """(A Ray actor's hub) The last value its hooks wrote to each of the trainer's keys
        since the last call: they travel with the actor's segments (``apply_writes``)."""
        if not self._writes:
            return {}
        writes, self._writes = self._writes, {}
        return {key: value for key, (_, value) in writes.items()}

    def published_writes(self) -> dict[str, tuple[int, Any]]:
        """(A Ray trainer's hub) ``(serial, value)`` of the last write of each exploration key
        its update hooks made: published with the parameters (``trainer_values``)."""
        return dict(self._writes)

    def apply_writes(self, values: dict[str, Any]) -> None:
        """(A Ray trainer's hub) Set the values an actor's hooks wrote (``take_writes``)."""
        for key, value in values.items():
            set_hyperparameter(self.hyperparameters, key, value)

    def __getstate__(self) -> dict[str, Any]:
        """Leaves out the getters and setters (closures): found again on load."""
        return {**self.__dict__, "_hyperparameters": None}

    def run(self, hook: str) -> None:
        """Publish the agent's ``hp/*`` values, run ``hook``'s methods, apply the changes."""
        if self.stack.has(hook):
            self._publish()
            self.stack(hook, self.metrics)
            try:
                self._apply()
            except (KeyError, ValueError) as error:
                raise written_by(error, self.stack, hook, self._applying) from None

    def _publish(self) -> None:
        for key, hyperparameter in self.hyperparameters.items():
            self.metrics[key] = self._published[key] = hyperparameter.get()

    def _apply(self) -> None:
        """Apply every ``hp/*`` key whose value differs from the one last published."""
        metrics, published = self.metrics, self._published
        for key, value in published.items():
            new = metrics.get(key, value)
            if new is not value and new != value:
                self._applying = key
                set_hyperparameter(self.hyperparameters, key, new)
                published[key] = new
        if len(metrics) != self._size:
            self._new_keys()

    def _new_keys(self) -> None:
        """The dictionary changed size: check its ``hp/*`` keys, note its ``log/*`` keys."""
        keys = list(self.metrics)  # a snapshot: a Ray worker's stats thread may pop log keys
        self._size = len(keys)
        published = self._published
        for key in keys:
            if key.startswith("log/"):
                self._log_keys.add(key)
            elif key.startswith("hp/") and key not in published:
                self._applying = key
                raise unknown_hyperparameter(key, published)

    def log_scalars(self) -> dict[str, float]:
        """The ``log/*`` values written since the last call (popped) and the means of the
        transition keys components added."""
        values = self._means.take() if self._means is not None else {}
        if not self._log_keys:
            return values
        metrics = self.metrics
        for key in sorted(self._log_keys):
            value = metrics.pop(key, None)
            number = None if value is None else log_value(key, value)
            if number is not None:
                values[key] = number
        self._size = len(metrics)  # a key written again is looked at again
        return values

    def update(self, trainer: Trainer, batch: SampleBatch) -> TrainerStepResult:
        """``trainer.step`` with the update hooks around it (on a batch a hook may replace)."""
        metrics = self.metrics
        metrics["batch"] = seen = hook_batch(batch)
        fields = seen.values()
        self.run("pre_update")
        replaced = metrics.get("batch")
        if replaced is not seen and not isinstance(replaced, NamedArray):
            wrote = (f"wrote metrics['batch'] as a {type(replaced).__name__}" if "batch" in
                     metrics else "removed metrics['batch']")
            raise TypeError(f"A meta component {wrote}; it must stay a SampleBatch (replace "
                            "it with another SampleBatch for the trainer to learn from)")
        result = trainer.step(assigned(batch, seen, fields) if replaced is seen else replaced)
        metrics.update(update=metrics.get("update", 0) + 1, losses=dict(result.stats),
                       td_error=trainer.td_error, predictions=trainer.predictions,
                       grad_norm={name: a.grad_norm for name, a in self.approximations.items()})
        self.run("post_update")
        return result

    def pre_step(self, state: torch.Tensor) -> None:
        """Publish the observation rows about to be acted on and run the pre-step hooks."""
        self.metrics["state"] = state
        self.run("pre_step")

    def after_step(self, transition: dict[str, Any], step: int, ended: Any = None,
                   returns: list[float] = (), lengths: list[int] = ()) -> torch.Tensor:
        """The post-step hooks on ``transition``, then ``end_episodes`` where ``ended``; the
        reward the hooks left, one per row."""
        self.metrics.update(transition=transition, step=step)
        if self._exploration is not None:
            self.metrics["explored"] = self._exploration.explored
        known, rows = len(transition), len(transition["terminated"])  # (hooks' keys: later)
        self.run("post_step")
        if len(transition) != known:
            self._means = self._means or TransitionMeans()
            self._means.add(transition, known)
        try:
            reward, terminated = transition["reward"], transition["terminated"]
        except KeyError as key:  # (a hook deleted it: it may change the loop's keys, not delete)
            raise written_by(ValueError(f"metrics['transition'] lost its key {key} (change "
                                        "its values, keep its keys)"), self.components,
                             "post_step") from None
        check_transition(reward, terminated, rows)
        if ended is not None and bool(ended.any()):
            self.end_episodes(ended, list(returns), list(lengths))
        return reward

    def end_episodes(self, ended: Any, returns: list[float], lengths: list[int]) -> None:
        """The post-episode hooks of the episodes that ``ended``, then the pre-episode ones."""
        self.metrics.update(ended=ended, episode_returns=returns, episode_lengths=lengths,
                            episode=self.metrics.get("episode", 0) + len(returns))
        self.run("post_episode")
        self.run("pre_episode")


class StreamHooks:
    """The step and episode hooks of a collector's streams: one ``MetaHub``, or one per agent
    (its own rows, in ``view(agent, obs)``, and returns; ``log/*`` keys ending in ``/<name>``)."""

    def __init__(self, hubs: list[MetaHub], agents: list[int] | None = None,
                 names: Sequence[str] = (), view: Any = None):
        self.hubs, self.agents, self.names, self.view = hubs, agents, list(names), view

    @classmethod
    def over(cls, components: Sequence[MetaComponent], policy: Any, env: Any,
             names: Sequence[str] = ()) -> StreamHooks:
        """A hub over ``components``, or with agent ``names`` one per agent over copies."""
        if not names:
            return cls([MetaHub(list(components), Parts(policy), env, "actor")])
        policies = getattr(policy, "policies", None) or [None] * len(names)
        hubs = [MetaHub(copy.deepcopy(list(components)), Parts(agent_policy), env, "actor")
                for agent_policy in policies]
        for hub, name in zip(hubs, names, strict=True):
            hub.metrics["agent"] = name
        return cls(hubs, list(range(len(names))), names, getattr(policy, "view", None))

    def seed_run(self, seed: int) -> None:
        """``seed_hubs`` of this collector's hubs."""
        seed_hubs(self.hubs, seed)

    @property
    def components(self) -> list[MetaComponent]:
        """Every hub's components, hub after hub."""
        return [component for hub in self.hubs for component in hub.stack]

    def pre_episode(self) -> None:
        """Every hub's pre-episode hooks."""
        for hub in self.hubs:
            hub.run("pre_episode")

    def observations(self, obs: Any) -> Any:
        """Observation rows as a transition holds them; with a hub per agent, as they are."""
        return observation_rows(obs) if self.agents is None else obs

    def pre_step(self, obs: Any, agent: np.ndarray | None) -> None:
        """``MetaHub.pre_step`` of the observation rows ``obs`` (``agent``: each row's)."""
        if self.agents is None:
            self.hubs[0].pre_step(observation_rows(obs))
            return
        for hub, a in zip(self.hubs, self.agents, strict=True):
            if (rows := agent == a).any():
                hub.pre_step(self._own(a, obs[rows]))

    def after_step(self, transition: dict[str, Any], step: int, ended: np.ndarray,
                   returns: np.ndarray, lengths: list[int], agent: np.ndarray | None
                   ) -> torch.Tensor:
        """``MetaHub.after_step`` of ``transition`` (rows of agents ``agent``; ``returns``:
        ``[ended, agents]``); the reward the hooks left."""
        if self.agents is None:
            return self.hubs[0].after_step(transition, step, torch.from_numpy(ended),
                                           returns.sum(1).tolist(), lengths)
        reward = transition["reward"].clone()
        for hub, a in zip(self.hubs, self.agents, strict=True):
            episode = (torch.from_numpy(ended.copy()), returns[:, a].tolist(), lengths)
            if (rows := agent == a).any():
                mine = torch.from_numpy(rows)
                part = {key: value[mine] if isinstance(value, torch.Tensor) else value
                        for key, value in transition.items()}
                part["state"] = self._own(a, transition["state"][rows])
                part["next_state"] = self._own(a, transition["next_state"][rows])
                reward[mine] = hub.after_step(part, step, *episode)
            elif ended.any():  # its episode ended without a turn of its own
                hub.end_episodes(*episode)
        return reward

    def log_scalars(self) -> dict[str, float]:
        """The ``log/*`` values the hooks wrote since the last call (``/<agent>`` appended)."""
        if self.agents is None:
            return self.hubs[0].log_scalars()
        return {f"{key}/{name}": value for hub, name in zip(self.hubs, self.names, strict=True)
                for key, value in hub.log_scalars().items()}

    def _own(self, agent: int, obs: Any) -> torch.Tensor:
        """Agent ``agent``'s observation rows ``obs``, in its view."""
        return observation_rows(obs if self.view is None else self.view(agent, obs))


def seed_hubs(hubs: Sequence[MetaHub], seed: int) -> None:
    """``MetaComponent.seed_run`` of every component of ``hubs``, hub ``i``'s with
    ``wrapped_seed(seed + i)`` (one hub per agent of independent learners)."""
    for index, hub in enumerate(hubs):
        for component in hub.stack:
            component.seed_run(wrapped_seed(seed + index))


def agent_hub(components: list[MetaComponent], agent: Any, env: Any) -> MetaHub:
    """The ``MetaHub`` of a local ``agent``'s run, made its learner's ``hooks``."""
    hub = MetaHub(components, agent, env)
    learner = getattr(agent.unwrapped, "learner", None)
    if learner is not None:
        learner.hooks = hub
    return hub


def assigned(batch: SampleBatch, seen: SampleBatch, fields: tuple[Any, ...]) -> SampleBatch:
    """``batch`` with the fields a hook assigned anew in its view ``seen`` (fields were
    ``fields``): ``metrics['batch'].reward = ...`` changes what the trainer learns from."""
    changed = [(name, value) for (name, value), old in zip(seen.items(), fields, strict=True)
               if value is not old]
    if not changed:
        return batch
    batch = copy.copy(batch)
    for name, value in changed:
        setattr(batch, name, value)
    return batch


def _module(policy: Any) -> Any:
    try:
        return None if policy is None else policy.module
    except (NotImplementedError, AttributeError):
        return None


def log_value(key: str, value: Any) -> float | None:
    """The number a ``log/*`` key holds (a 0-d or 1-d array's mean; ``None`` if empty)."""
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, torch.Tensor | np.ndarray | np.generic) and value.ndim <= 1:
        array = torch.as_tensor(value).detach()
        return float(array.float().mean()) if array.numel() else None
    shape = f" of shape {tuple(value.shape)}" if hasattr(value, "shape") else ""
    raise ValueError(f"metrics[{key!r}] is a {type(value).__name__}{shape}: a log/ key holds a "
                     "number or a 0-d or 1-d tensor (logged as its mean)")


def hook_tensor(value: Any) -> torch.Tensor:
    """``value`` as a tensor: a NumPy array's view (a read-only one's copy)."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        value = value.copy()
    return as_tensor(value, None)


def observation_rows(obs: Any) -> torch.Tensor:
    """Observation rows as hooks see them (a ``NamedArray``'s ``obs``; float64 as float32)."""
    rows = hook_tensor(obs["obs"] if isinstance(obs, NamedArray) else obs)
    return rows.float() if rows.dtype == torch.float64 else rows


def hook_batch(batch: SampleBatch) -> SampleBatch:
    """``batch`` as the update hooks see it: every field a tensor, ``obs`` the observation
    rows ``[T + 1, B, ...]``; ``batch`` itself is left as it was."""
    seen = recursive_apply(batch, hook_tensor)
    seen.obs = observation_rows(seen.obs)
    return seen
