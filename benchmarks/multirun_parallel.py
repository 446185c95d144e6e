"""Many runs on one machine: ``looprl run -m seed=0,1,2,3`` one job after another (Hydra's
basic launcher) against its jobs in parallel (the joblib launcher, one job per core).

Each job trains the classic-control PPO preset on CartPole-v1 for ``--frames`` steps with one
torch thread. Writes ``benchmarks/results/multirun_parallel.md``.

    python benchmarks/multirun_parallel.py [--frames 30000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "multirun_parallel.md"
SEEDS = "0,1,2,3"


def multirun(frames: int, launcher: list[str], sweep_dir: Path) -> tuple[float, list[float]]:
    """Wall time of the multirun and each job's final evaluation."""
    command = [sys.executable, "-m", "looprl.cli", "run", "-m", f"seed={SEEDS}",
               f"frames={frames}", "test_episodes=10", "logging.quiet=true",
               f"hydra.sweep.dir={sweep_dir}", *launcher]
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    seconds = time.perf_counter() - start
    evals = [json.loads((sweep_dir / str(i) / "results.json").read_text())["eval"]
             ["mean_eval_reward"] for i in range(len(SEEDS.split(",")))]
    return seconds, evals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=30_000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, launcher in (
            ("one after another (basic launcher)", []),
            (f"in parallel (joblib, {args.jobs} jobs)",
             ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={args.jobs}"]),
        ):
            seconds, evals = multirun(args.frames, launcher, Path(tmp) / str(len(rows)))
            rows.append((name, seconds, evals))
            print(f"{name}: {seconds:.1f} s, evaluations {evals}")
    sequential = rows[0][1]
    lines = [
        "# Many runs on one machine: `looprl run -m seed=0,1,2,3`",
        "",
        f"`python benchmarks/multirun_parallel.py --frames {args.frames} --jobs {args.jobs}`"
        f" on {os.cpu_count()} cores: PPO (classic-control defaults) on CartPole-v1, "
        f"{args.frames:,} steps per job, one torch thread per job.",
        "",
        "| launcher | wall time (s) | speed-up | final evaluation of each seed |",
        "|---|---|---|---|",
    ]
    for name, seconds, evals in rows:
        lines.append(f"| {name} | {seconds:.1f} | {sequential / seconds:.2f}x | "
                     f"{', '.join('-' if e is None else f'{e:.0f}' for e in evals)} |")
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"written {RESULTS}")


if __name__ == "__main__":
    main()
