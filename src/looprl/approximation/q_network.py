"""``QNetwork``: an ``Approximation`` of action values ``Q(s, .)`` over discrete actions.

``q(state)`` returns the values of every action, shape ``(*state.shape, num_actions)``,
zeroed where the episode terminated; ``q(state, actions)`` gathers the values of the
given actions, shape ``state.shape``. The same holds for ``q.no_grad``, ``q.eval`` and
``q.target``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.approximation.target import TargetNetwork
from looprl.nn import RLNetwork

__all__ = ["QModule", "QNetwork"]


class QModule(RLNetwork):
    """Maps a ``State``/``StateArray`` (and optionally actions) to action values; a tensor of
    observations ``[B, ...]`` (``QNetwork.network``'s callers) goes to the model as it is."""

    def forward(self, state: Any, actions: Any = None) -> torch.Tensor:
        if isinstance(state, torch.Tensor):
            values = self.model(state)
        else:
            values = state.apply(self.model, "observation")
        if actions is None:
            return values
        return gather_actions(values, actions)


def gather_actions(values: torch.Tensor, actions: Any) -> torch.Tensor:
    """``values[..., actions]`` row by row: ``(*batch, num_actions)`` values and integer
    ``actions`` of shape ``batch`` (tensor, list, array or int) give shape ``batch``."""
    if not isinstance(actions, torch.Tensor):
        actions = torch.as_tensor(actions, device=values.device)
    return values.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)


class QNetwork(Approximation):
    """Action-value approximation (see the module docstring).

    Args:
        model: maps a batch of observations to ``(batch, num_actions)`` values.
        optimizer, name, **kwargs: see ``Approximation``.
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "q", **kwargs: Any):
        super().__init__(QModule(model), optimizer, name=name, **kwargs)

    def network(self, target: bool = False) -> nn.Module | None:
        """The ``QModule`` (``target``: the target network's), when calling it on
        observations ``[B, ...]`` is what ``self(state)`` and ``no_grad(state)`` (``target``:
        ``self.target(state)``, under ``torch.no_grad()``) do for a ``StateArray`` ``[B]`` of
        them that ends no episode (its mask the float 1.0): the acting and training loops call
        it so, without making the state (its hooks run, on the observations). ``None`` for a
        subclass, a distributed model or a target network of another kind."""
        if type(self) is not QNetwork or self._ddp is not None:
            return None
        module = self.model
        if target:
            if type(self._target).__call__ is not TargetNetwork.__call__:
                return None
            module = self._target._target
        return module if type(module) is QModule else None
