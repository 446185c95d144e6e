"""``Policy`` and ``Trainer`` (seed 004), built by registered name: ``Policy(type_=name)``."""

from __future__ import annotations

import importlib
from abc import ABCMeta, abstractmethod
from collections.abc import Callable
from typing import Any

import torch

from looprl.core.batches import SampleBatch, TrainerStepResult
from looprl.core.hyperparameter import Hyperparameter, merge_hyperparameters
from looprl.core.imports import import_object
from looprl.core.suggest import did_you_mean


class _ByName(ABCMeta):
    """Lets ``Policy(type_=name, ...)`` / ``Trainer(type_=name, ...)`` build by name."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        registry = _BY_NAME.get(cls) if "type_" in kwargs else None
        if registry is not None:
            return registry.make(kwargs.pop("type_"), *args, **kwargs)
        return super().__call__(*args, **kwargs)


class _PartOfAlgorithm:
    def approximations(self) -> dict[str, Any]:
        """The ``Approximation`` objects this part owns (a trainer: besides its policy's)."""
        return {}

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The ``hp/*`` keys this part declares (by default its approximations')."""
        return merge_hyperparameters(*(a.hyperparameters()
                                       for a in self.approximations().values()))


class Policy(_PartOfAlgorithm, metaclass=_ByName):
    """Acting half of an algorithm: ``rollout`` for actors, ``analyze`` for trainers. It owns
    the parameters that a trainer optimizes."""

    #: Incremented by the trainer at every update (staleness, on Ray).
    version: int = 0
    #: The exploration policy this one acts through (writes ``metrics['explored']``).
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


class Trainer(_PartOfAlgorithm, metaclass=_ByName):
    """Learning half of an algorithm: updates ``policy`` from batches. After ``step``,
    ``predictions`` holds what the update computed (detached) and ``td_error`` the per-sample
    TD errors (``None`` for policy-gradient trainers)."""

    predictions: dict[str, Any] = {}  # noqa: B006
    td_error: Any = None
    #: the kind of sample buffer the runtime feeds it (``looprl.memory.make_sample_buffer``)
    sample_buffer: str = "on_policy"

    @property
    @abstractmethod
    def policy(self) -> Policy:
        """The policy whose parameters this trainer optimizes."""

    @abstractmethod
    def step(self, batch: SampleBatch) -> TrainerStepResult:
        """One training step on ``batch`` (``[T + 1, B]`` segments)."""


def parts_hyperparameters(policy: Policy, trainer: Trainer, **own: Hyperparameter
                            ) -> dict[str, Hyperparameter]:
    """A learner's keys: its ``policy``'s, its ``trainer``'s and ``hp/<name>`` of its ``own``."""
    mine = {f"hp/{name}": hyperparameter for name, hyperparameter in own.items()}
    declared = [getattr(part, "hyperparameters", dict)() for part in (policy, trainer)]
    return merge_hyperparameters(*declared, mine)


class _Registry:
    def __init__(self, kind: str):
        self.kind = kind
        self.entries: dict[str, Callable[..., Any] | str] = {}

    def register(self, name: str, cls: Callable[..., Any] | str) -> None:
        """Register ``cls`` under ``name``; ``ValueError`` if it is taken."""
        if name in self.entries:
            raise ValueError(f"{self.kind} {name!r} is already registered; pick another name")
        self.entries[name] = cls

    def missing(self, name: str) -> str | None:
        """``None`` if ``name`` is registered, else the line saying it is not."""
        if name not in self.entries:
            for module in _NAME_SOURCES:
                importlib.import_module(module)
        if name in self.entries:
            return None
        known = ", ".join(sorted(self.entries)) or "none"
        hint = did_you_mean(str(name), self.entries)
        return f"unknown {self.kind} {name!r}.{hint} Registered: {known}"

    def make(self, name: str, *args: Any, **kwargs: Any) -> Any:
        problem = self.missing(name)
        if problem is not None:
            raise KeyError(problem)
        options = kwargs.pop("args", None) or {}
        entry = self.entries[name]
        factory = import_object(entry, self.kind) if isinstance(entry, str) else entry
        return factory(*args, **kwargs, **options)


_POLICIES = _Registry("policy")
_TRAINERS = _Registry("trainer")
_BY_NAME = {Policy: _POLICIES, Trainer: _TRAINERS}
#: ``register_policy(name, cls)``: a class or factory (or ``"module:Name"``) under ``name``
register_policy = _POLICIES.register
register_trainer = _TRAINERS.register
_NAME_SOURCES: list[str] = []


def register_names_from(module: str) -> None:
    """Import ``module`` (which registers names) at the first unregistered ``type_``."""
    if module not in _NAME_SOURCES:
        _NAME_SOURCES.append(module)
