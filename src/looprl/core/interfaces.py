"""The small interfaces every layer of looprl is built around.

Read this file as the table of contents of the library:

* ``Agent`` / ``ParallelAgent`` / ``Multiagent`` -- ``act(state) -> action``: the whole
  contract between an agent and the control loop (seed 003). When and how an agent
  trains inside ``act`` is nobody's business but its own.
* ``Policy`` -- ``rollout(request) -> result`` turns a batch of observations into actions
  (plus what a trainer needs later); ``analyze(sample, target)`` re-evaluates a stored
  batch for a loss (seed 004).
* ``Trainer`` -- ``step(batch) -> stats`` updates a policy's parameters from a batch.
* ``Preset`` / ``ParallelPreset`` -- configured factories of training and test agents.

The local experiment loop, the outer-loop runners and the Ray workers all use these same
objects, which is what lets one algorithm serve all three runtimes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch

from looprl.core.namedarray import namedarray


class Agent(ABC):
    """Accepts a ``State`` and returns an action."""

    @abstractmethod
    def act(self, state: Any) -> Any:
        """Select an action for ``state``; train if the agent's schedule says so."""


class ParallelAgent(ABC):
    """Accepts a ``StateArray`` (one row per environment) and returns a batch of actions."""

    @abstractmethod
    def act(self, state_array: Any) -> Any:
        """Select one action per row of ``state_array``; train if the schedule says so."""


class Multiagent(ABC):
    """Accepts a ``MultiagentState`` whose ``agent`` key says whose turn it is."""

    @abstractmethod
    def act(self, multiagent_state: Any) -> Any:
        """Select an action for the agent named by ``multiagent_state['agent']``."""


class Policy(ABC):
    """Acting half of an algorithm: a model plus the rule that turns outputs into actions.

    ``rollout`` is called by actors (batched over environments and agents); ``analyze`` by
    trainers. A policy owns its parameters; a trainer optimizes them.
    """

    #: Incremented by the trainer at every update; lets distributed workers track staleness.
    version: int = 0

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


class Trainer(ABC):
    """Learning half of an algorithm: updates ``policy`` from batches of experience.

    After ``step``, ``predictions`` holds what the update computed (``q_values``,
    ``values``, ``log_probs``: detached tensors) for the metrics dictionary; it is replaced
    by each step, never mutated. ``metrics`` is the run's metrics dictionary when meta
    components are attached (``None`` otherwise), for update rules that read it.
    """

    predictions: dict[str, Any] = {}  # noqa: B006
    metrics: dict[str, Any] | None = None

    @property
    @abstractmethod
    def policy(self) -> Policy:
        """The policy whose parameters this trainer optimizes."""

    @abstractmethod
    def step(self, batch: Any) -> dict[str, float | torch.Tensor]:
        """Advance one training step on ``batch``; return statistics to be logged."""


class Preset(ABC):
    """A configured algorithm on a configured environment; builds agents that share weights.

    ``agent`` builds a training agent, ``test_agent`` a greedy copy for evaluation; agents
    built by one preset share its networks. ``save`` pickles the preset (with weights).
    ``env_name`` names the environment it was built for (set by the builders), ``meta``
    lists the meta components attached to its experiments (``PresetBuilder.meta``).
    """

    env_name: str | None = None
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

    def save(self, filename: str) -> None:
        """Save the preset (configuration and current weights) with ``torch.save``."""
        torch.save(self, filename)


class ParallelPreset(Preset):
    """A preset whose training agent is a ``ParallelAgent`` over ``n_envs`` environments."""

    n_envs: int = 1

    @abstractmethod
    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> ParallelAgent:
        """Build a training agent acting on ``StateArray`` batches of ``n_envs`` rows."""

    @abstractmethod
    def parallel_test_agent(self) -> ParallelAgent:
        """Build an evaluation agent acting on ``StateArray`` batches."""


@namedarray
class RolloutRequest:
    """What an actor sends a policy: a batch of observations (seed 004).

    Attributes:
        obs: observations, batched along the first dimension (numpy or torch).
        policy_state: recurrent memory per row (``None`` for feed-forward policies).
        is_evaluation: act deterministically; a bool for the whole batch or one per row.
    """

    obs: Any
    policy_state: Any = None
    is_evaluation: Any = None


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
    """``request.is_evaluation`` as a bool (whole batch) or a per-row bool tensor."""
    evaluation = getattr(request, "is_evaluation", None)
    if evaluation is None:
        return False
    if isinstance(evaluation, bool):
        return evaluation
    evaluation = torch.as_tensor(evaluation, dtype=torch.bool)
    return bool(evaluation) if evaluation.dim() == 0 else evaluation
