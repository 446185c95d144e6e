"""Learning benchmark of the continuous-control presets on Pendulum-v1 and HalfCheetah-v5.

- DDPG, TD3 and SAC (preset defaults: 256x256 networks, one gradient step per env step)
  must reach a mean evaluation return >= -200 on Pendulum-v1 within 20,000 env steps.
- PPO and SAC must make clear progress on HalfCheetah-v5: the final evaluation must beat
  the evaluation of the untrained agent by ``PROGRESS`` (500). The budgets fit a 2-core CPU:
  SAC trains 50,000 steps with one gradient step every 2 env steps (``update_frequency=2``,
  25,000 updates); PPO trains 300,000 steps with the usual MuJoCo settings
  (``discount_factor=0.99``, ``lr=3e-4``) instead of the preset's Pendulum-tuned defaults.

Every run is evaluated by its deterministic test agent (10 episodes) before training and
then ``--evals`` times. PPO on HalfCheetah runs seeds 0, 1 and 2, the others seed 0
(``--seeds`` sets them for every run). Writes a Markdown table and a plot of the evaluation
curves to ``benchmarks/results/`` and exits non-zero on a failure.

    python benchmarks/learning_continuous.py [--runs sac-pendulum td3-pendulum]
        [--seeds 0 1] [--budget-scale 0.5]
"""

from __future__ import annotations

import argparse
import importlib
import logging
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402
from looprl.environments import GymEnvironment, MujocoEnvironment  # noqa: E402

SOLVED = -200.0  # Pendulum-v1
PROGRESS = 500.0  # HalfCheetah-v5: final evaluation - untrained evaluation


@dataclass
class Run:
    """One benchmark run: a preset on an env, its budget, overrides and pass criterion."""

    algo: str
    env_id: str
    budget: int
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)

    @property
    def name(self) -> str:
        return f"{self.algo}-{self.env_id.split('-')[0].lower()}"

    def make_env(self) -> Any:
        if self.env_id.startswith("HalfCheetah"):
            return MujocoEnvironment(self.env_id)
        return GymEnvironment(self.env_id)

    def passed(self, curve: list[tuple[int, float]]) -> bool:
        if self.env_id.startswith("Pendulum"):
            return max(r for _, r in curve) >= SOLVED
        return curve[-1][1] - curve[0][1] >= PROGRESS

    @property
    def criterion(self) -> str:
        if self.env_id.startswith("Pendulum"):
            return f"an eval >= {SOLVED:.0f}"
        return f"final - start >= {PROGRESS:.0f}"


# Cheapest first.
RUNS = {
    run.name: run
    for run in [
        Run("ppo", "HalfCheetah-v5", 300_000, {"discount_factor": 0.99, "lr": 3e-4}, (0, 1, 2)),
        Run("ddpg", "Pendulum-v1", 20_000),
        Run("td3", "Pendulum-v1", 20_000),
        Run("sac", "Pendulum-v1", 20_000),
        Run("sac", "HalfCheetah-v5", 50_000, {"update_frequency": 2}),
    ]
}


def learning_curve(
    run: Run, budget: int, evals: int, seed: int
) -> tuple[list[tuple[int, float]], float]:
    """``(frame, mean evaluation return)`` pairs of one seeded run, and its wall seconds."""
    builder = getattr(importlib.import_module("looprl.presets.continuous"), run.algo)

    def report(curve: list[tuple[int, float]]) -> None:
        print(f"  {run.name} seed {seed}: {curve[-1][0]:,} steps, eval {curve[-1][1]:.1f}",
              flush=True)

    return harness.learning_curve(
        run.make_env,
        lambda env: builder.env(env).device("cpu").hyperparameters(**run.hyperparameters).build(),
        budget, evals, seed, report,
    )


def plot(curves: dict[tuple[str, int], list[tuple[int, float]]], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    envs = list(dict.fromkeys(RUNS[name].env_id for name, _ in curves))
    figure = Figure(figsize=(6.5 * len(envs), 4.5))
    FigureCanvasAgg(figure)
    colors = {"ddpg": "tab:green", "td3": "tab:orange", "sac": "tab:blue", "ppo": "tab:red"}
    for i, env_id in enumerate(envs):
        axes = figure.add_subplot(1, len(envs), i + 1)
        for (name, seed), curve in curves.items():
            run = RUNS[name]
            if run.env_id == env_id:
                axes.plot(*zip(*curve), color=colors[run.algo], marker=".",
                          linestyle=("-", "--", ":")[seed % 3],
                          label=f"{run.algo.upper()} seed {seed}")
        if env_id.startswith("Pendulum"):
            axes.axhline(SOLVED, color="gray", linestyle="--", linewidth=1)
        axes.set(title=f"looprl on {env_id}", xlabel="env steps",
                 ylabel="evaluation return (10 episodes)")
        axes.grid(alpha=0.3)
        axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", nargs="+", default=list(RUNS), choices=list(RUNS))
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help="seeds of every run (default: each run's own, see RUNS)")
    parser.add_argument("--budget-scale", type=float, default=1.0)
    parser.add_argument("--evals", type=int, default=10, help="evaluations per run")
    parser.add_argument("--results", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--output", default="learning_continuous",
                        help="file name (without extension) of the table and the plot")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.getLogger("looprl.environments.mujoco").setLevel(logging.ERROR)  # deprecations
    header = ["algo", "env", "seed", "budget", "overrides", "start eval",
              "first eval >= -200 at", "best eval", "final eval", "criterion", "wall s",
              "result"]
    curves, rows = {}, []
    for name in args.runs:
        run = RUNS[name]
        budget = int(run.budget * args.budget_scale)
        for seed in args.seeds or run.seeds:
            curve, seconds = learning_curve(run, budget, args.evals, seed)
            curves[name, seed] = curve
            pendulum = run.env_id.startswith("Pendulum")
            reached = next((f for f, r in curve if pendulum and r >= SOLVED), math.nan)
            overrides = ", ".join(f"{k}={v}" for k, v in run.hyperparameters.items()) or "-"
            rows.append([run.algo.upper(), run.env_id, seed, f"{budget:,}", overrides,
                         f"{curve[0][1]:.1f}",
                         "-" if math.isnan(reached) else f"{reached:,}",
                         f"{max(r for _, r in curve):.1f}", f"{curve[-1][1]:.1f}",
                         run.criterion, f"{seconds:.0f}",
                         "PASS" if run.passed(curve) else "FAIL"])
            print(" | ".join(str(x) for x in rows[-1]), flush=True)
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    plot(curves, results / f"{args.output}.png")
    harness.write_results(
        results, args.output,
        f"# looprl continuous-control presets: learning benchmark\n\n"
        f"Preset defaults unless overridden; deterministic evaluation (10 episodes) before "
        f"training and {args.evals} times per run. Pendulum-v1 passes when an evaluation "
        f"reaches {SOLVED:.0f}; HalfCheetah-v5 when the final evaluation beats the untrained "
        f"one by {PROGRESS:.0f}. torch {torch.__version__}, 1 thread, budget scale "
        f"{args.budget_scale}.", rows, header,
    )


if __name__ == "__main__":
    main()
