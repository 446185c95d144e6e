"""Shared benchmark harness: one evaluation procedure and one clock for every library.

Both libraries are evaluated by the same function (10 deterministic episodes of
CartPole-v1 in a native vector env), and evaluation time is excluded from training time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np


def evaluate(act: Callable[[np.ndarray], np.ndarray], env_id: str, episodes: int, seed: int):
    """Mean return of ``episodes`` episodes (one per vector-env copy) with policy ``act``."""
    env = gym.make_vec(env_id, num_envs=episodes, vectorization_mode="sync")
    obs, _ = env.reset(seed=seed)
    returns = np.zeros(episodes)
    finished = np.zeros(episodes, dtype=bool)
    while not finished.all():
        obs, reward, terminated, truncated, _ = env.step(act(obs))
        returns += reward * ~finished
        finished |= terminated | truncated
    env.close()
    return float(returns.mean())


@dataclass
class Clock:
    """Wall-clock training time that can be paused for evaluations."""

    elapsed: float = 0.0
    _start: float | None = None

    def start(self) -> None:
        self._start = time.perf_counter()

    def pause(self) -> None:
        if self._start is not None:
            self.elapsed += time.perf_counter() - self._start
            self._start = None


@dataclass
class Run:
    """Result of one training run: evaluations over time and the speed."""

    library: str
    algorithm: str
    seed: int
    steps: int = 0
    seconds: float = 0.0
    evals: list[tuple[int, float, float]] = field(default_factory=list)  # (step, time, return)

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds else float("nan")

    def time_to(self, threshold: float) -> float:
        """Training seconds until the first evaluation >= threshold (nan if never)."""
        return next((t for _, t, r in self.evals if r >= threshold), float("nan"))

    def steps_to(self, threshold: float) -> float:
        return next((s for s, _, r in self.evals if r >= threshold), float("nan"))

    @property
    def best(self) -> float:
        return max((r for _, _, r in self.evals), default=float("nan"))


def format_table(rows: list[list[str]], header: list[str]) -> str:
    """A Markdown table."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |" for r in rows]
    return "\n".join([line, sep, *body])
