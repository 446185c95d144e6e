"""Learning benchmark: on DeepSea, DQN finds the treasure with RND or NovelD, not without.

DeepSea (bsuite, Osband et al., 2019, https://arxiv.org/abs/1908.03568;
``looprl.environments.DeepSea``) is an ``N x N`` grid where the only reward, ``+1``, lies at
the end of the one path that goes right ``N`` times in a row; every right move costs
``0.01 / N`` and which action means 'right' is drawn per cell (here from the run's seed).
Random actions find the treasure once in ``2**N`` episodes, and a greedy agent soon learns to
go left, where nothing costs.

The classic-control DQN preset (with ``TUNED`` hyperparameters, the same for every method)
trains for ``--budget`` env steps with an RND bonus, a NovelD bonus, or none, ``--seeds`` each.
A run *reaches the goal* when a training episode collects the treasure (extrinsic return
> 0.5). The benchmark passes when RND and NovelD each reach it in at least 2 of 3 seeds and
DQN without a bonus in none. Extrinsic returns are read from ``metrics['episode_returns']``,
which holds the environment's rewards (the bonuses change only what the agent learns from).
Writes a Markdown table, a JSON of the runs and a plot of the extrinsic return curves to
``benchmarks/results/`` and exits non-zero on a failure.

    python benchmarks/learning_sparse_reward.py [--size 16] [--budget 40000] [--seeds 0 1 2]
        [--methods rnd noveld none]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from harness import format_table  # noqa: E402
from looprl.environments import GymEnvironment  # noqa: E402
from looprl.experiments import make_experiment  # noqa: E402
from looprl.experiments.experiment import seed_everything  # noqa: E402
from looprl.meta import RND, MetaComponent, NovelD  # noqa: E402
from looprl.presets.classic_control.dqn import dqn  # noqa: E402

TUNED = {  # an update every 4 steps, a short epsilon-greedy phase, a small network
    "lr": 1e-3, "minibatch_size": 64, "update_frequency": 4, "gradient_steps": 1,
    "target_update_frequency": 100, "replay_start_size": 500, "replay_buffer_size": 10_000,
    "initial_exploration": 1.0, "final_exploration": 0.05, "final_exploration_step": 2000,
    "hidden": 64,
}
BONUS = {"internal_reward_weight": 0.3, "normalize": True, "feature_dim": 64, "hidden": (64,),
         "lr": 1e-3}

SENSITIVITY = """The margin is small. Two neighbouring settings, run once each (same seeds):

* replay_buffer_size=40,000 (nothing forgotten within the budget): RND 3 of 3, NovelD 2 of 3,
  but DQN without a bonus also finds the treasure in seed 1 (at step 14,752) and keeps it (greedy
  return 0.99): criterion FAIL. DQN's own exploration (the max over the untrained values of a
  randomly initialized network, one input per cell) sometimes suffices at this size.
* --size 20 --budget 50000, replay_buffer_size=100,000 (the preset's): RND 3 of 3, NovelD only
  1 of 3, no bonus 0 of 3: criterion FAIL.

With the 10,000-step buffer the bonus runs find the treasure but do not keep it: once the path
is familiar the bonus pulls the agent elsewhere and the treasure's transitions leave the buffer
(see the last columns and the curves)."""


def bonus(method: str, seed: int) -> list[MetaComponent]:
    """The meta components of ``method``: an RND or NovelD bonus, or nothing."""
    if method == "rnd":
        return [RND(seed=seed, **BONUS)]
    if method == "noveld":
        return [NovelD(seed=seed, **BONUS)]
    return []


class ExtrinsicReturns(MetaComponent):
    """Records the environment's return of every training episode and the step it ended."""

    def __init__(self) -> None:
        super().__init__()
        self.returns: list[float] = []
        self.steps: list[int] = []
        self.post_episode_methods.append(self.record)

    def record(self, metrics: dict) -> None:
        self.returns += metrics["episode_returns"]
        self.steps += [metrics["step"]] * len(metrics["episode_returns"])


def train(method: str, size: int, budget: int, seed: int) -> dict:
    """One seeded run: its extrinsic returns per episode, first success, final greedy return."""
    start = time.perf_counter()
    env = GymEnvironment("looprl/DeepSea-v0", size=size, mapping_seed=seed)
    seed_everything(seed)
    returns = ExtrinsicReturns()
    builder = dqn.env(env).device("cpu").hyperparameters(**TUNED)
    preset = builder.meta(*bonus(method, seed), returns).build()
    experiment = make_experiment(preset, env, train_steps=budget, logdir="/tmp/looprl-sparse",
                                 quiet=True, verbose=False, seed=seed)
    experiment.train(frames=budget)
    greedy = float(experiment.test(episodes=1)[0])  # deterministic: one episode suffices
    experiment.close()
    first = next((i for i, r in enumerate(returns.returns) if r > 0.5), None)
    return {"method": method, "seed": seed, "size": size, "budget": budget,
            "returns": returns.returns, "steps": returns.steps, "greedy": greedy,
            "first_episode": None if first is None else first + 1,
            "first_step": None if first is None else returns.steps[first],
            "seconds": time.perf_counter() - start}


def table_row(run: dict) -> list:
    reached = run["first_episode"] is not None
    last = run["returns"][-100:]
    return [run["method"], run["seed"], "yes" if reached else "no",
            f"{run['first_episode']:,} / {run['first_step']:,}" if reached else "-",
            sum(r > 0.5 for r in run["returns"]), f"{np.mean(last):.3f}", f"{run['greedy']:.3f}",
            f"{run['seconds']:.0f}"]


def described(settings: dict) -> str:
    return ", ".join(f"{key}={value}" for key, value in settings.items())


def smoothed(run: dict, points: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Mean extrinsic return over ``points`` equal spans of env steps (NaN where none)."""
    edges = np.linspace(0, run["budget"], points + 1)
    index = np.digitize(run["steps"], edges[1:-1])
    returns = np.asarray(run["returns"])
    means = [returns[index == i].mean() if (index == i).any() else math.nan
             for i in range(points)]
    return edges[1:], np.asarray(means)


def stored(run: dict) -> dict:
    """``run`` for the JSON file: its smoothed curve instead of every episode's return."""
    x, y = smoothed(run)
    summary = {k: v for k, v in run.items() if k not in ("returns", "steps")}
    return {**summary, "goal_episodes": sum(r > 0.5 for r in run["returns"]),
            "last_100_mean": float(np.mean(run["returns"][-100:])),
            "curve": [[int(a), None if math.isnan(b) else round(float(b), 4)]
                      for a, b in zip(x, y)]}


def plot(runs: list[dict], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 5))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for color, method in zip(["C0", "C1", "C7"], dict.fromkeys(r["method"] for r in runs)):
        curves = [smoothed(r) for r in runs if r["method"] == method]
        for x, y in curves:
            axes.plot(x, y, color=color, linewidth=0.7, alpha=0.5)
        axes.plot(curves[0][0], np.nanmean([y for _, y in curves], axis=0), color=color,
                  linewidth=2.2, label=f"DQN + {method}" if method != "none" else "DQN")
    size, budget = runs[0]["size"], runs[0]["budget"]
    axes.axhline(0.99, color="gray", linestyle="--", linewidth=1, label="optimal (0.99)")
    axes.set(title=f"DeepSea {size}x{size}: extrinsic return (thin: seeds, thick: mean)",
             xlabel=f"env steps (budget {budget:,})",
             ylabel=f"mean training-episode return per {budget // 50:,} steps")
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--budget", type=int, default=40_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=["rnd", "noveld", "none"],
                        choices=["rnd", "noveld", "none"])
    parser.add_argument("--results", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    runs = []
    for method in args.methods:
        for seed in args.seeds:
            runs.append(train(method, args.size, args.budget, seed))
            print(" | ".join(str(x) for x in table_row(runs[-1])), flush=True)
    wall = time.perf_counter() - start
    reached = {m: sum(r["first_episode"] is not None for r in runs if r["method"] == m)
               for m in args.methods}
    n = len(args.seeds)
    passed = (reached.get("rnd", 2) >= 2 * n / 3 and reached.get("noveld", 2) >= 2 * n / 3
              and reached.get("none", 0) == 0)
    header = ["method", "seed", "reached goal", "first at episode / step", "goal episodes",
              "mean return, last 100 episodes", "greedy return", "wall s"]
    table = format_table([table_row(r) for r in runs], header)
    counts = ", ".join(f"{m}: {k} of {n}" for m, k in reached.items())
    (results / "learning_sparse_reward.json").write_text(json.dumps(list(map(stored, runs))))
    plot(runs, results / "learning_sparse_reward.png")
    command = "python benchmarks/learning_sparse_reward.py " + " ".join(sys.argv[1:])
    (results / "learning_sparse_reward.md").write_text(
        f"# Sparse reward: DQN on DeepSea {args.size}x{args.size} with and without a bonus\n\n"
        f"DQN (classic-control preset; {described(TUNED)}) for {args.budget:,} env steps per "
        f"run; bonuses: {described(BONUS)}."
        f" A run reaches the goal when a training episode collects the treasure; the last "
        f"columns show whether it still goes there at the end of the budget. "
        f"torch {torch.__version__}, 1 thread.\n\n{table}\n\n"
        f"Reached the goal: {counts}. Criterion (RND and NovelD >= 2 of 3, no bonus 0 of 3): "
        f"**{'PASS' if passed else 'FAIL'}**.\n\n![curves](learning_sparse_reward.png)\n\n"
        f"Command: `{command.strip()}`; wall time {wall / 60:.1f} min.\n\n{SENSITIVITY}\n"
    )
    print(f"\n{table}\n\n{counts}: {'PASS' if passed else 'FAIL'} ({wall:.0f} s)")
    if not passed:
        sys.exit(1)


if __name__ == "__main__":
    main()
