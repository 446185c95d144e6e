"""``VNetwork``: state values; ``v(state)`` has shape ``state.shape``, zero where terminated."""

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
        return super().forward(state).squeeze(-1)


class VNetwork(Approximation):
    """State-value approximation; ``model`` maps observations to ``(batch, 1)`` values."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "v", **kwargs: Any):
        super().__init__(VModule(model), optimizer, name=name, **kwargs)
