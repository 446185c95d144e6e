"""``FeatureNetwork``: a shared body; ``f(state)`` is ``state.update('observation', features)``,
so heads apply to it as to any state. Backpropagate the heads' losses, then ``f.step()``."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.core.state import State
from looprl.nn import RLNetwork

__all__ = ["FeatureModule", "FeatureNetwork"]


class FeatureModule(RLNetwork):
    """Applies ``model`` to the observations of a ``State``/``StateArray``."""

    def forward(self, state: Any) -> Any:
        if not isinstance(state, State):  # (observations: their features)
            return self.model(state)
        features = state.as_output(self.model(state.as_input("observation")))
        return state.update("observation", features)


class FeatureNetwork(Approximation):
    """Feature extractor shared by several heads; ``model`` maps observations to features."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "feature", **kwargs: Any):
        super().__init__(FeatureModule(model), optimizer, name=name, **kwargs)

    def reinforce(self, loss: torch.Tensor | None = None) -> FeatureNetwork:
        """Step on the gradients the heads left (after backpropagating ``loss``, if given)."""
        if loss is not None:
            return super().reinforce(loss)
        return self.step()
