"""What an ``Approximation`` updates after every step: its target network (the model itself,
``TrivialTarget``; a copy overwritten periodically, ``FixedTarget``, or moved towards it,
``PolyakTarget``) and its checkpointer."""

from __future__ import annotations

import copy
import os
from abc import ABC, abstractmethod
from typing import Any

import torch
from torch import nn

from looprl.core.hyperparameter import Hyperparameter
from looprl.core.suggest import check_count, is_number

__all__ = ["Checkpointer", "DummyCheckpointer", "FixedTarget", "PeriodicCheckpointer",
           "PolyakTarget", "TargetNetwork", "TrivialTarget"]


class TargetNetwork(ABC):
    """``init(model)`` once, ``update()`` after each step; called under ``no_grad``."""

    _target: nn.Module

    def __call__(self, *inputs: Any) -> Any:
        """Evaluate the target network under ``torch.no_grad()``."""
        with torch.set_grad_enabled(False):
            return self._target(*inputs)

    @abstractmethod
    def init(self, model: nn.Module) -> None:
        """Attach the target to ``model``."""

    def update(self) -> None:
        """Called after every optimizer step of the model."""

    def sync(self) -> None:
        """Copy the model into the target now (e.g. after loading a checkpoint)."""

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The ``hp/*`` key of this target's rate (``{}``: none)."""
        return {}


class TrivialTarget(TargetNetwork):
    """The model itself serves as its own target."""

    def init(self, model: nn.Module) -> None:
        self._target = model


class _CopyTarget(TargetNetwork):
    """Targets that keep a gradient-free copy of the model."""

    def init(self, model: nn.Module) -> None:
        self._target = copy.deepcopy(model)
        self._target.requires_grad_(False)
        buffers = list(zip(self._target.buffers(), model.buffers()))
        #: (target, source) pairs: parameters and float buffers, then the other buffers
        self._floats = [*zip(self._target.parameters(), model.parameters()),
                        *((t, s) for t, s in buffers if s.is_floating_point())]
        self._other = [(t, s) for t, s in buffers if not s.is_floating_point()]

    @torch.no_grad()
    def sync(self, rate: float = 1.0) -> None:
        """Move the target a fraction ``rate`` towards the model (1: copy it)."""
        if rate == 1.0:
            for target, source in self._floats:
                target.copy_(source)
        else:
            for target, source in self._floats:
                target.lerp_(source, rate)
        for target, source in self._other:
            target.copy_(source)


class FixedTarget(_CopyTarget):
    """A copy of the model, overwritten every ``update_frequency`` (``hp/target_period``)."""

    def __init__(self, update_frequency: int):
        check_count(update_frequency=update_frequency)
        self.update_frequency = update_frequency
        self._updates = 0

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """``hp/target_period``."""
        return {"hp/target_period": Hyperparameter.attribute(self, "update_frequency", int)}

    def update(self) -> None:
        self._updates += 1
        if self._updates % self.update_frequency == 0:
            self.sync()


class PolyakTarget(_CopyTarget):
    """A copy moved towards the model at every update: ``t <- t + rate * (m - t)``, ``rate``
    in ``(0, 1]`` (``tau``, ``hp/tau``); float buffers too."""

    def __init__(self, rate: float):
        if not (is_number(rate) and 0.0 < rate <= 1.0):
            raise ValueError(f"PolyakTarget's rate must be a number in (0, 1], got {rate!r}")
        self.rate = float(rate)

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """``hp/tau``."""
        return {"hp/tau": Hyperparameter.attribute(self, "rate", float)}

    def update(self) -> None:
        self.sync(self.rate)


class Checkpointer:
    """Interface: ``init(model, filename)`` once, then call it after every update."""

    def init(self, model: nn.Module, filename: str) -> None:
        """Attach the checkpointer to ``model`` and the file it writes."""

    def __call__(self) -> None:
        """Called after every update; may save the model."""


class DummyCheckpointer(Checkpointer):
    """Never saves anything."""


class PeriodicCheckpointer(Checkpointer):
    """Saves the model to ``filename`` (else ``<log_dir>/<name>.pt``) every ``frequency`` steps."""

    def __init__(self, frequency: int, filename: str | None = None):
        check_count(frequency=frequency)
        self.frequency = frequency
        self.filename = filename
        self._model: nn.Module | None = None
        self._updates = 0

    def init(self, model: nn.Module, filename: str) -> None:
        self._model = model
        self.filename = self.filename or filename

    def __call__(self) -> None:
        self._updates += 1
        if self._updates % self.frequency == 0:
            self.save()

    def save(self) -> None:
        """Write the model now."""
        if self._model is None:
            raise RuntimeError("PeriodicCheckpointer.init(model, filename) was never called")
        os.makedirs(os.path.dirname(self.filename) or ".", exist_ok=True)
        torch.save(self._model, self.filename)
