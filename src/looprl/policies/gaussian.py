"""``GaussianPolicy``: ALL's Gaussian stochastic policy, an ``Approximation`` whose call returns
``Independent(Normal(center + mean, exp(log_variance / 2) * scale), 1)`` from the model's
``cat(mean, log_variance)`` (as ALL's: the mean shifted, not scaled; samples not clipped)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.distributions import Independent, Normal

from looprl.approximation import Approximation
from looprl.core import State
from looprl.nn import RLNetwork
from looprl.nn.layers import box_space
from looprl.policies.distributions import ActionBounds

__all__ = ["GaussianPolicy", "GaussianPolicyNetwork", "model_outputs"]


def model_outputs(model: nn.Module, x: Any) -> torch.Tensor:
    """``model`` on a ``State``/``StateArray`` (``State.apply``: zeroed where ``mask == 0``) or on a
    tensor of observations."""
    return x.apply(model, "observation") if isinstance(x, State) else model(x)


class GaussianPolicyNetwork(RLNetwork):
    """Maps states (or observations) to the distribution of the module docstring."""

    def __init__(self, model: nn.Module, space: Any):
        box_space(space, "GaussianPolicy")
        super().__init__(model)
        self.bounds = ActionBounds(space.low, space.high)

    def forward(self, state: Any) -> Independent:
        outputs = model_outputs(self.model, state)
        center, scale, _, _ = self.bounds.on(outputs.device)
        means, log_variances = self.bounds.check(outputs, 2).chunk(2, dim=-1)
        return Independent(Normal(means + center, (0.5 * log_variances).exp() * scale), 1)


class GaussianPolicy(Approximation):
    """A Gaussian stochastic policy (module docstring); ``**kwargs`` go to ``Approximation``."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 space: Any = None, name: str = "policy", **kwargs: Any):
        super().__init__(GaussianPolicyNetwork(model, space), optimizer, name=name, **kwargs)
