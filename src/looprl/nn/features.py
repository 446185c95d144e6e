"""Feature extractors by spec (Mighty's configs): a name of ``FEATURE_EXTRACTORS``, a dict
``{"type": name, **options}`` or a list of specs, chained. Each maps observations of
``input_shape`` (channels-first images, ``uint8`` scaled by 1/255) to ``(batch, out_features)``."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from looprl.core.suggest import check_choice
from looprl.nn.layers import ACTIVATIONS, activation_layer, dense_layers, orthogonal_init

__all__ = ["ACTIVATIONS", "FEATURE_EXTRACTORS", "ConvFeatures", "MLPFeatures", "NatureCNN",
           "NatureConv", "ResNetFeatures", "feature_extractor"]


class _Unbatched(nn.Module):

    input_dims: int
    scale_floats = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == self.input_dims:
            return self.forward(x.unsqueeze(0)).squeeze(0)
        if x.dtype == torch.uint8 or self.scale_floats:
            x = x.float() * (1.0 / 255.0)
        return self.layers(x.float())


class MLPFeatures(_Unbatched):
    """Flatten, then ``Linear`` + activation per hidden size."""

    def __init__(self, input_shape: Sequence[int], hidden: Sequence[int] = (64, 64),
                 activation: str = "relu"):
        super().__init__()
        self.input_dims = len(input_shape)
        dense, self.out_features = dense_layers(math.prod(input_shape), hidden, activation)
        self.layers = nn.Sequential(nn.Flatten(), *dense)


class ConvFeatures(_Unbatched):
    """Convolutions (``channels``/``kernels``/``strides``/``padding``), then flattened."""

    def __init__(self, input_shape: Sequence[int], channels: Sequence[int] = (32, 64, 64),
                 kernels: Sequence[int] = (8, 4, 3), strides: Sequence[int] = (4, 2, 1),
                 activation: str = "relu", padding: int = 0):
        super().__init__()
        _require_image(input_shape, "cnn")
        if not len(channels) == len(kernels) == len(strides):
            raise ValueError("cnn needs as many kernels and strides as channels, got "
                             f"{len(channels)}, {len(kernels)} and {len(strides)}")
        self.input_dims = 3
        layers: list[nn.Module] = []
        last = input_shape[0]
        for out, kernel, stride in zip(channels, kernels, strides, strict=True):
            layers += [orthogonal_init(nn.Conv2d(last, out, kernel, stride, padding)),
                       activation_layer(activation)]
            last = out
        self.layers = nn.Sequential(*layers, nn.Flatten())
        self.out_features = _probe(self.layers, input_shape, "cnn")


class _Residual(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.block = nn.Sequential(
            nn.ReLU(), orthogonal_init(nn.Conv2d(channels, channels, 3, padding=1)),
            nn.ReLU(), orthogonal_init(nn.Conv2d(channels, channels, 3, padding=1)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x)


class ResNetFeatures(_Unbatched):
    """The IMPALA CNN (Espeholt et al., 2018): per stage a convolution, max-pooling and
    ``blocks`` residual blocks; then a ``features``-unit ReLU layer."""

    def __init__(self, input_shape: Sequence[int], channels: Sequence[int] = (16, 32, 32),
                 blocks: int = 2, features: int = 256):
        super().__init__()
        _require_image(input_shape, "resnet")
        self.input_dims = 3
        layers: list[nn.Module] = []
        last = input_shape[0]
        for out in channels:
            layers += [orthogonal_init(nn.Conv2d(last, out, 3, padding=1)),
                       nn.MaxPool2d(3, stride=2, padding=1)]
            layers += [_Residual(out) for _ in range(blocks)]
            last = out
        conv = nn.Sequential(*layers, nn.ReLU(), nn.Flatten())
        flat = _probe(conv, input_shape, "resnet")
        self.layers = nn.Sequential(conv, orthogonal_init(nn.Linear(flat, features)), nn.ReLU())
        self.out_features = features


class NatureConv(ConvFeatures):
    """The Nature DQN convolutions, scaling float frames by 1/255 too."""

    scale_floats = True

    def __init__(self, frames: int = 4, screen_size: int = 84):
        super().__init__((frames, screen_size, screen_size))


class NatureCNN(nn.Sequential):
    """``NatureConv`` followed by a ``features``-unit ReLU layer (512 in the paper)."""

    def __init__(self, frames: int = 4, features: int = 512, screen_size: int = 84):
        conv = NatureConv(frames, screen_size)
        super().__init__(conv, orthogonal_init(nn.Linear(conv.out_features, features)), nn.ReLU())
        self.out_features = features


def _nature(input_shape: Sequence[int], features: int = 512) -> NatureCNN:
    _require_image(input_shape, "nature")
    if input_shape[1] != input_shape[2]:
        raise ValueError(f"nature needs square frames, got {tuple(input_shape)}")
    try:
        return NatureCNN(input_shape[0], features, input_shape[1])
    except ValueError:
        raise ValueError(f"The nature feature extractor does not fit inputs of shape "
                         f"{tuple(input_shape)}; it needs frames of at least 36x36") from None


#: ``factory(input_shape, **options)`` -> a module with ``out_features``, by name
FEATURE_EXTRACTORS: dict[str, Callable[..., nn.Module]] = {
    "mlp": MLPFeatures, "cnn": ConvFeatures, "nature": _nature, "resnet": ResNetFeatures,
}


def feature_extractor(spec: Any, input_shape: Sequence[int]) -> nn.Module:
    """The feature extractor ``spec`` describes for inputs of ``input_shape``."""
    input_shape = tuple(int(n) for n in input_shape)
    if isinstance(spec, list | tuple):
        if not spec:
            raise ValueError("An empty list is no feature extractor; name at least one")
        modules = []
        for part in spec:
            modules.append(feature_extractor(part, input_shape))
            input_shape = (modules[-1].out_features,)
        chain = nn.Sequential(*modules)
        chain.out_features = modules[-1].out_features
        return chain
    options = dict(spec) if isinstance(spec, dict) else {"type": spec}
    name = check_choice("feature extractor", options.pop("type", None), list(FEATURE_EXTRACTORS))
    factory = FEATURE_EXTRACTORS[name]
    valid = [p for p in inspect.signature(factory).parameters if p != "input_shape"]
    for option in options:
        if option not in valid:
            raise ValueError(f"Feature extractor {name!r} has no option {option!r}; "
                             f"options: {', '.join(valid)}")
    return factory(input_shape, **options)


def _require_image(input_shape: Sequence[int], name: str) -> None:
    if len(input_shape) != 3:
        flatten = (", which flattens them, or wrap the environment in gymnasium.wrappers."
                   "FlattenObservation") if len(input_shape) > 1 else ""
        raise ValueError(f"The {name} feature extractor needs channels-first images (C, H, W), "
                         f"got inputs of shape {tuple(input_shape)}; use 'mlp'{flatten}")
    if input_shape[2] in (1, 3, 4) and input_shape[0] > 4:  # (Gymnasium's frames: H, W, C)
        raise ValueError(f"The {name} feature extractor needs channels-first images (C, H, W), "
                         f"got {tuple(input_shape)}, channels last: move them first with "
                         "gymnasium.wrappers.TransformObservation(env, lambda x: "
                         "x.transpose(2, 0, 1), its channels-first Box)")


def _probe(layers: nn.Module, input_shape: Sequence[int], name: str) -> int:
    """The flat output size of ``layers``; ``ValueError`` if the input is too small."""
    try:
        with torch.no_grad():
            return int(layers(torch.zeros(1, *input_shape)).shape[1])
    except RuntimeError as error:
        raise ValueError(f"The {name} feature extractor does not fit inputs of shape "
                         f"{tuple(input_shape)} (too small for its kernels and strides): "
                         f"{str(error).splitlines()[0]}") from None
