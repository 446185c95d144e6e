"""A generation of ES individuals, and a batch of Optuna trials, one after another against
at once on Ray.

``ESRunner`` with one generation of ``--popsize`` individuals, and ``OptunaRunner`` with
``--popsize`` trials (PPO on CartPole-v1, each a fresh agent with its own ``lr`` and ``clip``,
trained ``--steps`` steps, then 10 evaluation episodes; one torch thread), run with
``LocalTrials`` (what ``runtime=local`` does), then with ``RayTrials`` (``runtime=ray``) on a
local Ray instance of ``--cpus`` CPUs: first on fresh Ray workers (each imports torch and
looprl once), then again on the same, warm workers. The results must be the same; prints a
table of wall times, of the whole runner and of its trials alone (the time spent inside
``trials.map``: the generation, without the runner's own work before and after it), and
writes it to ``--output``, if given.

    python benchmarks/runners_on_ray.py [--steps 16000] [--popsize 4] [--cpus 2]
        [--runners es optuna] [--output benchmarks/results/runners_on_ray.md]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator

import torch

from looprl.distributed.trials import RayTrials
from looprl.presets.classic_control import ppo
from looprl.runners import ESRunner, OptunaRunner
from looprl.runners.trials import LocalTrials

SPACE = {"lr": (1e-4, 1e-2, "log"), "clip": (0.1, 0.3)}


class Timed:
    """``trials`` (``LocalTrials`` or ``RayTrials``) that add up the time spent inside their
    ``map`` (each item's ``next``: the runner's work between items is not counted)."""

    def __init__(self, trials: object):
        self.trials, self.seconds = trials, 0.0

    def __getattr__(self, name: str) -> object:
        return getattr(self.trials, name)

    def map(self, *args: object, **kwargs: object) -> Iterator[object]:
        items = iter(self.trials.map(*args, **kwargs))
        while True:
            start = time.perf_counter()
            try:
                item = next(items)
            except StopIteration:
                return
            finally:
                self.seconds += time.perf_counter() - start
            yield item


def generation(kind: str, trials: object, steps: int, popsize: int
               ) -> tuple[float, float, list[float]]:
    """Wall time of one ES generation or one batch of Optuna trials (the runner's
    construction and final evaluation included), of its trials alone, and each individual's
    or trial's score."""
    trials = Timed(trials)
    start = time.perf_counter()
    if kind == "es":
        runner = ESRunner(ppo.device("cpu"), "CartPole-v1", iterations=1, popsize=popsize,
                          num_steps_per_iteration=steps, strategy="openai", sigma=0.3, seed=0,
                          search_targets=SPACE, trials=trials)
        results, _ = runner.run()
        scores = results["history"][0]["fitness"]
    else:
        runner = OptunaRunner(ppo.device("cpu"), "CartPole-v1", SPACE, n_trials=popsize,
                              num_steps=steps, n_evaluations=1, pruner="none", seed=0,
                              trials=trials)
        results, _ = runner.run()
        scores = [trial["value"] for trial in results["history"]]
    runner.close()
    return time.perf_counter() - start, trials.seconds, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=16_000)
    parser.add_argument("--popsize", type=int, default=4)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--runners", nargs="+", choices=("es", "optuna"), default=["es", "optuna"])
    parser.add_argument("--output", default=None, help="also write the table to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = [(kind, "one after another (LocalTrials)",
             *generation(kind, LocalTrials(), args.steps, args.popsize)) for kind in args.runners]
    import ray

    from looprl.distributed.cluster import local_instance_settings

    start = time.perf_counter()
    local_instance_settings()
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False,
             log_to_driver=False, logging_level="ERROR")
    started = time.perf_counter() - start
    try:
        for name in ("on Ray, fresh workers", "on Ray, warm workers"):
            rows += [(kind, f"{name} (RayTrials, {args.cpus} at once)",
                      *generation(kind, RayTrials(), args.steps, args.popsize))
                     for kind in args.runners]
    finally:
        ray.shutdown()
    lines = [f"{args.popsize} PPO individuals (ES: one generation) or trials (Optuna) x "
             f"{args.steps} steps on CartPole-v1, {os.cpu_count()} cores; Ray instance started "
             f"in {started:.1f} s (not counted)", "",
             f"| runner | {'trials':<44} | wall (s) | x sequential | trials alone (s) | "
             "x sequential | score of each |",
             f"|--------|{'-' * 46}|----------|--------------|------------------|--------------|"
             "---------------|"]
    for kind in args.runners:
        ours = [row for row in rows if row[0] == kind]
        whole, alone = ours[0][2:4]
        lines += [f"| {kind:<6} | {name:<44} | {seconds:8.1f} | {seconds / whole:12.2f} | "
                  f"{inside:16.1f} | {inside / alone:12.2f} | "
                  f"{', '.join(f'{f:.0f}' for f in scores)} |"
                  for _, name, seconds, inside, scores in ours]
    same = all(row[4] == next(r for r in rows if r[0] == row[0])[4] for row in rows)
    lines += ["", f"the same score for every individual and trial either way: {same}"]
    print("\n" + "\n".join(lines))
    if args.output:
        with open(args.output, "w") as out:
            out.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
