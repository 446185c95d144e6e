"""Observations as looprl keeps them: ``as_observation`` makes an environment's output an
array of ``observation_dtype`` (``float32``, or ``uint8`` for images) or says in one line why
it cannot."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["as_observation", "check_default_dtype", "not_numeric", "observation_dtype"]


def as_observation(obs: Any, source: str = "The environment", batch_dims: int = 0
                   ) -> np.ndarray:
    """An observation (led by ``batch_dims`` batch dimensions) of ``observation_dtype``."""
    if type(obs) is not np.ndarray:
        try:
            obs = np.asarray(obs)
        except (TypeError, ValueError):
            raise not_numeric(obs, source) from None
    if obs.dtype == observation_dtype(obs.dtype, obs.ndim - batch_dims):
        return obs
    if obs.dtype.kind not in "USOV":  # (strings, objects such as None or dicts, records)
        return obs.astype(np.float32)  # (uint8 images are kept: the rest is float32)
    raise not_numeric(obs, source)


def observation_dtype(dtype: Any, dims: int) -> np.dtype:
    """``float32``, or ``uint8`` for ``uint8`` images (``dims`` >= 2: image models scale them)."""
    return _UINT8 if dtype == _UINT8 and dims >= 2 else _FLOAT32


_UINT8, _FLOAT32 = np.dtype(np.uint8), np.dtype(np.float32)


def not_numeric(obs: Any, source: str) -> TypeError:
    """The one-line error of an observation that is no numeric array."""
    text = repr(obs.item() if isinstance(obs, np.ndarray) and obs.ndim == 0 else obs)
    text = text if len(text) <= 50 else text[:47] + "..."
    kind = f"dtype {obs.dtype}" if isinstance(obs, np.ndarray) else type(obs).__name__
    return TypeError(f"{source} returned an observation of {kind} ({text}): looprl expects "
                     "numbers (an array of one shape, as a Box, Discrete or MultiBinary space "
                     "gives): encode it as numbers in a gymnasium.ObservationWrapper (a dict: "
                     "gymnasium.wrappers.FlattenObservation)")


def check_default_dtype(what: str) -> None:
    """A one-line ``ValueError`` where torch's default dtype is not float32 (looprl's networks,
    buffers and observations are)."""
    dtype = torch.get_default_dtype()
    if dtype != torch.float32:
        raise ValueError(f"{what}: looprl builds and trains in float32, but torch's default "
                         f"dtype is {dtype} (torch.set_default_dtype): call "
                         "torch.set_default_dtype(torch.float32) before building or training "
                         "a looprl agent (and set yours back after)")
