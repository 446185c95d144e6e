"""Models: the ``MLP`` used by classic-control presets and the ``RLNetwork`` wrapper.

``RLNetwork`` lets a plain ``nn.Module`` that maps observations to outputs be called on a
``State``/``StateArray``: batch dimensions are flattened for the model, restored on the
output, and outputs are zeroed where the episode terminated (see ``State.apply``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from looprl.nn.layers import HIDDEN_GAIN, orthogonal_init

__all__ = ["MLP", "RLNetwork"]


class MLP(nn.Sequential):
    """A multi-layer perceptron with orthogonal initialization (as in SB3/CleanRL).

    Hidden layers get orthogonal weights with gain ``sqrt(2)``; the output layer gets
    orthogonal weights with gain ``output_gain`` (``1.0`` when ``None``); all biases are
    zero. Being an ``nn.Sequential``, it adds no Python overhead to a forward pass.

    Args:
        in_dim: size of the input features.
        out_dim: size of the output.
        hidden: sizes of the hidden layers (empty for a single linear layer).
        activation: class of the activation placed after each hidden layer.
        output_gain: gain of the output layer (e.g. ``0.01`` for policy logits,
            ``1.0`` for values).

    Example:
        >>> model = MLP(4, 2, hidden=(64, 64), output_gain=0.01)
        >>> model(torch.zeros(8, 4)).shape
        torch.Size([8, 2])
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        hidden: Sequence[int] = (64, 64),
        activation: type[nn.Module] = nn.Tanh,
        output_gain: float | None = None,
    ):
        layers: list[nn.Module] = []
        last = in_dim
        for size in hidden:
            layers += [orthogonal_init(nn.Linear(last, size), HIDDEN_GAIN), activation()]
            last = size
        gain = 1.0 if output_gain is None else output_gain
        layers.append(orthogonal_init(nn.Linear(last, out_dim), gain))
        super().__init__(*layers)
        self.in_dim = in_dim
        self.out_dim = out_dim


class RLNetwork(nn.Module):
    """Wraps a model of observations so it can be called on a ``State``/``StateArray``.

    ``forward(state)`` returns ``state.apply(self.model, 'observation')``: the model's
    output with the state's batch shape, zeroed where ``state.mask == 0``.

    Args:
        model: maps a batch of observations to a batch of outputs.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, state: Any) -> torch.Tensor:
        return state.apply(self.model, "observation")
