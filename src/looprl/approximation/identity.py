"""``Identity``: the ``Approximation`` of the identity function (``all.approximation.Identity``),
e.g. the feature network of presets whose value and policy heads read the observation itself."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation

__all__ = ["Identity"]


class Identity(Approximation):
    """The identity function: ``f(x) = x`` for every call (``__call__``, ``no_grad``, ``eval``,
    ``target``); it has no parameters, so ``reinforce`` and ``step`` do nothing.

    Args:
        device: the device it reports (its inputs stay where they are).
        name: log/checkpoint name.
        **kwargs: see ``Approximation``.
    """

    def __init__(self, device: str | torch.device = "cpu", name: str = "identity",
                 **kwargs: Any):
        super().__init__(nn.Identity(), None, device=device, name=name, **kwargs)

    def reinforce(self, loss: Any = None) -> Identity:
        """Nothing to learn: returns ``self``."""
        return self

    def step(self, loss: Any = None) -> Identity:
        """Nothing to update: returns ``self``."""
        return self
