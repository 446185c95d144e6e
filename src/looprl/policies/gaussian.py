"""``GaussianPolicy``: ALL's Gaussian stochastic policy (``all.policies.GaussianPolicy``), an
``Approximation`` whose call returns a ``torch.distributions`` object over ``Box`` actions.

The model's ``2 * action_dim`` outputs are ``cat(mean, log_variance)``; the distribution is
``Normal(center + mean, exp(log_variance / 2) * scale)`` per dimension (``Independent`` over the
action's dimensions), with ``center`` and ``scale`` the midpoint and half-width of the space. As
ALL's, the mean is shifted but not scaled, and samples are not clipped.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.distributions import Independent, Normal

from looprl.approximation import Approximation
from looprl.core import State
from looprl.nn import RLNetwork
from looprl.policies.distributions import ActionBounds

__all__ = ["GaussianPolicy", "GaussianPolicyNetwork", "model_outputs"]


def model_outputs(model: nn.Module, x: Any) -> torch.Tensor:
    """``model`` on a ``State``/``StateArray`` (``State.apply``: batch shape restored, zeroed
    where ``mask == 0``, as ALL's ``RLNetwork``) or on a tensor of observations."""
    return x.apply(model, "observation") if isinstance(x, State) else model(x)


class GaussianPolicyNetwork(RLNetwork):
    """Maps states (or observations) to ``Independent(Normal(...), 1)`` (module docstring).

    Args:
        model: maps observations to ``(batch, 2 * action_dim)`` outputs.
        space: the ``Box`` action space.
    """

    def __init__(self, model: nn.Module, space: Any):
        if not (hasattr(space, "low") and hasattr(space, "high")):
            raise TypeError(f"GaussianPolicy needs space=<a Box action space>, got "
                            f"{type(space).__name__}")
        super().__init__(model)
        self.bounds = ActionBounds(space.low, space.high)

    def forward(self, state: Any) -> Independent:
        outputs = model_outputs(self.model, state)
        center, scale, _, _ = self.bounds.on(outputs.device)
        action_dim = outputs.shape[-1] // 2
        means, log_variances = outputs[..., :action_dim], outputs[..., action_dim:]
        return Independent(Normal(means + center, (0.5 * log_variances).exp() * scale), 1)


class GaussianPolicy(Approximation):
    """A Gaussian stochastic policy (see the module docstring).

    Args:
        model: maps observations to ``(batch, 2 * action_dim)``: ``cat(mean, log_variance)``.
        optimizer: optimizer over ``model``'s parameters.
        space: the ``Box`` action space.
        name: log/checkpoint name.
        **kwargs: see ``Approximation``.
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 space: Any = None, name: str = "policy", **kwargs: Any):
        super().__init__(GaussianPolicyNetwork(model, space), optimizer, name=name, **kwargs)
