"""``QContinuous``: ``Q(s, a)`` for continuous actions; ``q(state, actions)`` has shape
``state.shape``, zero where terminated. ``ContinuousQ``: the same ``Q(s, a)`` on observation
tensors (DDPG's, TD3's and SAC's critics)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.core.state import State
from looprl.nn import RLNetwork

__all__ = ["ContinuousQ", "QContinuous", "QContinuousModule"]


class ContinuousQ(RLNetwork):
    """``Q(s, a) = model(cat(s, a))``, one value per row (``model``: ``(batch, 1)`` outputs), of
    observation and action tensors."""

    def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.model(torch.cat((observation, action), dim=-1)).squeeze(-1)


class QContinuousModule(ContinuousQ):
    """``ContinuousQ`` of a ``State``/``StateArray`` (or observations) and actions
    ``(*state.shape, action_dim)``."""

    def forward(self, state: Any, actions: torch.Tensor) -> torch.Tensor:
        if not isinstance(state, State):  # (observations: ``ContinuousQ``'s)
            return super().forward(state, actions)
        observation = state.as_input("observation").float()
        actions = torch.as_tensor(actions, device=observation.device)
        actions = actions.reshape(*observation.shape[:-1], -1).to(observation.dtype)
        return state.apply_mask(state.as_output(super().forward(observation, actions)))


class QContinuous(Approximation):
    """Continuous-action value approximation; ``model`` maps ``cat(observation, action)``,
    ``(batch, obs_dim + action_dim)``, to ``(batch, 1)`` values."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "q", **kwargs: Any):
        super().__init__(QContinuousModule(model), optimizer, name=name, **kwargs)
