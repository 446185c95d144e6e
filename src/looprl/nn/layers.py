"""Small building blocks for models: ``orthogonal_init`` (as in SB3 and CleanRL) and the
``Flatten``, ``Linear0`` and ``Dueling`` layers."""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["Dueling", "Flatten", "Linear0", "orthogonal_init"]

#: The gain SB3 and CleanRL use for hidden layers followed by (Tanh/ReLU) activations.
HIDDEN_GAIN = math.sqrt(2.0)


def orthogonal_init(layer: nn.Module, gain: float = HIDDEN_GAIN, bias: float = 0.0) -> nn.Module:
    """``layer`` (with a ``weight`` and maybe a ``bias``, e.g. ``nn.Linear``), its weight
    initialized orthogonally with ``gain`` and its bias filled with ``bias``."""
    nn.init.orthogonal_(layer.weight, gain)
    if getattr(layer, "bias", None) is not None:
        nn.init.constant_(layer.bias, bias)
    return layer


class Flatten(nn.Module):
    """Flatten all dimensions but the first (the batch dimension)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], -1)


class Linear0(nn.Linear):
    """An ``nn.Linear`` whose weight and bias start at zero (an output that starts at 0)."""

    def reset_parameters(self) -> None:
        nn.init.zeros_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)


class Dueling(nn.Module):
    """Dueling head (Wang et al., 2016): ``Q(s, a) = V(s) + A(s, a) - mean_a A(s, a)`` of
    ``value_model``'s ``(..., 1)`` values and ``advantage_model``'s one advantage per action."""

    def __init__(self, value_model: nn.Module, advantage_model: nn.Module):
        super().__init__()
        self.value_model = value_model
        self.advantage_model = advantage_model

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        value = self.value_model(features)
        advantages = self.advantage_model(features)
        return value + advantages - advantages.mean(dim=-1, keepdim=True)
