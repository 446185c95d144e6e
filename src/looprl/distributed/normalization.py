"""The normalizers' statistics a Ray run evaluates with (its evaluation workers, its final
evaluation, ``looprl watch``), checkpoints and restarts its actors from: those of the training
actor whose normalizers counted the most steps (with one actor: its own). Importing this
module imports Ray."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import ray

from looprl.environments.wrappers import load_normalization, most_counted, normalizers_of

__all__ = ["normalize_as_training", "training_normalization"]


def training_normalization(actors: Sequence[Any], timeout: float) -> list[Any] | None:
    """Of the ``normalization()`` answers of the training ``actors`` (Ray handles, actor 0's
    first) within ``timeout`` seconds, the one that counted the most steps (``most_counted``;
    ``None``: no actor answered)."""
    refs = [actor.normalization.remote() for actor in actors]
    deadline, answers = time.monotonic() + timeout, []
    for ref in refs:
        try:
            answers.append(ray.get(ref, timeout=max(0.0, deadline - time.monotonic())))
        except ray.exceptions.RayError:  # (dead, restarting or silent: the others')
            continue
    return most_counted(answers)


def normalize_as_training(runner: Any, actors: Sequence[Any], timeout: float) -> bool:
    """Load ``training_normalization`` into the normalizers of ``runner``'s env copies (an
    evaluation worker's ``EnvRunner``), frozen, as a local run's evaluation has training's (no
    answer: they keep what they had; no normalizers: the ``actors`` are not asked); whether
    it loaded some."""
    statistics = training_normalization(actors, timeout) if normalizers_of(runner.envs) else None
    load_normalization(runner.envs, statistics, runner.env_name)
    return statistics is not None
