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
Each method runs on both runtimes (``--runtime local ray``): ``local`` trains the preset in
this process (``make_experiment``); ``ray`` runs the same preset, bonus included, on Ray
workers (``DistributedRun``: 1 actor stepping one env and running the bonus's step hooks, the
trainer worker training the DQN and the bonus's predictor, which reaches the actor with the
parameters); the criterion holds on each runtime. On Ray the extrinsic returns are the run's
``results.csv`` (the actors report the environment's rewards). Writes a Markdown table, a
JSON of the runs and a plot of the extrinsic return curves to ``benchmarks/results/`` (runs
of methods and runtimes not run this time are kept from the JSON) and exits non-zero on a
failure.

    python benchmarks/learning_sparse_reward.py [--size 16] [--budget 40000] [--seeds 0 1 2]
        [--methods rnd noveld none] [--runtime local ray]
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from distributed_throughput import start_local_ray  # noqa: E402
from harness import format_table, results_store  # noqa: E402
from looprl.core import Preset  # noqa: E402
from looprl.distributed import DistributedRun, RuntimeConfig  # noqa: E402
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


#: the Ray runtime: one actor stepping one env, as the local preset (its epsilon schedule
#: counts the actor's steps; the trainer keeps the local update ratio)
RAY = {"actors": 1, "envs_per_actor": 1, "groups": 1}


def train(method: str, runtime: str, size: int, budget: int, seed: int) -> dict:
    """One seeded run: its extrinsic returns per episode, first success, final greedy return."""
    start = time.perf_counter()
    env = GymEnvironment("looprl/DeepSea-v0", size=size, mapping_seed=seed)
    seed_everything(seed)
    builder = dqn.env(env).device("cpu").hyperparameters(**TUNED).meta(*bonus(method, seed))
    if runtime == "ray":
        returns, steps, greedy = train_on_ray(builder.build(), budget, seed)
    else:
        recorder = ExtrinsicReturns()
        experiment = make_experiment(builder.meta(recorder).build(), env, train_steps=budget,
                                     logdir="/tmp/looprl-sparse", quiet=True, verbose=False,
                                     seed=seed)
        experiment.train(frames=budget)
        greedy = float(experiment.test(episodes=1)[0])  # deterministic: one episode suffices
        experiment.close()
        returns, steps = recorder.returns, recorder.steps
    env.close()
    first = next((i for i, r in enumerate(returns) if r > 0.5), None)
    return {"method": method, "runtime": runtime, "seed": seed, "size": size,
            "budget": budget, "returns": returns, "steps": steps, "greedy": greedy,
            "first_episode": None if first is None else first + 1,
            "first_step": None if first is None else steps[first],
            "seconds": time.perf_counter() - start}


def train_on_ray(preset: Preset, budget: int, seed: int) -> tuple[list[float], list[int], float]:
    """The preset (its bonus included) on Ray: the training episodes' extrinsic returns and
    the frames they ended at (the run's ``results.csv``), and the final policy's greedy
    return."""
    from looprl.distributed.pipeline import evaluation_episodes

    with tempfile.TemporaryDirectory() as logdir:
        run = DistributedRun(preset, RuntimeConfig(**RAY), frames=budget, logdir=logdir,
                             seed=seed, name=f"sparse-{seed}", quiet=True)
        result = run.run()
        with open(Path(result.log_dir) / "results.csv", encoding="utf-8") as file:
            rows = list(csv.DictReader(file))
        policy = torch.load(Path(result.log_dir) / "policy.pt", map_location="cpu")
    greedy = evaluation_episodes(run.spec, policy, episodes=1, seed=seed)[0].ret
    return [float(r["return"]) for r in rows], [int(r["frame"]) for r in rows], greedy


def table_row(run: dict) -> list:
    """A row of the table, from a stored run (``stored``)."""
    reached = run["first_episode"] is not None
    return [run["method"], run["runtime"], run["seed"], "yes" if reached else "no",
            f"{run['first_episode']:,} / {run['first_step']:,}" if reached else "-",
            run["goal_episodes"], f"{run['last_100_mean']:.3f}", f"{run['greedy']:.3f}",
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


def curve(run: dict) -> tuple[np.ndarray, np.ndarray]:
    """A stored run's smoothed curve as ``(steps, returns)`` (NaN where no episode ended)."""
    x, y = zip(*run["curve"])
    return np.asarray(x), np.asarray([math.nan if v is None else v for v in y])


def plot(runs: list[dict], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 5))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    colors = {"rnd": "C0", "noveld": "C1", "none": "C7"}
    for method, runtime in dict.fromkeys((r["method"], r["runtime"]) for r in runs):
        curves = [curve(r) for r in runs if (r["method"], r["runtime"]) == (method, runtime)]
        style = "--" if runtime == "ray" else "-"
        for x, y in curves:
            axes.plot(x, y, color=colors[method], linestyle=style, linewidth=0.7, alpha=0.4)
        name = f"DQN + {method}" if method != "none" else "DQN"
        axes.plot(curves[0][0], np.nanmean([y for _, y in curves], axis=0),
                  color=colors[method], linestyle=style, linewidth=2.2,
                  label=f"{name} ({runtime})")
    size, budget = runs[0]["size"], runs[0]["budget"]
    axes.axhline(0.99, color="gray", linestyle="--", linewidth=1, label="optimal (0.99)")
    axes.set(title=f"DeepSea {size}x{size}: extrinsic return (thin: seeds, thick: mean; "
             "solid: local, dashed: Ray)",
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
    parser.add_argument("--runtime", nargs="+", default=["local", "ray"],
                        choices=["local", "ray"])
    parser.add_argument("--results", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(1)
    results, store, kept = results_store(args.results, "learning_sparse_reward.json", [])
    kept = [r for r in kept
            if "runtime" in r and (r["size"], r["budget"]) == (args.size, args.budget)]
    start = time.perf_counter()
    if "ray" in args.runtime:
        start_local_ray(num_cpus=max(4, os.cpu_count() or 1))  # shared by the Ray runs
    runs = []
    try:
        for method in args.methods:
            for runtime in args.runtime:
                for seed in args.seeds:
                    runs.append(stored(train(method, runtime, args.size, args.budget, seed)))
                    print(" | ".join(str(x) for x in table_row(runs[-1])), flush=True)
                    new = {(r["method"], r["runtime"], r["seed"]) for r in runs}
                    kept = [r for r in kept
                            if (r["method"], r["runtime"], r["seed"]) not in new]
                    store.write_text(json.dumps(order([*kept, *runs])))
    finally:
        if "ray" in args.runtime:
            import ray

            ray.shutdown()
    wall = time.perf_counter() - start
    passed = write(order([*kept, *runs]), args, wall, results)
    if not passed:
        sys.exit(1)


def order(runs: list[dict]) -> list[dict]:
    """Runs by method (rnd, noveld, none), runtime (local, ray) and seed."""
    methods, runtimes = ["rnd", "noveld", "none"], ["local", "ray"]
    return sorted(runs, key=lambda r: (methods.index(r["method"]),
                                       runtimes.index(r["runtime"]), r["seed"]))


def verdict(runs: list[dict]) -> tuple[str, bool]:
    """Per runtime: how many seeds of each method reached the goal, and whether the
    criterion holds there (a bonus >= 2/3 of its seeds, no bonus in none)."""
    lines, passed = [], True
    for runtime in dict.fromkeys(r["runtime"] for r in runs):
        counts = {}
        for method in dict.fromkeys(r["method"] for r in runs if r["runtime"] == runtime):
            mine = [r for r in runs if (r["method"], r["runtime"]) == (method, runtime)]
            counts[method] = (sum(r["first_episode"] is not None for r in mine), len(mine))
        ok = all(k >= 2 * n / 3 for m, (k, n) in counts.items() if m != "none") and \
            counts.get("none", (0, 0))[0] == 0
        passed &= ok
        described_counts = ", ".join(f"{m}: {k} of {n}" for m, (k, n) in counts.items())
        lines.append(f"* {runtime}: {described_counts}: **{'PASS' if ok else 'FAIL'}**")
    return "\n".join(lines), passed


def write(runs: list[dict], args: argparse.Namespace, wall: float, results: Path) -> bool:
    """The Markdown table and the curves of every stored run; whether the criterion holds."""
    header = ["method", "runtime", "seed", "reached goal", "first at episode / step",
              "goal episodes", "mean return, last 100 episodes", "greedy return", "wall s"]
    table = format_table([table_row(r) for r in runs], header)
    counts, passed = verdict(runs)
    plot(runs, results / "learning_sparse_reward.png")
    command = "python benchmarks/learning_sparse_reward.py " + " ".join(sys.argv[1:])
    load = os.getloadavg()
    (results / "learning_sparse_reward.md").write_text(
        f"# Sparse reward: DQN on DeepSea {args.size}x{args.size} with and without a bonus\n\n"
        f"DQN (classic-control preset; {described(TUNED)}) for {args.budget:,} env steps per "
        f"run; bonuses: {described(BONUS)}."
        f" A run reaches the goal when a training episode collects the treasure; the last "
        f"columns show whether it still goes there at the end of the budget. Runtime `local`: "
        f"the preset in this process; `ray`: the same preset, bonus included, on Ray workers "
        f"({described(RAY)}: the actor runs the bonus's step hooks, the trainer worker trains "
        f"the DQN and the bonus's predictor, published with the parameters). "
        f"torch {torch.__version__}, 1 thread per process, {os.cpu_count()} cores shared with "
        f"other sessions (load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the "
        f"end), so wall seconds vary.\n\n{table}\n\n"
        f"Reached the goal (criterion per runtime: RND and NovelD >= 2 of 3, no bonus 0 of 3):"
        f"\n\n{counts}\n\n![curves](learning_sparse_reward.png)\n\n"
        f"Last command: `{command.strip()}`; wall time {wall / 60:.1f} min.\n\n{SENSITIVITY}\n"
    )
    print(f"\n{table}\n\n{counts}\n({wall:.0f} s)")
    return passed


if __name__ == "__main__":
    main()
