"""``FeatureNetwork``: a shared body whose output replaces the state's observation.

``f(state)`` returns ``state.update('observation', features)``, so heads (``QNetwork``,
``VNetwork``, policies) apply to its output as to any state. It is trained by its heads'
losses: backpropagate them, then ``f.step()`` applies the gradients left in the body, as in
the autonomous-learning-library's A2C::

    features = f(states)
    loss = value_loss + policy_loss          # both computed from `features`
    loss.backward()
    v.step(loss=value_loss); policy.step(loss=policy_loss); f.step()
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.nn import RLNetwork

__all__ = ["FeatureModule", "FeatureNetwork"]


class FeatureModule(RLNetwork):
    """Applies ``model`` to the observations of a ``State``/``StateArray``."""

    def forward(self, state: Any) -> Any:
        features = state.as_output(self.model(state.as_input("observation")))
        return state.update("observation", features)


class FeatureNetwork(Approximation):
    """Feature extractor shared by several heads (see the module docstring).

    Args:
        model: maps a batch of observations to a batch of features.
        optimizer, name, **kwargs: see ``Approximation``.
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "feature", **kwargs: Any):
        super().__init__(FeatureModule(model), optimizer, name=name, **kwargs)

    def reinforce(self, loss: torch.Tensor | None = None) -> FeatureNetwork:
        """Step on the gradients a downstream loss left in the body (after backpropagating
        ``loss``, when given); return ``self``."""
        if loss is not None:
            return super().reinforce(loss)
        return self.step()
