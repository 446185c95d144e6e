"""Checkpointers: save a model to disk as training goes.

``Approximation`` calls its checkpointer after every optimizer step. The file name is set
by ``init(model, filename)`` (the approximation passes ``<logger.log_dir>/<name>.pt``, or
``<name>.pt`` when its logger has no ``log_dir``), unless one was given explicitly.
"""

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
    """Saves the whole model (``torch.save(model, filename)``) every ``frequency`` updates, to
    ``filename`` when given, else to the file ``init`` receives."""

    def __init__(self, frequency: int, filename: str | None = None):
        check_count(frequency=frequency)
        self.frequency = frequency
        #: The file the model is written to (``None`` until ``init``, unless given).
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
        directory = os.path.dirname(self.filename)
        if directory:
            os.makedirs(directory, exist_ok=True)
        torch.save(self._model, self.filename)
