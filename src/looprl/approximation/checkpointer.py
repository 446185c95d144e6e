"""Checkpointers: ``Approximation`` calls one after every optimizer step."""

from __future__ import annotations

import os

import torch
from torch import nn

from looprl.core.suggest import check_count

__all__ = ["Checkpointer", "DummyCheckpointer", "PeriodicCheckpointer"]


class Checkpointer:
    """Interface: ``init(model, filename)`` once, then call it after every update."""

    def init(self, model: nn.Module, filename: str) -> None:
        """Attach the checkpointer to ``model`` and the file it writes."""

    def __call__(self) -> None:
        """Called after every update; may save the model."""


class DummyCheckpointer(Checkpointer):
    """Never saves anything."""


class PeriodicCheckpointer(Checkpointer):
    """``torch.save(model, filename)`` every ``frequency`` updates (``filename``: else the file
    ``init`` receives, ``<log_dir>/<name>.pt``)."""

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
