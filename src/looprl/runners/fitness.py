"""Fitness shaping: turn raw returns (higher is better) into what an ES learns from.

============== ==========================================================================
name           shaped fitness of ``f`` (a vector of ``n`` returns)
============== ==========================================================================
``raw``        ``f`` unchanged
``centered_ranks`` each return's rank (0 for the lowest, ties in the order given) scaled
               to ``[-0.5, 0.5]``: ``rank / (n - 1) - 0.5`` (Salimans et al., 2017)
``z_score``    ``(f - mean(f)) / std(f)``; all zeros when every return is the same
============== ==========================================================================
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def raw(fitness: np.ndarray) -> np.ndarray:
    """The returns unchanged (as floats)."""
    return np.asarray(fitness, dtype=np.float64).copy()


def centered_ranks(fitness: np.ndarray) -> np.ndarray:
    """Ranks scaled to ``[-0.5, 0.5]``; robust to outliers and to the scale of returns."""
    fitness = np.asarray(fitness, dtype=np.float64)
    if fitness.size < 2:
        return np.zeros_like(fitness)
    ranks = np.empty(fitness.size, dtype=np.float64)
    ranks[np.argsort(fitness, kind="stable")] = np.arange(fitness.size)
    return ranks / (fitness.size - 1) - 0.5


def z_score(fitness: np.ndarray) -> np.ndarray:
    """Returns standardised to mean 0 and standard deviation 1."""
    fitness = np.asarray(fitness, dtype=np.float64)
    std = fitness.std()
    return np.zeros_like(fitness) if std == 0 else (fitness - fitness.mean()) / std


SHAPERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "raw": raw, "centered_ranks": centered_ranks, "z_score": z_score}


def fitness_shaper(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """The shaping function called ``name`` (see the module docstring)."""
    if name not in SHAPERS:
        raise ValueError(f"Unknown fitness shaping {name!r}; valid: {', '.join(SHAPERS)}")
    return SHAPERS[name]
