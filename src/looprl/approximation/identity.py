"""``Identity``: the ``Approximation`` of the identity function (``all.approximation.Identity``)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation

__all__ = ["Identity"]


class Identity(Approximation):
    """``f(x) = x`` for every call; ``reinforce`` and ``step`` do nothing."""

    def __init__(self, device: str | torch.device = "cpu", name: str = "identity",
                 **kwargs: Any):
        super().__init__(nn.Identity(), None, device=device, name=name, **kwargs)

    def reinforce(self, loss: Any = None) -> Identity:
        """Nothing to learn."""
        return self

    def step(self, loss: Any = None) -> Identity:
        """Nothing to update."""
        return self
