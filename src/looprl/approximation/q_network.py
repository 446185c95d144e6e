"""``QNetwork``: action values over discrete actions. ``q(state)`` returns
``(*state.shape, num_actions)`` values (zero where terminated), ``q(state, actions)`` those of
``actions``, ``state.shape``."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.approximation.target import TargetNetwork
from looprl.nn import RLNetwork

__all__ = ["QModule", "QNetwork"]


class QModule(RLNetwork):
    """Maps a ``State``/``StateArray`` (or observations) and optionally actions to values."""

    def forward(self, state: Any, actions: Any = None) -> torch.Tensor:
        if isinstance(state, torch.Tensor):
            values = self.model(state)
        else:
            values = state.apply(self.model, "observation")
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

    def network(self, target: bool = False) -> nn.Module | None:
        """The ``QModule`` (``target``: the target's) to call on observations ``[B, ...]`` in
        place of a ``StateArray`` that ends no episode; ``None`` for a subclass, a distributed
        model or another kind of target network."""
        if type(self) is not QNetwork or self._ddp is not None:
            return None
        module = self.model
        if target:
            if type(self._target).__call__ is not TargetNetwork.__call__:
                return None
            module = self._target._target
        return module if type(module) is QModule else None
