"""``MetaHub``: the metrics dictionary of one run, and the calls of its components' hooks.

The experiment loop owns a hub when meta components are attached (none otherwise). The hub

* writes what the loop knows into the metrics dictionary (``looprl.meta.metrics``) and calls
  the step and episode hooks;
* is the ``Learner``'s ``hooks`` (``agent_hub`` makes it so for a local agent; the trainer
  worker gives its learner one): the learner calls ``update``, which runs the update hooks
  around ``Trainer.step``;
* publishes the agent's ``hp/*`` keys before every hook call and applies the ones a hook
  changed;
* publishes which rows the exploration policy explored (``policy.exploration.explored``)
  as ``metrics['explored']`` before the post-step hooks;
* hands the ``log/*`` values written to the loop's logger (``log_scalars``), with the mean
  of each key a component added to ``metrics['transition']`` (``log/transition/<key>``,
  ``looprl.meta.transition_log``).

A Ray worker builds its hub over its ``Parts``; its collector (``EnvRunner``) reports steps
through the same calls as the local loops, so the hook sequence is written once, here.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from looprl.core import (
    AgentBase,
    Hyperparameter,
    SampleBatch,
    Trainer,
    TrainerStepResult,
)
from looprl.meta.component import MetaComponent, MetaStack
from looprl.meta.hyperparameters import agent_hyperparameters, unknown_hyperparameter
from looprl.meta.transition_log import TransitionMeans
from looprl.meta.views import hook_batch, observation_rows


@dataclass
class Parts(AgentBase):
    """What a hub sees in a Ray actor worker, which has no agent: the policy (its own
    ``unwrapped``, as an agent's; the trainer's side gives its ``Learner``) and no trainer."""

    policy: Any
    trainer: Any = None

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The policy's ``hp/*`` keys (``{}`` without one: a policy worker answers)."""
        return {} if self.policy is None else self.policy.hyperparameters()


class MetaHub:
    """The metrics dictionary and the meta components of one run.

    Args:
        components: the components, in the order their hooks run.
        agent: the training agent (bodies included), or a Ray worker's ``Parts``.
        env: the (vector) environment, published as ``metrics['env']``.

    ``metrics['model']`` is the policy's network (``Policy.module``; ``None`` without one), on
    every runtime: the trained one where the learner runs the update hooks.
    """

    #: the sums of the transition keys components added (made when one first adds a key)
    _means: TransitionMeans | None = None

    def __init__(self, components: list[MetaComponent], agent: Any, env: Any):
        self.stack = MetaStack(components)
        inner = self._inner = agent.unwrapped
        policy = inner.policy  # None: answered by a policy worker
        trainer = inner.trainer  # (None in an actor's Parts)
        self.metrics: dict[str, Any] = {"env": env, "model": _module(policy), "step": 0,
                                        "episode": 0, "update": 0, "policy": policy,
                                        "buffer": inner.buffer}
        self._hyperparameters: dict[str, Hyperparameter] | None = agent_hyperparameters(inner)
        own = trainer.approximations() if trainer is not None else {}
        self.approximations = {**(policy.approximations() if policy is not None else {}), **own}
        for approximation in self.approximations.values():
            approximation.track_grad_norm = True
        #: notes which rows explored (``metrics['explored']``, given to the post-step hooks)
        self._exploration = policy.exploration if policy is not None else None
        self._published: dict[str, Any] = {}
        self._log_keys: set[str] = set()  # the log/* keys seen so far
        self._publish()
        self._size = len(self.metrics)  # keys when last looked at (new ones: see _new_keys)

    @property
    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The agent's ``hp/*`` keys with their getters and setters."""
        if self._hyperparameters is None:  # loaded from a checkpoint: declared again
            self._hyperparameters = agent_hyperparameters(self._inner)
        return self._hyperparameters

    def __getstate__(self) -> dict[str, Any]:
        """For checkpoints: the getters and setters (closures) are found again on load."""
        return {**self.__dict__, "_hyperparameters": None}

    def run(self, hook: str) -> None:
        """Publish the agent's ``hp/*`` values, run ``hook``'s methods, apply the changes."""
        if self.stack.has(hook):
            self._publish()
            self.stack(hook, self.metrics)
            self._apply()

    def _publish(self) -> None:
        for key, hyperparameter in self.hyperparameters.items():
            self.metrics[key] = self._published[key] = hyperparameter.get()

    def _apply(self) -> None:
        """Apply every ``hp/*`` key whose value differs from the one last published."""
        metrics, published = self.metrics, self._published
        for key, value in published.items():
            new = metrics.get(key, value)
            if new is not value and new != value:
                self.hyperparameters[key].set(new)
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
                raise unknown_hyperparameter(key, published)

    def log_scalars(self) -> dict[str, float]:
        """The ``log/*`` values written since the last call, as floats (``log_value``; an
        empty tensor is left out), removed from the dictionary (``looprl.meta.metrics``), and
        the means of the transition keys components added (``log/transition/<key>``)."""
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
        """``trainer.step`` with the pre- and post-update hooks around it; the hooks see
        ``batch`` as ``hook_batch`` makes it (a hook that replaces ``metrics['batch']`` has
        the trainer learn from its batch instead); then the dictionary holds the step's
        losses, TD errors, predictions and gradient norms."""
        metrics = self.metrics
        metrics["batch"] = seen = hook_batch(batch)
        self.run("pre_update")
        result = trainer.step(batch if metrics["batch"] is seen else metrics["batch"])
        metrics["update"] = metrics.get("update", 0) + 1
        metrics["losses"] = dict(result.stats)
        metrics["td_error"] = trainer.td_error
        metrics["predictions"] = trainer.predictions
        metrics["grad_norm"] = {name: a.grad_norm for name, a in self.approximations.items()}
        self.run("post_update")
        return result

    # -- what the loops report ----------------------------------------------------------
    # The one loop, the collector (``EnvRunner``, which every local experiment and every Ray
    # actor runs), makes three calls (through ``StreamHooks``): ``pre_episode`` once when it
    # starts, then for every step ``pre_step`` and ``after_step``, which ends and starts
    # episodes as they end.
    def pre_episode(self) -> None:
        """Run the pre-episode hooks (the loop calls it once, before its first episode)."""
        self.run("pre_episode")

    def pre_step(self, state: torch.Tensor) -> None:
        """Publish the observations about to be acted on (one row per env copy, as
        ``observation_rows`` makes them) as ``metrics['state']`` and run the pre-step
        hooks."""
        self.metrics["state"] = state
        self.run("pre_step")

    def after_step(self, transition: dict[str, Any], step: int, ended: Any = None,
                   returns: list[float] = (), lengths: list[int] = ()) -> torch.Tensor:
        """What every loop does after stepping its envs: publish ``transition``, run the
        post-step hooks, and where episodes ``ended`` (bool per env copy, with their
        ``returns`` and ``lengths``) ``end_episodes``. Returns the reward the hooks left,
        one float per row (what the agent learns from)."""
        self.metrics["transition"] = transition
        self.metrics["step"] = step
        if self._exploration is not None:
            self.metrics["explored"] = self._exploration.explored
        known = len(transition)  # the loop's keys: a hook's new ones come after them
        self.run("post_step")
        if len(transition) != known:
            if self._means is None:
                self._means = TransitionMeans()
            self._means.add(transition, known)
        reward = transition["reward"]
        check_transition(reward, len(transition["terminated"]))
        if ended is not None and bool(ended.any()):
            self.end_episodes(ended, list(returns), list(lengths))
        return reward

    def end_episodes(self, ended: Any, returns: list[float], lengths: list[int]) -> None:
        """The post-episode hooks of the episodes that ``ended`` (bool per env copy, their
        ``returns`` and ``lengths``), then the pre-episode hooks of the next ones."""
        self.metrics.update(ended=ended, episode_returns=returns, episode_lengths=lengths,
                            episode=self.metrics.get("episode", 0) + len(returns))
        self.run("post_episode")
        self.run("pre_episode")


class StreamHooks:
    """The step and episode hooks of a collector's streams: one ``MetaHub`` over all of them,
    or, for independent learners, one per agent (``agents``: the agent index of each hub),
    each given its own agent's rows and returns, as each agent's hub is locally.

    The hooks see the field ``obs`` of the observations (``metrics['state']``,
    ``transition['state']`` / ``['next_state']``), an agent's hub in the agent's own view
    (``view(agent, obs)``: what its networks read, e.g. a masked agent's observation with its
    action mask appended), as its learner's batches hold them.

    Args:
        hubs: the hubs, in the agents' order.
        agents: the agent each hub takes (``None``: one hub takes every stream).
        names: the agents' names (their ``log/*`` keys end in ``/<name>``).
        view: ``view(agent, obs)``, an agent's view of observation rows (``None``: as they
            are).
    """

    def __init__(self, hubs: list[MetaHub], agents: list[int] | None = None,
                 names: Sequence[str] = (), view: Any = None):
        self.hubs = hubs
        self.agents = agents
        self.names = list(names)
        self.view = view

    @classmethod
    def over(cls, components: Sequence[MetaComponent], policy: Any, env: Any,
             names: Sequence[str] = ()) -> StreamHooks:
        """A hub over ``components`` (of the acting ``policy``, ``None`` on a policy worker)
        for every stream; with agent ``names``, one per agent over its own copies of them
        (its policy: ``policy.policies[a]``, an ``IndependentPolicy``'s)."""
        if not names:
            return cls([MetaHub(list(components), Parts(policy), env)])
        policies = getattr(policy, "policies", None) or [None] * len(names)
        hubs = []
        for name, agent_policy in zip(names, policies, strict=True):
            hub = MetaHub(copy.deepcopy(list(components)), Parts(agent_policy), env)
            hub.metrics["agent"] = name
            hubs.append(hub)
        return cls(hubs, list(range(len(names))), names, getattr(policy, "view", None))

    @property
    def components(self) -> list[MetaComponent]:
        """Every hub's components, hub after hub (what ``shared_state`` lists)."""
        return [component for hub in self.hubs for component in hub.stack]

    def pre_episode(self) -> None:
        """Every hub's pre-episode hooks."""
        for hub in self.hubs:
            hub.pre_episode()

    def observations(self, obs: Any) -> Any:
        """Observation rows as a transition holds them (``observation_rows``); with a hub
        per agent, the rows as they are (each hub takes its own, in its view)."""
        return observation_rows(obs) if self.agents is None else obs

    def pre_step(self, obs: Any, agent: np.ndarray | None) -> None:
        """``MetaHub.pre_step`` of the observation rows ``obs`` (``agent``: each row's)."""
        if self.agents is None:
            self.hubs[0].pre_step(observation_rows(obs))
            return
        for (hub, rows), a in zip(self._rows(agent), self.agents, strict=True):
            if rows.any():
                hub.pre_step(self._own(a, obs[rows]))

    def after_step(self, transition: dict[str, Any], step: int, ended: np.ndarray,
                   returns: np.ndarray, lengths: list[int], agent: np.ndarray | None
                   ) -> torch.Tensor:
        """``MetaHub.after_step`` of ``transition`` (its rows' agents: ``agent``); ``ended``:
        a bool per env copy, ``returns``: each ended copy's return, per agent
        (``[ended, agents]``). Returns the reward the hooks left, one per row."""
        if self.agents is None:
            return self.hubs[0].after_step(transition, step, torch.from_numpy(ended),
                                           returns.sum(1).tolist(), lengths)
        reward = transition["reward"].clone()
        for (hub, rows), a in zip(self._rows(agent), self.agents, strict=True):
            episode = (torch.from_numpy(ended.copy()), returns[:, a].tolist(), lengths)
            if rows.any():
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
        """The ``log/*`` values the hooks wrote since the last call (``/<agent>`` after an
        agent's own)."""
        if self.agents is None:
            return self.hubs[0].log_scalars()
        return {f"{key}/{name}": value for hub, name in zip(self.hubs, self.names, strict=True)
                for key, value in hub.log_scalars().items()}

    def _rows(self, agent: np.ndarray | None) -> list[tuple[MetaHub, np.ndarray]]:
        return [(hub, agent == a) for hub, a in zip(self.hubs, self.agents, strict=True)]

    def _own(self, agent: int, obs: Any) -> torch.Tensor:
        """Agent ``agent``'s observation rows ``obs``, in its view (``observation_rows``)."""
        return observation_rows(obs if self.view is None else self.view(agent, obs))


def agent_hub(components: list[MetaComponent], agent: Any, env: Any) -> MetaHub:
    """The ``MetaHub`` of a local ``agent``'s run, made its learner's ``hooks`` (the learner
    runs the update hooks around its trainer's steps; an agent without a ``learner``: none)."""
    hub = MetaHub(components, agent, env)
    learner = getattr(agent.unwrapped, "learner", None)
    if learner is not None:
        learner.hooks = hub
    return hub


def _module(policy: Any) -> Any:
    """``policy.module`` (``None``: no policy, or one without a module)."""
    try:
        return None if policy is None else policy.module
    except (NotImplementedError, AttributeError):
        return None


def log_value(key: str, value: Any) -> float | None:
    """The number a ``log/*`` key holds: a float, or the mean of a 0-d or 1-d tensor or array
    (``None`` if empty); ``ValueError`` (one line) for anything else."""
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, torch.Tensor | np.ndarray | np.generic) and value.ndim <= 1:
        array = torch.as_tensor(value).detach()
        return float(array.float().mean()) if array.numel() else None
    shape = f" of shape {tuple(value.shape)}" if hasattr(value, "shape") else ""
    raise ValueError(f"metrics[{key!r}] is a {type(value).__name__}{shape}: a log/ key holds a "
                     "number or a 0-d or 1-d tensor (logged as its mean)")


def check_transition(reward: Any, n: int) -> None:
    """``ValueError`` if a hook left ``transition['reward']`` with the wrong shape or type."""
    if not isinstance(reward, torch.Tensor) or tuple(reward.shape) != (n,):
        shape = tuple(reward.shape) if hasattr(reward, "shape") else type(reward).__name__
        raise ValueError(f"A meta component wrote transition['reward'] as {shape}; it must "
                         f"stay a float tensor of shape ({n},), one reward per environment copy")
    if not reward.is_floating_point():
        raise ValueError(f"transition['reward'] must be a float tensor, got {reward.dtype}")
