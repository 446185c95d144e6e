"""Observation fields (``obs_dim``: ``{field: dim or shape}``) to features (seed 004)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from looprl.core.leaves import as_tensor
from looprl.core.namedarray import NamedArray
from looprl.nn.features import feature_extractor
from looprl.nn.layers import dense_layers

__all__ = ["ACTION_MASK", "Backbone", "ObservationEncoder", "field_shapes", "image_extractor",
           "legal_mask", "observation_fields", "observation_tensor", "single_field"]

#: The obs field that masks discrete actions (one 0/1 per action).
ACTION_MASK = "action_mask"

Shapes = dict[str, tuple[int, ...]]

_FIELDS = (NamedArray, dict)  # (a tuple: a faster isinstance than a union, every step)


def field_shapes(dims: Any, what: str = "obs_dim") -> Shapes:
    """``obs_dim``/``state_dim`` as ``{field: shape}`` (an int or a shape: ``obs``)."""
    if isinstance(dims, dict):
        if not dims:
            raise ValueError(f"{what} is an empty dict; name at least one observation field")
        return {str(k): _shape(v, f"{what}[{k!r}]") for k, v in dims.items()}
    return {"obs": _shape(dims, what)}


def _shape(dim: Any, what: str) -> tuple[int, ...]:
    shape = (dim,) if isinstance(dim, int | np.integer) else dim
    if not isinstance(shape, tuple | list) or not shape:
        raise TypeError(f"{what} must be an int or a shape tuple, got {dim!r}")
    if not all(isinstance(n, int | np.integer) and n > 0 for n in shape):
        raise ValueError(f"{what} must hold positive ints, got {dim!r}")
    return tuple(int(n) for n in shape)


def single_field(obs: Any, strict: bool = True) -> Any:
    """``obs``, or the only field of a ``NamedArray``/dict that is not ``None``; several fields:
    ``ValueError`` (``strict``), else ``obs`` as it is (for networks that read fields)."""
    if isinstance(obs, torch.Tensor) or not isinstance(obs, _FIELDS):
        return obs  # (a tensor: one check, every step)
    items = [value for value in obs.values() if value is not None]
    if len(items) == 1:
        return items[0]
    if not strict:
        return obs
    raise ValueError(
        f"this network reads one observation tensor, got fields {list(obs.keys())}: build "
        "the policy with obs_dim naming its fields (looprl.agents.actor_critic_policy)")


def observation_tensor(obs: Any, device: Any, strict: bool = True) -> Any:
    """``single_field(obs, strict)`` on ``device``: a tensor, or a ``NamedArray`` of fields."""
    if isinstance(obs, _FIELDS):
        obs = single_field(obs, strict)
        if isinstance(obs, _FIELDS):
            return (obs if isinstance(obs, NamedArray) else NamedArray(**obs)).to(device)
    return as_tensor(obs, device)


def legal_mask(mask: Any) -> torch.Tensor:
    """The legal actions of an action ``mask`` ``[..., A]`` as bool; a row that rules out every
    action (an agent whose episode is over) has all of them legal."""
    mask = (mask if isinstance(mask, torch.Tensor) else torch.as_tensor(mask)).bool()
    return mask >= mask.any(-1, keepdim=True)  # (2 ops: any row legal, else every action)


def observation_fields(obs: Any, shapes: Shapes, device: torch.device
                       ) -> tuple[dict[str, torch.Tensor], tuple[int, ...], torch.Tensor | None]:
    """The declared fields of ``obs`` flattened to ``[N, *shape]``, their leading shape and the
    ``legal_mask`` of its ``action_mask`` (if any); ``ValueError`` for missing fields or shapes."""
    if isinstance(obs, NamedArray | dict):
        items = dict(obs.items())
    else:
        items = {next(iter(shapes)) if len(shapes) == 1 else "obs": obs}
    missing = [k for k in shapes if items.get(k) is None]
    if missing:
        raise ValueError(
            f"observation has no field(s) {missing}; the policy reads {list(shapes)} "
            f"(obs_dim/state_dim), got {[k for k, v in items.items() if v is not None]}")
    fields, lead = {}, None
    for name, shape in shapes.items():
        x = as_tensor(items[name], device)
        trailing = tuple(x.shape[x.dim() - len(shape) :]) if x.dim() >= len(shape) else None
        if trailing != shape:
            raise ValueError(
                f"obs field {name!r} has shape {tuple(x.shape)}, expected [*batch, *{shape}] "
                "(from obs_dim/state_dim)")
        here = tuple(x.shape[: x.dim() - len(shape)])
        if lead is not None and here != lead:
            raise ValueError(f"obs field {name!r} has leading shape {here}, others {lead}")
        lead = here
        fields[name] = x.reshape(-1, *shape)
    mask = items.get(ACTION_MASK) if ACTION_MASK not in shapes else None
    if mask is not None:
        mask = legal_mask(as_tensor(mask, device).reshape(math.prod(lead), -1))
    return fields, lead, mask


def image_extractor(shape: tuple[int, ...]) -> nn.Module:
    """The Nature CNN for square images of at least 36x36, a small CNN for smaller ones."""
    if shape[1] == shape[2] and shape[1] >= 36:
        return feature_extractor("nature", shape)
    small = {"type": "cnn", "channels": (16, 32), "kernels": (3, 3), "strides": (1, 1)}
    return feature_extractor(small, shape)


class ObservationEncoder(nn.Module):
    """Encodes the fields of ``shapes`` into ``[N, out_features]``, images through a CNN each."""

    def __init__(self, shapes: Shapes):
        super().__init__()
        self.shapes = dict(shapes)
        self.images = nn.ModuleDict(
            {_key(k): image_extractor(s) for k, s in shapes.items() if len(s) == 3})
        self.out_features = sum(
            self.images[_key(k)].out_features if _key(k) in self.images else math.prod(s)
            for k, s in shapes.items())

    def forward(self, fields: dict[str, torch.Tensor]) -> torch.Tensor:
        parts = []
        for name in self.shapes:
            x = fields[name]
            key = _key(name)
            parts.append(self.images[key](x) if key in self.images else x.reshape(len(x), -1))
        return torch.cat([p.float() for p in parts], dim=-1)


def _key(name: str) -> str:
    return "field_" + name.replace(".", "_")


class Backbone(nn.Module):
    """Encoder, an MLP and a GRU (unless ``rnn_hidden_dim=0``)."""

    def __init__(self, shapes: Shapes, hidden_dim: int, num_layers: int, activation: str,
                 rnn_hidden_dim: int = 0, num_rnn_layers: int = 1):
        super().__init__()
        self.encoder = ObservationEncoder(shapes)
        self.mlp, last = dense_layers(self.encoder.out_features, [hidden_dim] * num_layers,
                                      activation)
        self.rnn = nn.GRU(last, rnn_hidden_dim, num_rnn_layers) if rnn_hidden_dim else None
        self.out_features = rnn_hidden_dim or last

    def features(self, fields: dict[str, torch.Tensor]) -> torch.Tensor:
        """``[N, F]`` features before the GRU."""
        return self.mlp(self.encoder(fields))

    def unroll(self, x: torch.Tensor, hx: torch.Tensor | None, reset: torch.Tensor | None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """The GRU over ``x`` ``[T, B, F]`` from ``hx`` ``[L, B, H]`` (``None``: zeros),
        zeroing column ``b``'s memory before row ``t`` where ``reset[t, b]``."""
        if hx is None:
            hx = x.new_zeros(self.rnn.num_layers, x.shape[1], self.rnn.hidden_size)
        if reset is None or not bool(reset.any()):
            return self.rnn(x, hx)
        keep = (~reset).to(x.dtype)
        starts = torch.nonzero(reset.any(dim=1)).flatten().tolist()
        edges = sorted({0, *starts, x.shape[0]})
        outs = []
        for start, end in zip(edges[:-1], edges[1:]):
            hx = hx * keep[start].view(1, -1, 1)
            out, hx = self.rnn(x[start:end], hx)
            outs.append(out)
        return torch.cat(outs), hx
