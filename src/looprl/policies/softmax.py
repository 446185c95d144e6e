"""``SoftmaxPolicy``: a categorical policy over discrete actions.

The model maps observations to one logit per action; calling the policy on a
``State``/``StateArray`` returns a ``torch.distributions.Categorical`` with batch shape
``state.shape``. Logits are zeroed where the episode terminated (a uniform distribution
there), as ``State.apply`` does for every model.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.distributions import Categorical

from looprl.approximation import Approximation
from looprl.nn import RLNetwork

__all__ = ["SoftmaxPolicy", "SoftmaxPolicyNetwork"]


class SoftmaxPolicyNetwork(RLNetwork):
    """Maps a ``State``/``StateArray`` to a ``Categorical`` over its logits.

    Argument validation of the distribution is disabled: it would synchronize with the
    device on every call.
    """

    def forward(self, state: Any) -> Categorical:
        logits = state.apply(self.model, "observation")
        return Categorical(logits=logits, validate_args=False)


class SoftmaxPolicy(Approximation):
    """Softmax (categorical) policy approximation.

    Args:
        model: maps a batch of observations to ``(batch, num_actions)`` logits.
        optimizer: optimizer over ``model``'s parameters.
        name: log/checkpoint name.
        **kwargs: see ``Approximation``.

    Example:
        >>> policy = SoftmaxPolicy(nn.Linear(4, 2))
        >>> from looprl.core import State
        >>> policy.no_grad(State(torch.zeros(4))).sample().shape
        torch.Size([])
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "policy", **kwargs: Any):
        super().__init__(SoftmaxPolicyNetwork(model), optimizer, name=name, **kwargs)
