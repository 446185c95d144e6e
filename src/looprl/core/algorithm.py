"""``Policy`` and ``Trainer`` (seed 004), built by registered name: ``Policy(type_=name)``."""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from typing import Any

import torch

from looprl.core.batches import SampleBatch, TrainerStepResult
from looprl.core.checked import checked
from looprl.core.hyperparameter import Hyperparameter, merge_hyperparameters
from looprl.core.registry import Registry


class _ByName(ABCMeta):
    """Lets ``Policy(type_=name, ...)`` / ``Trainer(type_=name, ...)`` build by name."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        registry = _BY_NAME.get(cls) if "type_" in kwargs else None
        if registry is None:
            return super().__call__(*args, **kwargs)
        factory = registry.get(kwargs.pop("type_"))
        options = kwargs.pop("args", None) or {}  # (seed 004: ``args=dict(...)``)
        return factory(*args, **kwargs, **options)


class _PartOfAlgorithm:
    #: the methods whose input ``looprl.core.checked`` checks, in every subclass that defines them
    _checked: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in cls._checked:
            if name in cls.__dict__:
                setattr(cls, name, checked(cls.__dict__[name]))

    def approximations(self) -> dict[str, Any]:
        """The ``Approximation`` objects this part owns (a trainer: besides its policy's)."""
        return {}

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The ``hp/*`` keys this part declares (by default its approximations')."""
        return merge_hyperparameters(*(a.hyperparameters()
                                       for a in self.approximations().values()))


class Policy(_PartOfAlgorithm, metaclass=_ByName):
    """Acting half of an algorithm: ``rollout`` for actors, ``analyze`` for trainers. It owns
    the parameters that a trainer optimizes. What a subclass's ``rollout``/``analyze`` is given
    is checked where it fails (``looprl.core.checked``)."""

    _checked = ("rollout", "analyze")
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

    def inc_version(self) -> None:
        """Count one trainer step (the trainer calls it after every step)."""
        self.version += 1

    def get_checkpoint(self) -> dict[str, Any]:
        """Everything needed to restore the policy, in a ``torch.save``-able dict."""
        return {"state_dict": self.module.state_dict(), "version": self.version}

    def load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore ``get_checkpoint``'s output (SRL's too); the version is 0 without ``steps``
        or ``version`` (pretrained weights). A one-line ``ValueError`` for a checkpoint without
        a ``state_dict`` or of another network."""
        if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
            got = sorted(checkpoint) if isinstance(checkpoint, dict) else type(checkpoint).__name__
            raise ValueError(f"a policy checkpoint is a dict with a 'state_dict' (what "
                             f"get_checkpoint() returns), got {got}")
        try:
            self.module.load_state_dict(checkpoint["state_dict"])
        except RuntimeError as error:  # (torch's: a line per mismatched tensor)
            lines = [line.strip() for line in str(error).splitlines()[1:] if line.strip()]
            first = (lines or [str(error)])[0].rstrip(".")
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            raise ValueError(f"the checkpoint does not fit {type(self).__name__}'s network: "
                             f"{first}{more}; load one of a policy built with the same "
                             "arguments") from None
        self.version = int(checkpoint.get("steps", checkpoint.get("version", 0)))

    @property
    def module(self) -> torch.nn.Module:
        """The ``nn.Module`` holding all parameters of this policy."""
        raise NotImplementedError(f"{type(self).__name__} does not expose a module")


class Trainer(_PartOfAlgorithm, metaclass=_ByName):
    """Learning half of an algorithm: updates ``policy`` from batches; after ``step``,
    ``predictions`` holds what it computed (detached), ``td_error`` the TD errors (or ``None``).
    What a subclass's ``step`` is given is checked (``looprl.core.checked``)."""

    _checked = ("step",)

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


_POLICIES = Registry("policy")
_TRAINERS = Registry("trainer")
_BY_NAME = {Policy: _POLICIES, Trainer: _TRAINERS}
#: ``register_policy(name, cls)``: a class or factory (or ``"module:Name"``) under ``name``
register_policy = _POLICIES.register
register_trainer = _TRAINERS.register


def register_names_from(module: str) -> None:
    """Import ``module`` (which registers names) at the first unregistered ``type_``."""
    for registry in (_POLICIES, _TRAINERS):
        if module not in registry.sources:
            registry.sources.append(module)
