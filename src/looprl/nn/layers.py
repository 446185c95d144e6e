"""Small building blocks (the names and signatures of ``all.nn``): ``orthogonal_init`` (as in
SB3 and CleanRL); the ``Flatten``, ``Linear0``, ``Dueling`` (with its ``Aggregation``),
``Scale``, ``Float`` and ``TanhActionBound`` layers; the ``MLP`` of the classic-control presets
and ``RLNetwork`` (a model called on a ``State``); the weighted losses and ``td_loss``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from looprl.core.suggest import check_choice

__all__ = ["ACTIVATIONS", "MLP", "Aggregation", "Dueling", "Flatten", "Float", "Linear0",
           "RLNetwork", "Scale", "TanhActionBound", "dense_layers", "orthogonal_init", "td_loss",
           "weighted_mse_loss", "weighted_smooth_l1_loss"]

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


ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU, "silu": nn.SiLU,
    "leaky_relu": nn.LeakyReLU,
}


def activation_layer(activation: str | Callable[[], nn.Module]) -> nn.Module:
    """A new activation layer: by name (``ValueError`` naming the valid ones otherwise), or
    from a class or factory."""
    if callable(activation):
        return activation()
    return ACTIVATIONS[check_choice("activation", activation, list(ACTIVATIONS))]()


def dense_layers(n_in: int, sizes: Sequence[int], activation: str | Callable[[], nn.Module]
                 ) -> tuple[nn.Sequential, int]:
    """``Linear`` + activation (see ``activation_layer``) per size of ``sizes`` on ``n_in`` inputs
    (orthogonal weights, gain ``sqrt(2)``), and the size of its output."""
    layers: list[nn.Module] = []
    for size in sizes:
        layers += [orthogonal_init(nn.Linear(n_in, size)), activation_layer(activation)]
        n_in = size
    return nn.Sequential(*layers), n_in


class MLP(nn.Sequential):
    """A multi-layer perceptron with orthogonal weights (gain ``sqrt(2)``, the output layer's
    ``output_gain``) and zero biases, as in SB3/CleanRL.

    Args:
        in_dim: size of the input features.
        out_dim: size of the output.
        hidden: sizes of the hidden layers (empty for a single linear layer).
        activation: class of the activation placed after each hidden layer.
        output_gain: gain of the output layer (``None``: 1; e.g. ``0.01`` for policy logits).
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


def _reduce(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    return loss.mean() if reduction == "mean" else loss.sum()


def weighted_mse_loss(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor,
                      reduction: str = "mean") -> torch.Tensor:
    """``weight * (target - input)^2``, averaged (``"mean"``) or summed (``"sum"``)."""
    return _reduce(weight * F.mse_loss(input, target, reduction="none"), reduction)


def weighted_smooth_l1_loss(input: torch.Tensor, target: torch.Tensor, weight: torch.Tensor,
                            reduction: str = "mean") -> torch.Tensor:
    """``weight`` times the Huber loss (``beta = 1``) of ``input`` against ``target``,
    averaged (``"mean"``) or summed (``"sum"``)."""
    return _reduce(weight * F.smooth_l1_loss(input, target, reduction="none"), reduction)


def td_loss(loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
            ) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``loss(estimates, targets)`` turned into a loss of ``(estimates, td_errors)``: the target
    is ``td_errors + estimates.detach()``."""

    def _loss(estimates: torch.Tensor, errors: torch.Tensor) -> torch.Tensor:
        return loss(estimates, errors + estimates.detach())

    return _loss
