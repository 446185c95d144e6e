"""The leaves of a ``NamedArray`` (NumPy arrays, torch tensors, other values): conversions
between the two libraries, copies, indices and their ``repr``."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

__all__ = ["as_numpy", "as_tensor", "convert_index", "copy_leaf", "leaf_repr"]


def convert_index(idx: Any, leaf: Any) -> Any:
    """``idx`` in the library of ``leaf``: NumPy indices for a tensor, tensors for an array."""
    if isinstance(leaf, torch.Tensor):
        if isinstance(idx, np.ndarray):
            return torch.from_numpy(idx)
    elif isinstance(idx, torch.Tensor):
        return idx.detach().cpu().numpy()
    if isinstance(idx, tuple):
        return tuple(convert_index(i, leaf) for i in idx)
    return idx


def as_tensor(value: Any, device: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``value`` (numpy, torch or a list) as a tensor on ``device``, copying only if needed."""
    if isinstance(value, torch.Tensor):
        return value.to(device, dtype)
    if isinstance(value, np.ndarray):
        if dtype is None and device in _CPU and value.flags.writeable:
            try:  # the same view as ``as_tensor``'s, for a third of its cost (every step)
                return torch.from_numpy(value)
            except (TypeError, ValueError):  # negative strides, or a dtype torch lacks
                pass
        if not value.flags.writeable or any(s < 0 for s in value.strides):
            value = value.copy()  # torch cannot view negative strides, nor a read-only array
            # (Ray's object store gives those: torch warned that writing to one is undefined)
    return torch.as_tensor(value, dtype=dtype, device=device)


_CPU = frozenset({None, "cpu", torch.device("cpu")})  # the devices ``from_numpy`` views on


def as_numpy(value: Any) -> Any:
    """A tensor as a NumPy array (a view on the CPU, else a copy); anything else as it is."""
    if isinstance(value, torch.Tensor):
        try:
            return value.numpy()  # one call on the CPU (this runs once per env step)
        except (TypeError, RuntimeError):  # not on the CPU, or requires grad
            if value.dtype == torch.bfloat16:
                raise TypeError("a torch.bfloat16 tensor has no NumPy dtype, and looprl's "
                                "buffers and collector store steps as NumPy arrays: give them "
                                "as float32 (or float16), e.g. cast in the environment") from None
            return value.detach().cpu().numpy()
    return value


def copy_leaf(value: Any) -> Any:
    """A copy of ``value`` (``clone`` of a tensor, ``copy`` of an array, else a deep copy)."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    return value.copy() if isinstance(value, np.ndarray) else copy.deepcopy(value)


def leaf_repr(value: Any) -> str:
    """A tensor or an array by its shape, dtype (and device); anything else by ``repr``."""
    if isinstance(value, torch.Tensor):
        return f"Tensor(shape={tuple(value.shape)}, dtype={value.dtype}, device={value.device})"
    if isinstance(value, np.ndarray):
        return f"ndarray(shape={value.shape}, dtype={value.dtype})"
    return repr(value)


def kind(value: Any) -> str:
    """``value``'s type with its package: ``numpy.ndarray``, ``torch.Tensor``, ``float``."""
    cls = type(value)
    package = cls.__module__.split(".")[0]
    return cls.__name__ if package == "builtins" else f"{package}.{cls.__name__}"
