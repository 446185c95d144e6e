"""Population-based training on Ray Tune against the same population without exploit and
explore: PPO on CartPole-v1, four members started at learning rates 1e-5, 1e-4, 1e-3 and 1e-2.

Both runs use ``PBTRunner`` (so the same trials, checkpoints and evaluations), once with
Tune's ``PopulationBasedTraining`` and once with ``exploit=False``. Every member trains
``--steps`` steps and is evaluated on 10 deterministic episodes every ``--interval`` steps;
the table compares PBT's best member with the mean (and the best) of the members trained
alone. Writes ``benchmarks/results/pbt_cartpole.md``.

    python benchmarks/pbt_cartpole.py [--steps 60000] [--interval 10000]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray on loopback only

import ray  # noqa: E402
import torch  # noqa: E402

from looprl.presets.classic_control import ppo  # noqa: E402
from looprl.runners import PBTRunner  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "pbt_cartpole.md"
STARTS = [{"hp/lr": lr} for lr in (1e-5, 1e-4, 1e-3, 1e-2)]


def population(exploit: bool, steps: int, interval: int, logdir: str) -> tuple[dict, float]:
    runner = PBTRunner(ppo.device("cpu"), "CartPole-v1", {"hp/lr": (1e-5, 1e-2, "log")},
                       initial=STARTS, num_steps=steps, perturbation_interval=interval,
                       eval_episodes=10, quiet=True, logdir=logdir, seed=0, exploit=exploit)
    start = time.perf_counter()
    results, _ = runner.run()
    return results, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=60_000)
    parser.add_argument("--interval", type=int, default=10_000)
    args = parser.parse_args()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for exploit in (False, True):
            results, seconds = population(exploit, args.steps, args.interval,
                                          f"{tmp}/{exploit}")
            finals = [m["mean_eval_reward"] for m in results["members"]]
            rows.append((exploit, results, finals, seconds))
            print(f"exploit={exploit}: {seconds:.0f} s, members {finals}")
    ray.shutdown()
    alone, pbt = rows
    alone_mean = statistics.mean(alone[2])
    pbt_best = pbt[1]["best"]["mean_eval_reward"]
    lines = [
        "# Population-based training: PPO on CartPole-v1",
        "",
        f"`python benchmarks/pbt_cartpole.py --steps {args.steps} --interval {args.interval}` "
        f"on {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
        f"torch {torch.__version__}, {os.cpu_count()} CPUs (one Ray trial per CPU, one torch "
        "thread each; Tune reuses its Ray workers from trial to trial). Four members "
        "start at learning rates 1e-5, 1e-4, 1e-3, 1e-2 (`hp/lr`, which replaces the preset's "
        "linear decay); each trains the steps above and is evaluated on 10 deterministic "
        "episodes at every interval. PBT: Tune's `PopulationBasedTraining` (bottom quarter "
        "exploits the top quarter's checkpoint, then perturbs lr by x0.8/x1.2 or resamples it).",
        "",
        "| run | final evaluation of each member | mean | best | best member's final lr "
        "| wall time (s) |",
        "|---|---|---|---|---|---|",
    ]
    for exploit, results, finals, seconds in rows:
        best = results["best"]
        lines.append(
            f"| {'PBT' if exploit else 'same members, no exploit/explore'} | "
            f"{', '.join(f'{f:.0f}' for f in finals)} | {statistics.mean(finals):.1f} | "
            f"{best['mean_eval_reward']:.1f} | {best['hp']['hp/lr']:.2e} | {seconds:.0f} |")
    verdict = "beats" if pbt_best > alone_mean else "does not beat"
    lines += ["", f"PBT's best member ({pbt_best:.1f}) {verdict} the mean of the members "
              f"trained alone ({alone_mean:.1f})."]
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"written {RESULTS}")


if __name__ == "__main__":
    main()
