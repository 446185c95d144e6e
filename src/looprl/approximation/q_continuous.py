"""``QContinuous``: ``Q(s, a)`` of continuous actions, ``state.shape``, zero where terminated;
``ContinuousQ``: the same on observation tensors (DDPG's, TD3's and SAC's critics)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.core.state import State
from looprl.nn import RLNetwork

__all__ = ["ContinuousQ", "QContinuous", "QContinuousModule"]


class ContinuousQ(RLNetwork):
    """``Q(s, a) = model(cat(s, a))`` of observation and action tensors, one value per row."""

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.model(torch.cat((observation, action), dim=-1)).squeeze(-1)


class QContinuousModule(ContinuousQ):
    """``ContinuousQ`` of a ``State``/``StateArray`` (or observations) and actions."""

    def forward(self, state: Any, actions: torch.Tensor) -> torch.Tensor:
        if not isinstance(state, State):  # (observations: ``ContinuousQ``'s)
            return super().forward(state, actions)
        observation = state.as_input("observation").float()
        actions = torch.as_tensor(actions, device=observation.device)
        actions = actions.reshape(*observation.shape[:-1], -1).to(observation.dtype)
        return state.apply_mask(state.as_output(super().forward(observation, actions)))


class QContinuous(Approximation):
    """Continuous-action values; ``model`` maps ``cat(observation, action)`` to ``(batch, 1)``."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "q", **kwargs: Any):
        super().__init__(QContinuousModule(model), optimizer, name=name, **kwargs)
