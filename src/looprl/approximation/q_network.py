"""``QNetwork``: action values over discrete actions. ``q(state)`` returns
``(*state.shape, num_actions)`` values (zero where terminated), ``q(state, actions)`` those of
``actions``, ``state.shape``; observations in place of a state (a tensor or fields) go straight
to the model."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.core.state import State
from looprl.nn import RLNetwork

__all__ = ["QModule", "QNetwork"]


class QModule(RLNetwork):
    """Maps a ``State``/``StateArray`` (or observations) and optionally actions to values."""

    def forward(self, state: Any, actions: Any = None) -> torch.Tensor:
        if isinstance(state, State):
            values = state.apply(self.model, "observation")
        else:
            values = self.model(state)
        if actions is None:
            return values
        return gather_actions(values, actions)


def gather_actions(values: torch.Tensor, actions: Any) -> torch.Tensor:
    """``values[..., actions]`` row by row: ``(*batch, num_actions)`` to ``batch``."""
    if not isinstance(actions, torch.Tensor):
        actions = torch.as_tensor(actions, device=values.device)
    return values.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)


class QNetwork(Approximation):
    """Action-value approximation; ``model`` maps observations to ``(batch, num_actions)``."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "q", **kwargs: Any):
        super().__init__(QModule(model), optimizer, name=name, **kwargs)
