"""Shared benchmark harness: one evaluation procedure and one clock for every library.

Both libraries are evaluated by the same function (10 deterministic episodes of
CartPole-v1 in a native vector env), and evaluation time is excluded from training time.
The looprl benchmarks share their learning curves (``learning_curve``), their results folder
and JSON store (``results_store``) and the ends of their reports (``write_results``,
``write_report``).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


Curve = list[tuple[int, float]]


def learning_curve(
    make_env: Callable[[], Any], build: Callable[[Any], Any], budget: int, evals: int, seed: int,
    after: Callable[[Curve], bool | None] = lambda curve: None,
) -> tuple[Curve, float]:
    """``(frame, mean evaluation return)`` pairs of one seeded looprl run, and its wall seconds:
    10 test episodes before training and every ``budget // evals`` env steps of it.

    ``build(env)`` makes the preset after the seeding, so that its initial weights are seeded
    too; ``after(curve)``, called after each evaluation, ends the run when it returns True.
    """
    from looprl.experiments import make_experiment
    from looprl.experiments.experiment import seed_everything

    start = time.perf_counter()
    env = make_env()
    seed_everything(seed)
    experiment = make_experiment(
        build(env), env, train_steps=budget, logdir="/tmp/looprl-learning", quiet=True,
        verbose=False, seed=seed,
    )
    curve = [(0, float(np.mean(experiment.test(episodes=10))))]
    every = max(budget // evals, 1)
    for target in range(every, budget + 1, every):
        experiment.train(frames=target)
        curve.append((experiment.frame, float(np.mean(experiment.test(episodes=10)))))
        if after(curve):
            break
    experiment.close()
    return curve, time.perf_counter() - start


def results_store(folder: str, name: str, empty: Any) -> tuple[Path, Path, Any]:
    """The results folder (made if missing), its JSON file ``name`` and what that file holds
    (``empty`` before the first run)."""
    results = Path(folder)
    results.mkdir(parents=True, exist_ok=True)
    store = results / name
    return results, store, json.loads(store.read_text()) if store.exists() else empty


def write_results(results: Path, output: str, intro: str, rows: list[list], header: list[str],
                  notes: str = "") -> None:
    """Prints and writes ``<output>.md``: ``intro``, the table of ``rows``, how many of them
    passed (have a ``"PASS"`` column), the plot ``<output>.png`` and ``notes``; exits 1 unless
    every row passed."""
    table = format_table(rows, header)
    passed = sum("PASS" in row for row in rows)
    (results / f"{output}.md").write_text(
        f"{intro}\n\n{table}\n\n{passed} of {len(rows)} runs pass.\n\n![curves]({output}.png)\n"
        + (f"\n{notes}\n" if notes else "")
    )
    print(f"\n{table}\n\n{passed} of {len(rows)} pass; written to {results}/{output}.md")
    if passed < len(rows):
        sys.exit(1)


def machine(threads: int) -> str:
    """This machine, its cores and torch: the first words of a report."""
    import torch

    return (f"{platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}, "
            f"{threads} torch thread(s)")


def write_report(path: Path, title: str, lines: list[str], table: str) -> None:
    """Prints and writes the Markdown report ``path``: ``# title``, ``lines``, the table."""
    text = "\n".join([f"# {title}", "", *lines, "", table, ""])
    print(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
