"""Search benchmark: ES and Optuna repair a deliberately bad PPO configuration on CartPole-v1.

The classic-control PPO preset with its defaults except ``lr=1e-6`` (``BAD``; nothing else is
changed) cannot learn CartPole-v1: an ``OnlineRunner`` baseline trains it for
``--baseline-steps`` and evaluates it. Then two runners search the same space (``SPACE``:
the learning rate on a log scale from the bad value up to 1e-2, the clip range and the entropy
coefficient), each individual or trial a fresh agent (seed ``--seed``) trained for ``--steps``
steps and evaluated by its deterministic test agent (10 episodes):

- ``ESRunner``: CMA-ES (the ``cma`` package), started *at* the bad configuration (the mean's
  learning-rate coordinate sits on the lower bound), ``sigma`` 0.4 in the unit coordinates of
  the targets, cma's box constraints [0, 1] (so samples below the bound are reflected back
  instead of all collapsing onto it), centered-rank fitness shaping, ``--popsize`` individuals
  for ``--generations`` generations;
- ``OptunaRunner``: TPE (seeded) with median pruning from 3 evaluations per trial, the study in
  SQLite in a temporary directory, the bad configuration enqueued as its first trial,
  ``--trials`` trials.

The best hyperparameters of each must then solve the task: the best agent (ES: the kept agent
of the best individual; Optuna: the best trial retrained by the runner) is evaluated on
``--final-episodes`` (20) more deterministic episodes and passes at a mean >= 475. As a check
that the search did not just pick a lucky seed, the best configuration is also retrained from
scratch on the seeds ``--check-seeds`` (1 and 2; the search used seed 0) for the same budget and
evaluated the same way (reported, not part of pass/fail). Writes a Markdown table and a plot
(best-so-far evaluation return against wall time, and every evaluated configuration's return
against its learning rate) to ``benchmarks/results/`` and exits non-zero on a failure.
One process, ``torch.set_num_threads(1)``, CPU.

    python benchmarks/search_bad_ppo.py [--steps 30000] [--popsize 8] [--generations 6]
        [--trials 30] [--check-seeds 1 2]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
from harness import format_table  # noqa: E402
from looprl.presets.classic_control import ppo  # noqa: E402
from looprl.runners import ESRunner, OnlineRunner, OptunaRunner  # noqa: E402
from looprl.runners.es import Individual  # noqa: E402
from looprl.runners.trials import KeptAgent  # noqa: E402

ENV = "CartPole-v1"
BAR = 475.0
BAD = {"lr": 1e-6}
SPACE = {
    "lr": (1e-6, 1e-2, "log"),
    "clip": (0.05, 0.5),
    "entropy_coef": (0.0, 0.02),
}
SEARCH_EPISODES = 10


class ClockedES(ESRunner):
    """An ``ESRunner`` that notes each individual's values, return (``-inf``: it diverged)
    and wall time, as the runner records it."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.start = time.perf_counter()
        self.individuals: list[dict[str, Any]] = []

    def record(self, individual: Individual, fitness: float, agent: KeptAgent | None) -> float:
        self.individuals.append({"values": individual.values, "return": fitness,
                                 "time": time.perf_counter() - self.start})
        return super().record(individual, fitness, agent)


def config_text(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in values.items())


def retrain(values: dict[str, Any], steps: int, seed: int, episodes: int) -> dict[str, Any]:
    """Train a fresh agent with ``values`` on ``seed``; its ``episodes``-episode evaluation."""
    runner = OnlineRunner(ppo.hyperparameters(**values), ENV, num_steps=steps, seed=seed,
                          quiet=True, device="cpu", eval_episodes=episodes)
    train, evaluation = runner.run()
    runner.close()
    return {"seed": seed, "return": evaluation["mean_eval_reward"],
            "std": evaluation["std_eval_reward"], "seconds": train["wall_time"]}


def run_baseline(args: argparse.Namespace) -> dict[str, Any]:
    start = time.perf_counter()
    runner = OnlineRunner(ppo.hyperparameters(**BAD), ENV, num_steps=args.baseline_steps,
                          seed=args.seed, quiet=True, device="cpu",
                          eval_episodes=args.final_episodes)
    _, evaluation = runner.run()
    runner.close()
    return {"return": evaluation["mean_eval_reward"], "std": evaluation["std_eval_reward"],
            "seconds": time.perf_counter() - start}


def run_es(args: argparse.Namespace) -> dict[str, Any]:
    es = ClockedES(
        ppo.hyperparameters(**BAD), ENV, search_targets=SPACE, strategy="cma", sigma=0.4,
        popsize=args.popsize, iterations=args.generations, num_steps_per_iteration=args.steps,
        fitness_shaping="centered_ranks", strategy_options={"bounds": [0.0, 1.0]},
        seed=args.seed, device="cpu", eval_episodes=SEARCH_EPISODES,
    )
    results, _ = es.run()
    search_seconds = time.perf_counter() - es.start
    final = es.evaluate(args.final_episodes)  # the kept agent of the best individual
    seconds = time.perf_counter() - es.start
    es.close()
    return {
        "best": results["best"]["values"], "search_return": results["best"]["fitness"],
        "final": final["mean_eval_reward"], "final_std": final["std_eval_reward"],
        "seconds": seconds, "search_seconds": search_seconds,
        "points": [(p["time"], p["return"], p["values"]["lr"]) for p in es.individuals
                   if math.isfinite(p["return"])],
        "generations": [h["max_fitness"] for h in results["history"]],
        "budget": f"{args.generations} x {args.popsize} x {args.steps:,}",
        "evaluated": len(es.individuals),
    }


def run_optuna(args: argparse.Namespace) -> dict[str, Any]:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        search = OptunaRunner(
            ppo.hyperparameters(**BAD), ENV, search_space=SPACE, n_trials=args.trials,
            num_steps=args.steps, n_evaluations=3, storage=f"sqlite:///{tmp}/search.db",
            study_name="bad_ppo", sampler="tpe", pruner="median", seed=args.seed,
            device="cpu", eval_episodes=SEARCH_EPISODES,
        )
        defaults = ppo.default_hyperparameters  # the first trial: the bad configuration
        search.study().enqueue_trial({name: {**defaults, **BAD}[name] for name in SPACE})
        results, _ = search.run()  # ends with the best trial retrained (same seed, budget)
        final = search.evaluate(args.final_episodes)
        seconds = time.perf_counter() - start
        trials = search.study().trials
        search.close()
    t0 = min(t.datetime_start for t in trials if t.datetime_start is not None)
    points = []
    for t in trials:
        if t.datetime_complete is None:
            continue
        value = t.value if t.value is not None else (
            list(t.intermediate_values.values())[-1] if t.intermediate_values else -math.inf)
        points.append(((t.datetime_complete - t0).total_seconds(), value, t.params["lr"],
                       t.state.name))
    return {
        "best": results["best"]["values"], "search_return": results["best"]["value"],
        "final": final["mean_eval_reward"], "final_std": final["std_eval_reward"],
        "seconds": seconds, "search_seconds": max(p[0] for p in points),
        "points": points, "budget": f"{args.trials} x {args.steps:,} (pruned early)",
        "evaluated": len(trials),
        "pruned": sum(p[3] == "PRUNED" for p in points),
        "steps_trained": sum((t.user_attrs.get("step") or 0) for t in trials),
    }


def best_so_far(points: list[tuple]) -> tuple[list[float], list[float]]:
    times, best, current = [0.0], [-math.inf], -math.inf
    for t, value, *_ in sorted(points):
        current = max(current, value)
        times.append(t)
        best.append(current)
    return times, best


def plot(es: dict[str, Any], optuna: dict[str, Any], baseline: dict[str, Any],
         path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(13, 5))
    FigureCanvasAgg(figure)
    left, right = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
    for name, run, color in (("ES (CMA-ES)", es, "tab:blue"),
                             ("Optuna (TPE + median pruning)", optuna, "tab:orange")):
        times, best = best_so_far(run["points"])
        best = [b if math.isfinite(b) else 0.0 for b in best]
        left.step(times, best, where="post", color=color, label=f"{name}: best so far")
        left.scatter([p[0] for p in run["points"]], [p[1] for p in run["points"]], s=12,
                     color=color, alpha=0.4)
        right.scatter([p[2] for p in run["points"]], [p[1] for p in run["points"]], s=18,
                      color=color, alpha=0.6, label=name)
    for axes in (left, right):
        axes.axhline(BAR, color="gray", linestyle="--", linewidth=1)
        axes.axhline(baseline["return"], color="red", linestyle=":", linewidth=1,
                     label=f"bad config lr=1e-6 ({baseline['return']:.0f})")
        axes.grid(alpha=0.3)
        axes.set_ylim(0, 520)
    left.set(title="best-so-far evaluation return during the search",
             xlabel="wall time of the search (s)", ylabel="evaluation return (10 episodes)")
    right.set(title="every evaluated configuration (Optuna: pruned at its last evaluation)",
              xlabel="learning rate", ylabel="evaluation return (10 episodes)", xscale="log")
    left.legend(fontsize=8, loc="lower right")
    right.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def row(method: str, run: dict[str, Any], check: list[dict[str, Any]], command: str) -> list:
    checks = ", ".join(f"s{c['seed']}: {c['return']:.1f}" for c in check) or "-"
    return [method, run["budget"], f"{run['seconds']:.0f}", config_text(run["best"]),
            f"{run['search_return']:.1f}", f"{run['final']:.1f} ± {run['final_std']:.1f}",
            "PASS" if run["final"] >= BAR else "FAIL", checks, f"`{command}`"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=30_000,
                        help="training steps of each ES individual and Optuna trial")
    parser.add_argument("--baseline-steps", type=int, default=100_000)
    parser.add_argument("--popsize", type=int, default=8)
    parser.add_argument("--generations", type=int, default=6)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--final-episodes", type=int, default=20)
    parser.add_argument("--check-seeds", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--results", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--output", default="search_bad_ppo")
    args = parser.parse_args()
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python benchmarks/search_bad_ppo.py", *sys.argv[1:]])
    start = time.perf_counter()

    baseline = run_baseline(args)
    print(f"baseline lr=1e-6: {baseline['return']:.1f} in {baseline['seconds']:.0f} s",
          flush=True)
    runs = {"ES": run_es(args)}
    print(f"ES: {runs['ES']['best']} -> {runs['ES']['final']:.1f}", flush=True)
    runs["Optuna"] = run_optuna(args)
    print(f"Optuna: {runs['Optuna']['best']} -> {runs['Optuna']['final']:.1f}", flush=True)
    checks = {name: [retrain(run["best"], args.steps, seed, args.final_episodes)
                     for seed in args.check_seeds] for name, run in runs.items()}
    total = time.perf_counter() - start

    (results / f"{args.output}.json").write_text(json.dumps(
        {"baseline": baseline, "runs": runs, "checks": checks, "total_seconds": total},
        default=str))
    plot(runs["ES"], runs["Optuna"], baseline, results / f"{args.output}.png")
    header = ["method", "budget (trials x steps)", "wall s", "best hyperparameters",
              "search eval (10 ep.)", f"eval of the best ({args.final_episodes} ep.)",
              ">= 475", f"retrained on seeds {args.check_seeds}", "command"]
    base = ["OnlineRunner, bad config", f"1 x {args.baseline_steps:,}",
            f"{baseline['seconds']:.0f}", config_text(BAD), "-",
            f"{baseline['return']:.1f} ± {baseline['std']:.1f}",
            "FAIL (expected)" if baseline["return"] < BAR else "PASS (unexpected)", "-",
            f"`{command}`"]
    table = format_table([base, *(row(name, run, checks[name], command)
                                  for name, run in runs.items())], header)
    es, op = runs["ES"], runs["Optuna"]
    passed = all(run["final"] >= BAR for run in runs.values()) and baseline["return"] < BAR
    (results / f"{args.output}.md").write_text(
        f"# Searching a bad PPO configuration on {ENV}\n\n"
        f"The classic-control PPO preset with `lr=1e-6` (everything else default). Search "
        f"space of both runners: `{SPACE}`; every individual/trial is a fresh agent (seed "
        f"{args.seed}) trained for {args.steps:,} steps (the schedules anneal over them) and "
        f"scored by its deterministic test agent on {SEARCH_EPISODES} episodes. ES: CMA-ES "
        f"started at the bad configuration, sigma 0.4 in unit coordinates, cma bounds [0, 1], "
        f"centered ranks. Optuna: TPE (seeded), median pruning after each third of the budget, "
        f"SQLite storage, the bad configuration enqueued as trial 0. The best agent of each "
        f"(ES: kept from the search; Optuna: the best trial retrained by the runner) is "
        f"evaluated on {args.final_episodes} more deterministic episodes; it passes at a mean "
        f">= {BAR:.0f}. The last column retrains the best configuration from scratch on other "
        f"seeds (same budget, {args.final_episodes} episodes). Wall times include training "
        f"and evaluation; torch {torch.__version__}, 1 thread, one CPU core (shared machine). "
        f"Whole benchmark: {total:.0f} s.\n\n{table}\n\n"
        f"- ES evaluated {es['evaluated']} individuals (search {es['search_seconds']:.0f} s; "
        f"it runs all its generations, it has no early stop); "
        f"best return per generation: {', '.join(f'{g:.0f}' for g in es['generations'])}; "
        f"first individual >= {BAR:.0f} after {first_time(es['points'])}.\n"
        f"- Optuna ran {op['evaluated']} trials, {op['pruned']} pruned, "
        f"{op['steps_trained']:,} training steps in all (search {op['search_seconds']:.0f} s); "
        f"first trial >= {BAR:.0f} after {first_time(op['points'])}.\n\n"
        f"![search]({args.output}.png)\n"
    )
    print(f"\n{table}\n\nwritten to {results}/{args.output}.md ({total:.0f} s)")
    if not passed:
        sys.exit(1)


def first_time(points: list[tuple]) -> str:
    times = [p[0] for p in points if p[1] >= BAR]
    return f"{min(times):.0f} s" if times else "never"


if __name__ == "__main__":
    main()
