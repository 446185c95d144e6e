"""Small building blocks for models: ``orthogonal_init`` (as in SB3 and CleanRL) and the
``Flatten``, ``Linear0``, ``Dueling`` (with its ``Aggregation``), ``Scale``, ``Float`` and
``TanhActionBound`` layers (the names and signatures of ``all.nn``)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

__all__ = ["Aggregation", "Dueling", "Flatten", "Float", "Linear0", "Scale", "TanhActionBound",
           "orthogonal_init"]

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


class Aggregation(nn.Module):
    """The dueling combination ``value + advantages - mean(advantages)`` over the last
    dimension (the actions), Wang et al., 2016, https://arxiv.org/abs/1511.06581."""

    def forward(self, value: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
        return value + advantages - advantages.mean(dim=-1, keepdim=True)


class Dueling(nn.Module):
    """Dueling head (Wang et al., 2016): ``Q(s, a) = V(s) + A(s, a) - mean_a A(s, a)`` of
    ``value_model``'s ``(..., 1)`` values and ``advantage_model``'s one advantage per action."""

    def __init__(self, value_model: nn.Module, advantage_model: nn.Module):
        super().__init__()
        self.value_model = value_model
        self.advantage_model = advantage_model
        self.aggregation = Aggregation()

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.aggregation(self.value_model(features), self.advantage_model(features))


class Scale(nn.Module):
    """Multiplies its input by the constant ``scale``."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


class Float(nn.Module):
    """Casts its input to ``float32`` (e.g. ``uint8`` frames before a convolution)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.float()


class TanhActionBound(nn.Module):
    """``tanh(x) * (high - low) / 2 + (high + low) / 2``: outputs squashed into the bounds of
    ``action_space`` (a ``gymnasium.spaces.Box``, or anything with ``low`` and ``high``)."""

    def __init__(self, action_space: Any):
        super().__init__()
        if not (hasattr(action_space, "low") and hasattr(action_space, "high")):
            raise TypeError(f"TanhActionBound needs a Box action space (with low and high), "
                            f"got {type(action_space).__name__}")
        low = torch.as_tensor(action_space.low, dtype=torch.float32)
        high = torch.as_tensor(action_space.high, dtype=torch.float32)
        self.register_buffer("weight", (high - low) / 2)
        self.register_buffer("bias", (high + low) / 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * self.weight + self.bias
