"""Learning regression: looprl's classic-control presets must solve CartPole-v1.

For each seed, PPO trains for 100,000 env steps and DQN for 50,000, evaluated every
``--eval-every`` steps by the greedy test agent (10 episodes). A run passes when an
evaluation reaches a mean return >= 475 within budget. Writes a table and a plot of the
evaluation curves to ``benchmarks/results/``.

    python benchmarks/learning_cartpole.py [--seeds 0 1 2] [--algos ppo dqn]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from harness import format_table  # noqa: E402
from looprl.environments import GymEnvironment  # noqa: E402
from looprl.experiments import make_experiment  # noqa: E402
from looprl.experiments.experiment import seed_everything  # noqa: E402
from looprl.presets.classic_control import dqn, ppo  # noqa: E402

ENV = "CartPole-v1"
SOLVED = 475.0
BUDGET = {"ppo": 100_000, "dqn": 50_000}
BUILDERS = {"ppo": ppo, "dqn": dqn}


def learning_curve(algo: str, seed: int, eval_every: int) -> list[tuple[int, float]]:
    """``(frame, mean evaluation return)`` pairs over one seeded run."""
    seed_everything(seed)  # before building, so that the initial weights are seeded too
    env = GymEnvironment(ENV)
    preset = BUILDERS[algo].env(env).device("cpu").build()
    experiment = make_experiment(
        preset, env, train_steps=BUDGET[algo], logdir="/tmp/looprl-learning", quiet=True,
        verbose=False, seed=seed,
    )
    curve = []
    for target in range(eval_every, BUDGET[algo] + 1, eval_every):
        experiment.train(frames=target)
        curve.append((experiment.frame, float(np.mean(experiment.test(episodes=10)))))
    experiment.close()
    return curve


def first_solved(curve: list[tuple[int, float]]) -> float:
    return next((frame for frame, ret in curve if ret >= SOLVED), math.nan)


def plot(curves: dict[tuple[str, int], list[tuple[int, float]]], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 4))
    FigureCanvasAgg(figure)
    algos = sorted({algo for algo, _ in curves})
    for i, algo in enumerate(algos):
        axes = figure.add_subplot(1, len(algos), i + 1)
        for (a, seed), curve in sorted(curves.items()):
            if a == algo:
                axes.plot(*zip(*curve), label=f"seed {seed}")
        axes.axhline(SOLVED, color="gray", linestyle="--", linewidth=1)
        axes.set(title=f"looprl {algo.upper()} on {ENV}", xlabel="env steps",
                 ylabel="evaluation return (10 episodes)")
        axes.legend()
    figure.tight_layout()
    figure.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--algos", nargs="+", default=["ppo", "dqn"], choices=list(BUDGET))
    parser.add_argument("--eval-every", type=int, default=2500)
    parser.add_argument("--results", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    curves, rows = {}, []
    for algo in args.algos:
        for seed in args.seeds:
            curve = curves[algo, seed] = learning_curve(algo, seed, args.eval_every)
            solved_at = first_solved(curve)
            rows.append([algo.upper(), seed, f"{BUDGET[algo]:,}",
                         "-" if math.isnan(solved_at) else f"{solved_at:,}",
                         f"{max(r for _, r in curve):.1f}", f"{curve[-1][1]:.1f}",
                         "PASS" if not math.isnan(solved_at) else "FAIL"])
            print(" ".join(str(x) for x in rows[-1]), flush=True)
    table = format_table(rows, ["algo", "seed", "budget", f"first eval >= {SOLVED:.0f} at",
                                "best eval", "final eval", "result"])
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    plot(curves, results / "learning_cartpole.png")
    (results / "learning_cartpole.md").write_text(
        f"# looprl learning on {ENV}\n\n{table}\n\n![curves](learning_cartpole.png)\n"
    )
    print(f"\n{table}\n\nwritten to {results}/learning_cartpole.md and .png")
    if any(row[-1] == "FAIL" for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
