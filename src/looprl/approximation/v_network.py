"""``VNetwork``: an ``Approximation`` of state values ``V(s)``.

``v(state)`` returns a tensor of shape ``state.shape`` (the model's trailing output
dimension of size 1 is squeezed), zeroed where the episode terminated.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.nn import RLNetwork

__all__ = ["VModule", "VNetwork"]


class VModule(RLNetwork):
    """Maps a ``State``/``StateArray`` to one value per state."""

    def forward(self, state: Any) -> torch.Tensor:
        return state.apply(self.model, "observation").squeeze(-1)


class VNetwork(Approximation):
    """State-value approximation (see the module docstring).

    Args:
        model: maps a batch of observations to ``(batch, 1)`` values.
        optimizer, name, **kwargs: see ``Approximation``.
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "v", **kwargs: Any):
        super().__init__(VModule(model), optimizer, name=name, **kwargs)
