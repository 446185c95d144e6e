"""``QNetwork``: action values over discrete actions. ``q(state)`` returns
``(*state.shape, num_actions)`` values (zero where terminated), ``q(state, actions)`` those of
``actions``, ``state.shape``; observations in place of a state (a tensor or fields) go straight
to the model."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.nn import RLNetwork

__all__ = ["QModule", "QNetwork", "action_index", "gather_actions"]


class QModule(RLNetwork):
    """Maps a ``State``/``StateArray`` (or observations) and optionally actions to values."""

    def forward(self, state: Any, actions: Any = None) -> torch.Tensor:
        values = super().forward(state)
        return values if actions is None else gather_actions(values, actions)


def gather_actions(values: torch.Tensor, actions: Any) -> torch.Tensor:
    """``values[..., actions]`` row by row: ``(*batch, num_actions)`` to ``batch``."""
    actions = action_index(actions, values.shape[:-1], values.device)
    return values.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def action_index(actions: Any, batch: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """``actions`` as one ``long`` index per row of ``batch``: ``(B, 1)`` actions (a stored
    ``torch.multinomial(probs, 1)``) are one per row too, as ALL's ``actions.view(-1, 1)``
    takes them; another count is a one-line ``ValueError``, not ``gather``'s error or a
    silently shorter result."""
    if not isinstance(actions, torch.Tensor):
        actions = torch.as_tensor(actions, device=device)
    if actions.shape != batch:
        if actions.numel() != math.prod(batch):
            raise ValueError(f"{actions.numel()} actions (shape {tuple(actions.shape)}) for "
                             f"action values of {tuple(batch)} states: give one action per "
                             "state")
        actions = actions.reshape(batch)
    return actions if actions.dtype == torch.long else actions.long()


class QNetwork(Approximation):
    """Action-value approximation; ``model`` maps observations to ``(batch, num_actions)``."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "q", **kwargs: Any):
        super().__init__(QModule(model), optimizer, name=name, **kwargs)
