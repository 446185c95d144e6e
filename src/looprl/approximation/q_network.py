"""The approximations of an ``RLNetwork`` over a state's observations (observations given in
place of a state go straight to the model): ``QNetwork`` (``q(state)``: ``(*state.shape,
num_actions)`` values, ``q(state, actions)``: ``state.shape``), ``VNetwork`` (``state.shape``)
and ``FeatureNetwork`` (a shared body); zero where terminated."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.core.state import State
from looprl.nn import RLNetwork

__all__ = ["FeatureModule", "FeatureNetwork", "QModule", "QNetwork", "VModule", "VNetwork",
           "action_index", "check_actions", "gather_actions"]


class QModule(RLNetwork):
    """Maps a ``State``/``StateArray`` (or observations) and optionally actions to values."""

    def forward(self, state: Any, actions: Any = None) -> torch.Tensor:
        values = super().forward(state)
        return values if actions is None else gather_actions(values, actions)


def gather_actions(values: torch.Tensor, actions: Any, atoms: bool = False) -> torch.Tensor:
    """``values[..., actions]`` row by row: ``(*batch, num_actions)`` to ``batch`` (``atoms``: of
    ``(*batch, num_actions, num_atoms)``); a bad action is a one-line ``ValueError``."""
    dim = -2 if atoms else -1
    actions = action_index(actions, values.shape[:dim], values.device, values.shape[dim])
    index = actions.unsqueeze(-1)
    if atoms:
        index = index.unsqueeze(-1).expand(*actions.shape, 1, values.shape[-1])
    try:
        return values.gather(dim, index).squeeze(dim)
    except (RuntimeError, IndexError):  # (the check only here: no sync per call)
        check_actions(actions, values.shape[dim])
        raise


def check_actions(actions: torch.Tensor, num_actions: int,
                  who: str = "q(states, actions): the approximation") -> None:
    """A one-line ``ValueError`` naming the first of ``actions`` that is no whole number in
    ``0 .. num_actions - 1`` (1.5, NaN); a device sync, so not on every step's path (``who``:
    what has the actions, as the line begins)."""
    bad = (actions < 0) | (actions >= num_actions)
    if actions.is_floating_point():
        bad |= actions != actions.round()  # (NaN too: it is not itself)
    bad = actions[bad]
    if bad.numel():
        first = bad.flatten()[0].item()
        raise ValueError(f"{who} has {num_actions} actions, so "
                         f"actions must be whole numbers 0 .. {num_actions - 1}, got "
                         f"{f'{first:g}' if isinstance(first, float) else first}")


def action_index(actions: Any, batch: tuple[int, ...], device: torch.device,
                 num_actions: int) -> torch.Tensor:
    """``actions`` as one ``long`` index per row of ``batch`` (``(B, 1)`` too, as ALL's); another
    count is a one-line ``ValueError``. Non-tensor and float actions are ``check_actions``-ed."""
    if not isinstance(actions, torch.Tensor):
        actions = torch.as_tensor(actions)
        check_actions(actions, num_actions)
        actions = actions.to(device)
    elif actions.is_floating_point():
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


class VModule(RLNetwork):
    """Maps a ``State``/``StateArray`` to one value per state."""

    def forward(self, state: Any) -> torch.Tensor:
        values = super().forward(state)
        if values.shape[-1:] != (1,):  # (was taken: a model of 2 outputs gave [B, 2] "values")
            raise ValueError(f"a VNetwork's model gives one value per state, of shape [..., 1], "
                             f"got shape {tuple(values.shape)}: end it with a layer of 1 output")
        return values.squeeze(-1)


class VNetwork(Approximation):
    """State-value approximation; ``model`` maps observations to ``(batch, 1)`` values."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "v", **kwargs: Any):
        super().__init__(VModule(model), optimizer, name=name, **kwargs)


class FeatureModule(RLNetwork):
    """Applies ``model`` to the observations of a ``State``/``StateArray``: ``f(state)`` is
    ``state.update('observation', features)``, so heads apply to it as to any state."""

    def forward(self, state: Any) -> Any:
        if not isinstance(state, State):  # (observations: their features)
            return self.model(state)
        features = state.as_output(self.model(state.as_input("observation")))
        return state.update("observation", features)


class FeatureNetwork(Approximation):
    """Feature extractor shared by several heads; ``model`` maps observations to features."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "feature", **kwargs: Any):
        super().__init__(FeatureModule(model), optimizer, name=name, **kwargs)

    def reinforce(self, loss: torch.Tensor | None = None) -> FeatureNetwork:
        """Step on the gradients the heads left (after backpropagating ``loss``, if given)."""
        if loss is not None:
            return super().reinforce(loss)
        return self.step()
