"""``QContinuous``: ``Q(s, a)`` for continuous actions; ``q(state, actions)`` has shape
``state.shape``, zero where terminated."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.nn import RLNetwork

__all__ = ["QContinuous", "QContinuousModule"]


class QContinuousModule(RLNetwork):
    """Maps a ``State``/``StateArray`` and actions ``(*state.shape, action_dim)`` to values."""

    def forward(self, state: Any, actions: torch.Tensor) -> torch.Tensor:
        observation = state.as_input("observation").float()
        actions = torch.as_tensor(actions, device=observation.device)
        actions = actions.reshape(*observation.shape[:-1], -1).to(observation.dtype)
        values = self.model(torch.cat((observation, actions), dim=-1)).squeeze(-1)
        return state.apply_mask(state.as_output(values))


class QContinuous(Approximation):
    """Continuous-action value approximation; ``model`` maps ``cat(observation, action)``,
    ``(batch, obs_dim + action_dim)``, to ``(batch, 1)`` values."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "q", **kwargs: Any):
        super().__init__(QContinuousModule(model), optimizer, name=name, **kwargs)
