"""What the hooks receive: the one form of observations and batches, made by the hub.

Whichever loop or runtime drives them, the hooks see torch tensors (the key table of
``looprl.meta.metrics`` lists each key's form):

* **observation rows** (``metrics['state']``, ``transition['state']`` and
  ``['next_state']``, ``metrics['batch'].obs``): one tensor ``[N, ...]``, the field ``obs`` of
  an SRL environment's observations (``NamedArray``), floating observations as ``float32``
  (``uint8`` frames stay ``uint8``);
* the **update batch** (``metrics['batch']``): a ``SampleBatch`` whose fields are tensors and
  whose ``obs`` holds the observation rows ``[T + 1, B, ...]``.

The conversions happen here once, so that no component branches on the form a loop, a
buffer or a runtime hands over (a ``NamedArray`` of NumPy arrays from Ray's actors, tensors
from a local replay). NumPy arrays become tensors without a copy where they can (a read-only
one, as Ray delivers them, is copied).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from looprl.core import SampleBatch
from looprl.core.namedarray import NamedArray, as_tensor, recursive_apply

__all__ = ["hook_batch", "hook_tensor", "main_field", "observation_rows"]


def main_field(obs: Any) -> Any:
    """The observation array the meta components see: the field ``obs`` of a
    ``NamedArray`` (an SRL environment's observations), else ``obs`` itself."""
    return obs["obs"] if isinstance(obs, NamedArray) else obs


def hook_tensor(value: Any) -> torch.Tensor:
    """``value`` (a tensor, a NumPy array, a number or a list) as a tensor: a NumPy array's
    view, a read-only one's copy; a tensor as it is."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        value = value.copy()
    return as_tensor(value, None)


def observation_rows(obs: Any) -> torch.Tensor:
    """Observation rows as the hooks see them: the field ``obs`` (``main_field``) as a
    tensor (``hook_tensor``), ``float64`` as ``float32``."""
    rows = hook_tensor(main_field(obs))
    return rows.float() if rows.dtype == torch.float64 else rows


def hook_batch(batch: SampleBatch) -> SampleBatch:
    """``batch`` as the update hooks see it (``metrics['batch']``): every field a tensor
    (``hook_tensor``; a ``NamedArray`` field one of tensors), ``obs`` the observation rows
    ``[T + 1, B, ...]`` (``observation_rows``). Its tensors are ``batch``'s own where no
    conversion was needed; ``batch`` itself is left as it was."""
    seen = recursive_apply(batch, hook_tensor)
    seen.obs = observation_rows(seen.obs)
    return seen
