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
from torch.nn import functional as F
from torch.nn.modules import module as _module

from looprl.nn.features import dense_layers
from looprl.nn.layers import orthogonal_init

__all__ = ["MLP", "RLNetwork"]

# Layers ``MLP.forward`` applies as functions (the same arithmetic as their ``forward``; an
# in-place ``ReLU`` would overwrite the previous layer's output, which nothing else reads).
_FUNCTIONS = {nn.Tanh: torch.tanh, nn.ReLU: torch.relu, nn.Sigmoid: torch.sigmoid}


class MLP(nn.Sequential):
    """A multi-layer perceptron with orthogonal weights (gain ``sqrt(2)``, the output layer's
    ``output_gain``) and zero biases, as in SB3/CleanRL.

    Args:
        in_dim: size of the input features.
        out_dim: size of the output.
        hidden: sizes of the hidden layers (empty for a single linear layer).
        activation: class of the activation placed after each hidden layer.
        output_gain: gain of the output layer (``None``: 1; e.g. ``0.01`` for policy logits).

    Example:
        >>> model = MLP(4, 2, hidden=(64, 64), output_gain=0.01)
        >>> model(torch.zeros(8, 4)).shape
        torch.Size([8, 2])

    ``forward`` applies the ``Linear`` layers as ``F.linear(x, weight, bias)`` and the ``Tanh``,
    ``ReLU`` and ``Sigmoid`` layers as their functions, not through ``nn.Module.__call__``:
    the same arithmetic without the per-layer call cost, which is a third of a small
    network's forward pass (policies act on a few rows at a time). Any other layer, and
    every layer while a module hook is registered on it or globally, is called as usual.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        hidden: Sequence[int] = (64, 64),
        activation: type[nn.Module] = nn.Tanh,
        output_gain: float | None = None,
    ):
        dense, last = dense_layers(in_dim, hidden, activation)
        gain = 1.0 if output_gain is None else output_gain
        super().__init__(*dense, orthogonal_init(nn.Linear(last, out_dim), gain))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _global_hooks():
            return super().forward(x)
        # (the hooks and parameters are read from the layers' dicts: a helper call and
        # Module.__getattr__ per layer cost a fifth of a small network's forward pass)
        for layer in self._modules.values():
            if (layer._forward_hooks or layer._forward_pre_hooks or layer._backward_hooks
                    or layer._backward_pre_hooks):  # hooks run only through __call__
                x = layer(x)
                continue
            kind = type(layer)
            if kind is nn.Linear:
                parameters = layer._parameters
                x = F.linear(x, parameters["weight"], parameters["bias"])
            elif kind in _FUNCTIONS:
                x = _FUNCTIONS[kind](x)
            else:
                x = layer(x)
        return x


def _global_hooks() -> bool:
    """Whether a hook is registered for every module (``nn.modules.module.register_module_*``)."""
    return bool(_module._global_forward_hooks or _module._global_forward_pre_hooks
                or _module._global_backward_hooks or _module._global_backward_pre_hooks)


class RLNetwork(nn.Module):
    """Calls ``model`` (observations to outputs) on a ``State``/``StateArray``: its output
    with the state's batch shape, zeroed where ``state.mask == 0`` (``State.apply``).

    Args:
        model: maps a batch of observations to outputs.
        _: ignored (``all.nn.RLNetwork(model, _=None)``'s second argument, a shape).
    """

    def __init__(self, model: nn.Module, _: Any = None):
        super().__init__()
        self.model = model

    @property
    def device(self) -> torch.device:
        """The device of the model's first parameter or buffer (the CPU when it has none)."""
        for tensor in (*self.model.parameters(), *self.model.buffers()):
            return tensor.device
        return torch.device("cpu")

    def forward(self, state: Any) -> torch.Tensor:
        return state.apply(self.model, "observation")
