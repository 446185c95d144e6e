"""A generation of ES individuals one after another against at once on Ray.

``ESRunner`` with one generation of ``--popsize`` individuals (PPO on CartPole-v1, each a
fresh agent with its own ``lr`` and ``clip``, trained ``--steps`` steps, then 10 evaluation
episodes; one torch thread) runs with ``LocalTrials`` (what ``runtime=local`` does), then with
``RayTrials`` (``runtime=ray``) on a local Ray instance of ``--cpus`` CPUs: first on fresh Ray
workers (each imports torch and looprl once), then again on the same, warm workers. The
results must be the same; prints a table of wall times.

    python benchmarks/runners_on_ray.py [--steps 16000] [--popsize 4] [--cpus 2]
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from looprl.distributed.trials import RayTrials
from looprl.presets.classic_control import ppo
from looprl.runners import ESRunner
from looprl.runners.trials import LocalTrials


def generation(trials: object, steps: int, popsize: int) -> tuple[float, list[float]]:
    """Wall time of one generation (the runner's construction and final evaluation
    included) and the individuals' fitness."""
    start = time.perf_counter()
    runner = ESRunner(ppo.device("cpu"), "CartPole-v1", iterations=1, popsize=popsize,
                      num_steps_per_iteration=steps, strategy="openai", sigma=0.3, seed=0,
                      search_targets={"lr": (1e-4, 1e-2, "log"), "clip": (0.1, 0.3)},
                      trials=trials)
    results, _ = runner.run()
    runner.close()
    return time.perf_counter() - start, results["history"][0]["fitness"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=16_000)
    parser.add_argument("--popsize", type=int, default=4)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = [("one after another (LocalTrials)", *generation(LocalTrials(), args.steps,
                                                             args.popsize))]
    import ray

    from looprl.distributed.cluster import local_instance_settings

    start = time.perf_counter()
    local_instance_settings()
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False,
             log_to_driver=False, logging_level="ERROR")
    started = time.perf_counter() - start
    try:
        for name in ("on Ray, fresh workers", "on Ray, warm workers"):
            rows.append((f"{name} (RayTrials, {args.cpus} at once)",
                         *generation(RayTrials(), args.steps, args.popsize)))
    finally:
        ray.shutdown()
    sequential = rows[0][1]
    print(f"\nES generation of {args.popsize} PPO individuals x {args.steps} steps on CartPole-v1,"
          f" {os.cpu_count()} cores; Ray instance started in {started:.1f} s (not counted)\n")
    print(f"| {'trials':<44} | wall (s) | x sequential | fitness |")
    print(f"|{'-' * 46}|----------|--------------|---------|")
    for name, seconds, fitness in rows:
        print(f"| {name:<44} | {seconds:8.1f} | {seconds / sequential:12.2f} | "
              f"{', '.join(f'{f:.0f}' for f in fitness)} |")
    same = all(row[2] == rows[0][2] for row in rows)
    print(f"\nthe same fitness for every individual either way: {same}")


if __name__ == "__main__":
    main()
