"""The small interfaces every layer of looprl is built around (the library's table of contents).

* ``Agent`` / ``ParallelAgent`` / ``Multiagent`` -- ``act(state) -> action`` (seed 003); when
  and how an agent trains inside ``act`` is its own business.
* ``Policy`` -- ``rollout(request) -> result`` and ``analyze(sample, target)`` (seed 004).
* ``Trainer`` -- ``step(batch) -> TrainerStepResult`` updates a policy from a ``SampleBatch``.
* ``Preset`` / ``ParallelPreset`` -- configured factories of training and test agents.
* ``hyperparameters()`` -- the ``hp/*`` keys a part declares (``looprl.meta.hyperparameters``).
"""

from __future__ import annotations

import importlib
from abc import ABC, ABCMeta, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from looprl.core.hyperparameter import Hyperparameter, merge_hyperparameters
from looprl.core.imports import import_object
from looprl.core.namedarray import namedarray
from looprl.core.suggest import did_you_mean


class _ByName(ABCMeta):
    """Lets ``Policy(type_=name, ...)`` / ``Trainer(type_=name, ...)`` build by name."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        registry = _BY_NAME.get(cls) if "type_" in kwargs else None
        if registry is not None:
            return registry.make(kwargs.pop("type_"), *args, **kwargs)
        return super().__call__(*args, **kwargs)


class AgentBase:
    """What the agents declare besides ``act``: their ``hp/*`` keys, their buffer and the
    agent inside wrappers."""

    #: The buffer the agent learns from (replay or segments), published to meta components
    #: as ``metrics['buffer']`` (``None``: none).
    buffer: Any = None

    @property
    def unwrapped(self) -> Any:
        """The agent that holds the policy and trainer: ``self``, or a wrapper's inner agent."""
        return self

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The ``hp/*`` keys this agent can change while training (``{}``: none)."""
        return {}


class AgentWrapper(AgentBase):
    """Base of the agents that wrap another (bodies, adapters), forwarding to ``agent``."""

    def __init__(self, agent: Any):
        self.agent = agent

    @property
    def unwrapped(self) -> Any:
        return self.agent.unwrapped

    @property
    def buffer(self) -> Any:  # type: ignore[override]
        return self.agent.buffer

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        return self.agent.hyperparameters()


class Agent(AgentBase, ABC):
    """Accepts a ``State`` and returns an action."""

    @abstractmethod
    def act(self, state: Any) -> Any:
        """Select an action for ``state``; train if the agent's schedule says so."""


class ParallelAgent(AgentBase, ABC):
    """Accepts a ``StateArray`` (one row per environment) and returns a batch of actions."""

    @abstractmethod
    def act(self, state_array: Any) -> Any:
        """Select one action per row of ``state_array``; train if the schedule says so."""


class Multiagent(AgentBase, ABC):
    """Accepts a ``MultiagentState`` whose ``agent`` key says whose turn it is (each of its
    agents declares its own ``hp/*`` keys)."""

    @abstractmethod
    def act(self, multiagent_state: Any) -> Any:
        """Select an action for the agent named by ``multiagent_state['agent']``."""


class _PartOfAlgorithm:
    """What ``Policy`` and ``Trainer`` share: the ``Approximation`` objects they own and the
    ``hp/*`` keys these declare."""

    def approximations(self) -> dict[str, Any]:
        """The ``Approximation`` objects this part owns, by name (a trainer: besides its
        policy's; ``{}``: none)."""
        return {}

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The ``hp/*`` keys this part declares: by default its approximations'."""
        return merge_hyperparameters(*(a.hyperparameters()
                                       for a in self.approximations().values()))


class Policy(_PartOfAlgorithm, metaclass=_ByName):
    """Acting half of an algorithm: a model plus the rule that turns outputs into actions.

    ``rollout`` is called by actors, ``analyze`` by trainers. A policy owns its parameters; a
    trainer optimizes them. ``Policy(type_="actor-critic-separate", args=dict(...))`` builds a
    registered policy by name (seed 004, :func:`register_policy`).
    """

    #: Incremented by the trainer at every update (staleness, on Ray).
    version: int = 0
    #: The exploration policy this one acts through, which writes ``metrics['explored']``
    #: when meta components are attached (``None``: none).
    exploration: Any = None

    @property
    def default_policy_state(self) -> Any:
        """Initial recurrent memory of one agent (``None`` for feed-forward policies)."""
        return None

    @abstractmethod
    def rollout(self, request: Any, **kwargs: Any) -> Any:
        """Return a ``RolloutResult`` (at least ``action``) for a batched ``RolloutRequest``."""

    @abstractmethod
    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> Any:
        """Re-evaluate a stored ``sample`` for the trainer's loss (``target`` picks which)."""

    def get_checkpoint(self) -> dict[str, Any]:
        """Everything needed to restore the policy, in a ``torch.save``-able dict."""
        return {"state_dict": self.module.state_dict(), "version": self.version}

    def load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore what ``get_checkpoint`` returned."""
        self.module.load_state_dict(checkpoint["state_dict"])
        self.version = checkpoint.get("version", 0)

    @property
    def module(self) -> torch.nn.Module:
        """The ``nn.Module`` holding all parameters of this policy."""
        raise NotImplementedError(f"{type(self).__name__} does not expose a module")

    def logits_and_values(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Action logits ``[n, actions]`` and state values ``[n]`` of the observation rows
        ``obs``, without gradients, on the CPU (what PLR and SPaCE score with)."""
        raise ValueError(
            f"{type(self).__name__} gives no action logits and values: PLR and SPaCE score "
            "with an actor-critic policy (PPO, A2C, ...) or a Q policy (the DQN family)")


class Trainer(_PartOfAlgorithm, metaclass=_ByName):
    """Learning half of an algorithm: updates ``policy`` from batches of experience.

    ``Trainer(type_="ppo", policy=policy, args=dict(...))`` builds a registered trainer by
    name (:func:`register_trainer`). After ``step``, ``predictions`` holds what the update
    computed (``q_values``, ``values``, ``log_probs``: detached, replaced each step) and
    ``td_error`` the per-sample TD errors (``None`` for policy-gradient trainers; see
    ``looprl.meta.metrics``). With meta components attached, ``metrics`` is the run's
    metrics dictionary and ``hub`` its ``MetaHub``, whose update hooks ``learn`` runs.
    """

    predictions: dict[str, Any] = {}  # noqa: B006
    td_error: Any = None
    metrics: dict[str, Any] | None = None
    hub: Any = None

    @property
    @abstractmethod
    def policy(self) -> Policy:
        """The policy whose parameters this trainer optimizes."""

    @abstractmethod
    def step(self, batch: SampleBatch) -> TrainerStepResult:
        """Advance one training step on ``batch`` (``[T + 1, B]`` segments); return the
        statistics to log and, for prioritized replay, new priorities."""

    def learn(self, batch: SampleBatch) -> TrainerStepResult:
        """``step`` with the run's update hooks around it (``hub.update``), if any: what
        every learner calls."""
        hub = self.hub
        return self.step(batch) if hub is None else hub.update(self, batch)


def parts_hyperparameters(policy: Policy, trainer: Trainer, **own: Hyperparameter
                            ) -> dict[str, Hyperparameter]:
    """A local agent's keys: its ``policy``'s, its ``trainer``'s and ``hp/<name>`` for each
    of its ``own``."""
    mine = {f"hp/{name}": hyperparameter for name, hyperparameter in own.items()}
    return merge_hyperparameters(policy.hyperparameters(), trainer.hyperparameters(), mine)


class Preset(ABC):
    """A configured algorithm on a configured environment; builds agents that share weights.

    ``env_name`` names the environment it was built for, ``env_remote`` what Ray actors make
    for it, ``meta`` the meta components attached to its experiments (``PresetBuilder.meta``).
    """

    env_name: str | None = None
    env_remote: tuple[str, dict[str, Any]] | None = None
    meta: tuple[Any, ...] | list[Any] = ()

    def __init__(self, name: str, device: str | torch.device, hyperparameters: dict[str, Any]):
        self.name = name
        self.device = device
        self.hyperparameters = hyperparameters

    @abstractmethod
    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Agent:
        """Build a training agent; ``train_steps`` is the budget schedules anneal over."""

    @abstractmethod
    def test_agent(self) -> Agent:
        """Build an evaluation agent from a copy of the current parameters."""

    def remote_env(self) -> tuple[str | None, dict[str, Any]]:
        """The registered environment (name, arguments) Ray actors step for this preset."""
        return self.env_remote or (self.env_name, {})

    def learning(self, train_steps: float, actors: int = 1, trainers: int = 1) -> dict[str, Any]:
        """How Ray's trainer worker learns for this preset (``AlgorithmSpec.of_preset``): the
        ``AlgorithmSpec`` fields ``buffer``, ``buffer_args``, where they apply
        ``explorations`` and ``whole_episodes``, and ``segment_length``. ``train_steps`` is
        the frames each of ``trainers`` trainers learns from."""
        raise ValueError(f"runtime=ray runs every preset of the families (classic control, "
                         f"Atari, continuous, multi-agent); {self.name!r} "
                         f"({type(self).__name__}) is none of them: run it locally "
                         "(runtime=local), give it a learning() method, or build an "
                         "AlgorithmSpec in Python")

    def save(self, filename: str) -> None:
        """Save the preset (configuration and current weights) with ``torch.save``."""
        torch.save(self, filename)


class ParallelPreset(Preset):
    """A preset whose training agent is a ``ParallelAgent`` over ``n_envs`` environments."""

    n_envs: int = 1
    #: rows of the segments it learns from
    n_steps: int = 1

    @abstractmethod
    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> ParallelAgent:
        """Build a training agent acting on ``StateArray`` batches of ``n_envs`` rows."""

    @abstractmethod
    def parallel_test_agent(self) -> ParallelAgent:
        """Build an evaluation agent acting on ``StateArray`` batches."""

    def learning(self, train_steps: float, actors: int = 1, trainers: int = 1) -> dict[str, Any]:
        """On-policy: each trainer step takes ``n_envs`` fresh segments of ``n_steps`` rows."""
        return {"buffer": "on_policy", "buffer_args": {"batch_streams": self.n_envs},
                "segment_length": self.n_steps}


@namedarray
class RolloutRequest:
    """What an actor sends a policy: a batch of observations (seed 004).

    Attributes:
        obs: observations, batched along the first dimension (numpy or torch).
        policy_state: recurrent memory per row (``None`` for feed-forward policies).
        is_evaluation: act deterministically; a bool for the whole batch or one per row.
        exploration: an exploration rate per row (each Ape-X actor's epsilon); ``None``
            leaves the policy's own.
        agent: the agent of each row, its index in the environment's agent list (``None``
            for one agent).
        done: whether each row's episode ended at this observation (terminated or truncated:
            its action is ignored and the env resets next), so that a policy with a memory of
            its own (an ez-greedy option) ends it there (``None``: no row ended).
    """

    obs: Any
    policy_state: Any = None
    is_evaluation: Any = None
    exploration: Any = None
    agent: Any = None
    done: Any = None


@namedarray
class RolloutResult:
    """What a policy answers: actions plus what its trainer needs later (seed 004).

    Attributes:
        action: one action per row.
        policy_state: recurrent memory after this step (``None`` for feed-forward policies).
        log_prob: ``log pi(action | obs)`` (policy-gradient methods).
        value: ``V(obs)`` (actor-critic methods).
    """

    action: Any
    policy_state: Any = None
    log_prob: Any = None
    value: Any = None


def deterministic_rows(request: RolloutRequest) -> bool | torch.Tensor:
    """``request.is_evaluation`` as a bool (every row agrees) or a per-row bool tensor."""
    evaluation = getattr(request, "is_evaluation", None)
    if evaluation is None:
        return False
    if isinstance(evaluation, bool):
        return evaluation
    if isinstance(evaluation, np.ndarray) and evaluation.dtype == bool:
        if not evaluation.any():
            return False
        if evaluation.all():
            return True
    evaluation = torch.as_tensor(evaluation, dtype=torch.bool)
    return bool(evaluation) if evaluation.dim() == 0 else evaluation


@namedarray
class SampleBatch:
    """Time-major trajectory segments ``[T + 1, B, ...]`` sent by actors to trainers (seed 004).

    Row ``t`` of a stream holds what the actor saw and did at step ``t``: the observation,
    the policy's outputs for it, and the ``reward``/``done``/``truncated`` that arrived
    *with* that observation (from the previous action). A stream that ends an episode at row
    ``t`` (``done`` or ``truncated``) holds the final observation there; the row after it
    starts the next episode (reward 0). Consecutive segments of a stream overlap by one row,
    so row ``T`` is the bootstrap row of this segment and row 0 of the next one.

    Attributes:
        obs: ``NamedArray`` of observation fields (the env's obs dict).
        action: the action taken at each row.
        reward, done, truncated: what arrived with each row's observation.
        policy_state: recurrent memory *before* each row (``None`` for feed-forward).
        log_prob, value: the policy's outputs at each row (actor-critic methods).
        policy_version: the ``Policy.version`` that chose each row's action.
        weight: importance weights of the streams ``[T + 1, B]`` (prioritized replay);
            ``None`` weighs every stream 1.
        agent: the agent index of each stream ``[T + 1, B]``; ``None`` for one agent.
        stream: which stream each column continues ``[T + 1, B]`` (distinct over the actors
            that feed one trainer): replay's n-step windows span a stream's segments.

    A one-step replay transition ``(s, a, r, s')`` is a segment with ``T = 1``: row 0 holds
    ``obs=s, action=a``, row 1 ``obs=s', reward=r`` and whether ``s'`` ended the episode.
    """

    obs: Any
    action: Any = None
    reward: Any = None
    done: Any = None
    truncated: Any = None
    policy_state: Any = None
    log_prob: Any = None
    value: Any = None
    policy_version: Any = None
    weight: Any = None
    agent: Any = None
    stream: Any = None


@dataclass(eq=False)
class TrainerStepResult:
    """What ``Trainer.step`` returns in the SRL API (seed 004).

    Attributes:
        stats: scalar statistics to log (floats or 0-d tensors).
        step: the trainer's step count after this step.
        priorities: new replay priorities of the sampled rows (Ape-X style), or ``None``.
    """

    stats: dict[str, Any]
    step: int
    priorities: Any = field(default=None, repr=False)


class _Registry:
    """Names to classes (or factories), or to lazily imported ``"module.path:Name"`` strings."""

    def __init__(self, kind: str):
        self.kind = kind
        self.entries: dict[str, Callable[..., Any] | str] = {}

    def register(self, name: str, cls: Callable[..., Any] | str) -> None:
        """Register a class or factory (or a lazy ``"module.path:Name"`` path) under
        ``name``; ``ValueError`` if it is taken."""
        if name in self.entries:
            raise ValueError(f"{self.kind} {name!r} is already registered; pick another name")
        self.entries[name] = cls

    def make(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if name not in self.entries:
            importlib.import_module("looprl.agents")  # registers the built-in names
        if name not in self.entries:
            known = ", ".join(sorted(self.entries)) or "none"
            hint = did_you_mean(str(name), self.entries)
            raise KeyError(f"unknown {self.kind} {name!r}.{hint} Registered: {known}")
        options = kwargs.pop("args", None) or {}
        entry = self.entries[name]
        factory = import_object(entry, self.kind) if isinstance(entry, str) else entry
        return factory(*args, **kwargs, **options)


_POLICIES = _Registry("policy")
_TRAINERS = _Registry("trainer")
_BY_NAME = {Policy: _POLICIES, Trainer: _TRAINERS}
#: ``register_policy(name, cls)``: a ``Policy`` class or factory under ``name``
register_policy = _POLICIES.register
#: ``register_trainer(name, cls)``: a ``Trainer`` class or factory under ``name``
register_trainer = _TRAINERS.register
