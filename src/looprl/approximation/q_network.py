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
    """``values[..., actions]`` row by row: ``(*batch, num_actions)`` to ``batch``; an action
    outside ``0 .. num_actions - 1`` is a one-line ``ValueError`` (``check_actions``)."""
    actions = action_index(actions, values.shape[:-1], values.device, values.shape[-1])
    try:
        return values.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    except (RuntimeError, IndexError):
        check_actions(actions, values.shape[-1])
        raise


def check_actions(actions: torch.Tensor, num_actions: int) -> None:
    """A one-line ``ValueError`` naming the first of ``actions`` that is no whole number in
    ``0 .. num_actions - 1`` (a float such as 1.5 or NaN too, which ``long()`` would cut). It
    reads the actions (a device sync): callers run it where it is cheap (actions not yet on the
    device, or a float tensor, no policy's) or where ``gather`` failed, not on every step's
    path."""
    bad = (actions < 0) | (actions >= num_actions)
    if actions.is_floating_point():
        bad |= actions != actions.round()  # (NaN too: it is not itself)
    bad = actions[bad]
    if bad.numel():
        first = bad.flatten()[0].item()
        raise ValueError(f"q(states, actions): the approximation has {num_actions} actions, so "
                         f"actions must be whole numbers 0 .. {num_actions - 1}, got "
                         f"{f'{first:g}' if isinstance(first, float) else first}")


def action_index(actions: Any, batch: tuple[int, ...], device: torch.device,
                 num_actions: int | None = None) -> torch.Tensor:
    """``actions`` as one ``long`` index per row of ``batch``: ``(B, 1)`` actions (a stored
    ``torch.multinomial(probs, 1)``) are one per row too, as ALL's ``actions.view(-1, 1)``
    takes them; another count is a one-line ``ValueError``, not ``gather``'s error or a
    silently shorter result. Actions that are no tensor (a list, NumPy) are checked against
    ``num_actions`` before they reach the device, where it costs no sync, and so is a float
    tensor (``long()`` would cut 1.5 to 1 silently); an integer tensor, a policy's, is not."""
    if not isinstance(actions, torch.Tensor):
        actions = torch.as_tensor(actions)
        if num_actions is not None:
            check_actions(actions, num_actions)
        actions = actions.to(device)
    elif num_actions is not None and actions.is_floating_point():
        check_actions(actions, num_actions)
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
