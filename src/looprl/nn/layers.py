"""Small building blocks, with the names and signatures of ``all.nn``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from looprl.core.state import State
from looprl.core.suggest import a_type, check_choice, is_whole

__all__ = ["ACTIVATIONS", "MLP", "ActionBounds", "Aggregation", "Dueling", "Flatten", "Float",
           "Linear0", "NoisyFactorizedLinear", "RLNetwork", "Scale", "TanhActionBound",
           "box_space", "dense_layers", "orthogonal_init", "td_loss", "weighted_mse_loss",
           "weighted_smooth_l1_loss"]

#: The gain SB3 and CleanRL use for hidden layers.
HIDDEN_GAIN = math.sqrt(2.0)


def orthogonal_init(layer: nn.Module, gain: float = HIDDEN_GAIN, bias: float = 0.0) -> nn.Module:
    """``layer`` with an orthogonal weight (``gain``) and its bias filled with ``bias``."""
    nn.init.orthogonal_(layer.weight, gain)
    if getattr(layer, "bias", None) is not None:
        nn.init.constant_(layer.bias, bias)
    return layer


class Flatten(nn.Module):
    """Flatten all dimensions but the first (the batch dimension)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], -1)


class Linear0(nn.Linear):
    """An ``nn.Linear`` whose weight and bias start at zero."""

    def reset_parameters(self) -> None:
        nn.init.zeros_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)


class Aggregation(nn.Module):
    """Dueling's ``value + advantages - mean(advantages)`` (Wang et al., 2016)."""

    def forward(self, value: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
        return value + advantages - advantages.mean(dim=-1, keepdim=True)


class Dueling(nn.Module):
    """Dueling head: ``Aggregation`` of ``value_model`` and ``advantage_model``."""

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


def box_space(space: Any, owner: str) -> Any:
    """``space`` if it is a ``Box``, else a ``TypeError`` naming ``owner``."""
    if not (hasattr(space, "low") and hasattr(space, "high")):
        raise TypeError(f"{owner} needs a Box action space (with low and high), got "
                        f"{type(space).__name__}")
    return space


class ActionBounds:
    """The affine map ``to_env(x) = center + scale * x`` from ``[-1, 1]`` to a ``Box``'s bounds
    (unbounded dimensions unscaled); tensors are cached per device."""

    def __init__(self, low: Any, high: Any):
        low = torch.as_tensor(low, dtype=torch.float32).flatten()
        high = torch.as_tensor(high, dtype=torch.float32).flatten()
        finite = torch.isfinite(low) & torch.isfinite(high)
        self.low, self.high = low, high
        self.center = torch.where(finite, (high + low) / 2, torch.zeros_like(low))
        self.scale = torch.where(finite, (high - low) / 2, torch.ones_like(low))
        self.action_dim = int(low.numel())
        self._cache: dict[torch.device, tuple[torch.Tensor, ...]] = {}

    def on(self, device: torch.device) -> tuple[torch.Tensor, ...]:
        """``(center, scale, low, high)`` on ``device``."""
        tensors = self._cache.get(device)
        if tensors is None:
            tensors = tuple(t.to(device) for t in (self.center, self.scale, self.low, self.high))
            self._cache[device] = tensors
        return tensors

    def check(self, outputs: torch.Tensor, per_dim: int = 1) -> torch.Tensor:
        """``outputs`` if they give ``per_dim`` numbers per action dim, else ``ValueError``."""
        if outputs.shape[-1] != per_dim * self.action_dim:
            what = "" if per_dim == 1 else " (the means, then the log spreads)"
            raise ValueError(f"the policy model returned {outputs.shape[-1]} outputs per state "
                             f"for a {self.action_dim}-dimensional Box action space; it must "
                             f"return {per_dim * self.action_dim}{what}")
        return outputs

    def to_env(self, x: torch.Tensor) -> torch.Tensor:
        """Normalized actions -> actions in the space's bounds (for ``x`` in ``[-1, 1]``)."""
        center, scale, _, _ = self.on(x.device)
        return center + scale * x

    def to_unit(self, action: torch.Tensor) -> torch.Tensor:
        """Actions in the space's bounds -> normalized actions."""
        center, scale, _, _ = self.on(action.device)
        return (action - center) / scale

    def clip(self, action: torch.Tensor) -> torch.Tensor:
        """``action`` clamped to ``[low, high]``."""
        _, _, low, high = self.on(action.device)
        return torch.clamp(action, low, high)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_cache": {}}


class TanhActionBound(nn.Module):
    """``tanh`` outputs mapped onto ``action_space``'s bounds (buffers ``weight``, ``bias``)."""

    def __init__(self, action_space: Any):
        super().__init__()
        box_space(action_space, "TanhActionBound")
        bounds = ActionBounds(action_space.low, action_space.high)
        shape = np.shape(action_space.low)
        self.register_buffer("weight", bounds.scale.reshape(shape))
        self.register_buffer("bias", bounds.center.reshape(shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * self.weight + self.bias


ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU, "silu": nn.SiLU,
    "leaky_relu": nn.LeakyReLU,
}


def activation_layer(activation: str | Callable[[], nn.Module]) -> nn.Module:
    """A new activation layer, by name or from a class or factory."""
    if callable(activation):
        return activation()
    return ACTIVATIONS[check_choice("activation", activation, list(ACTIVATIONS))]()


def dense_layers(n_in: int, sizes: Sequence[int], activation: str | Callable[[], nn.Module]
                 ) -> tuple[nn.Sequential, int]:
    """``Linear`` + activation per size of ``sizes``, and the size of its output."""
    given = sizes
    sizes = [] if isinstance(sizes, str | dict) or not isinstance(sizes, Iterable) else list(sizes)
    if not sizes and given or not all(is_whole(size) and size >= 1 for size in sizes):
        raise ValueError(f"hidden sizes are a list of whole numbers >= 1, one per layer "
                         f"([64, 64]), got {given!r:.60}")
    layers: list[nn.Module] = []
    for size in sizes:
        layers += [orthogonal_init(nn.Linear(n_in, int(size))), activation_layer(activation)]
        n_in = int(size)
    return nn.Sequential(*layers), n_in


class MLP(nn.Sequential):
    """An MLP with orthogonal weights (gain ``sqrt(2)``, the output's ``output_gain``, ``None``: 1)
    and zero biases, as in SB3/CleanRL."""

    def __init__(self, in_dim: int, out_dim: int, hidden: Sequence[int] = (64, 64),
                 activation: type[nn.Module] = nn.Tanh, output_gain: float | None = None):
        dense, last = dense_layers(in_dim, hidden, activation)
        gain = 1.0 if output_gain is None else output_gain
        super().__init__(*dense, orthogonal_init(nn.Linear(last, out_dim), gain))


def checked_model(model: Any) -> nn.Module:
    """``model`` if it is a torch ``nn.Module``, else a one-line ``TypeError`` (it was
    "'str' object is not callable" at the first call)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"an approximation's model is a torch nn.Module of the observations "
                        f"(e.g. QNetwork(nn.Linear(4, 2), optimizer)), got {a_type(model)} "
                        f"{model!r:.40}")
    return model


class RLNetwork(nn.Module):
    """Calls ``model`` on a state's observations (``State.apply``: zero where terminated) or on
    observations in place of a state; ``_`` is ignored (ALL's shape argument)."""

    def __init__(self, model: nn.Module, _: Any = None):
        super().__init__()
        self.model = checked_model(model)

    @property
    def device(self) -> torch.device:
        """The device of the model's first parameter or buffer (else the CPU)."""
        for tensor in (*self.model.parameters(), *self.model.buffers()):
            return tensor.device
        return torch.device("cpu")

    def forward(self, state: Any) -> torch.Tensor:
        if isinstance(state, State):
            return state.apply(self.model, "observation")
        return self.model(state)


class NoisyFactorizedLinear(nn.Module):
    """A linear layer with factorized Gaussian noise (Fortunato et al., 2018), drawn at every
    training-mode pass. Sigmas start at ``sigma_init / sqrt(in)``, means uniform in ``+-1 /
    sqrt(in)``, or ``+-sqrt(init_scale / in)`` (ALL's ``init_scale``; 0: zeros)."""

    def __init__(self, in_features: int, out_features: int, sigma_init: float = 0.5,
                 init_scale: float | None = None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bound = (1.0 / math.sqrt(in_features) if init_scale is None
                 else math.sqrt(init_scale / in_features))
        sigma = sigma_init / math.sqrt(in_features)
        weight = torch.empty(out_features, in_features).uniform_(-bound, bound)
        self.weight_mu = nn.Parameter(weight)
        self.weight_sigma = nn.Parameter(torch.full((out_features, in_features), sigma))
        self.bias_mu = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.bias_sigma = nn.Parameter(torch.full((out_features,), sigma))

    @staticmethod
    def _scaled_noise(n: int, like: torch.Tensor) -> torch.Tensor:
        noise = torch.randn(n, device=like.device, dtype=like.dtype)
        return noise.sign() * noise.abs().sqrt()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = F.linear(x, self.weight_mu, self.bias_mu)
        if not self.training:
            return mean
        eps_in = self._scaled_noise(self.in_features, x)
        eps_out = self._scaled_noise(self.out_features, x)
        # (sigma_W (eps_out eps_in^T) x + sigma_b eps_out, without the n x m noise matrix)
        return mean + F.linear(x * eps_in, self.weight_sigma, self.bias_sigma) * eps_out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"


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
    """``weight`` times the Huber loss of ``input`` against ``target``, averaged or summed."""
    return _reduce(weight * F.smooth_l1_loss(input, target, reduction="none"), reduction)


def td_loss(loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
            ) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``loss(estimates, targets)`` as a loss of ``(estimates, td_errors)``."""

    def _loss(estimates: torch.Tensor, errors: torch.Tensor) -> torch.Tensor:
        return loss(estimates, errors + estimates.detach())

    return _loss
