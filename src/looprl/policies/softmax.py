"""``SoftmaxPolicy``: a categorical policy over discrete actions. Called on a
``State``/``StateArray`` it returns a ``Categorical`` of batch shape ``state.shape``, logits
zeroed where the episode terminated (``State.apply``)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.distributions import Categorical

from looprl.approximation import Approximation
from looprl.nn import RLNetwork

__all__ = ["SoftmaxPolicy", "SoftmaxPolicyNetwork"]


class SoftmaxPolicyNetwork(RLNetwork):
    """Maps a ``State``/``StateArray`` to a ``Categorical`` over its logits (not validated)."""

    def forward(self, state: Any) -> Categorical:
        return Categorical(logits=super().forward(state), validate_args=False)


class SoftmaxPolicy(Approximation):
    """Softmax (categorical) policy approximation; ``model`` maps observations to
    ``(batch, num_actions)`` logits, ``**kwargs`` go to ``Approximation``."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "policy", **kwargs: Any):
        super().__init__(SoftmaxPolicyNetwork(model), optimizer, name=name, **kwargs)
