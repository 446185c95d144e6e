"""Overhead of the meta layer: steps/s of PPO and DQN on CartPole-v1 with no component
attached, against the release before the meta layer (``--baseline``, a git revision) in the
same run, and the cost of RND and PLR when they are attached.

Each measurement runs in its own subprocess (one torch thread) with ``PYTHONPATH`` pointing
at either this checkout's ``src`` or a temporary git worktree of the baseline, alternating
between the two, ``--repeats`` times; the table reports the median. Written to
``benchmarks/results/meta_overhead.md``. The defaults take over 10 minutes on 2 cores (DQN's
zoo settings train 128 gradient steps per 256 frames).

    python benchmarks/meta_overhead.py [--frames 20000] [--repeats 3] [--baseline 434b1e5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import format_table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "meta_overhead.md"

# One measurement: train a preset for ``frames`` frames and print steps/s as JSON.
MEASURE = """
import json, sys, time, torch
torch.set_num_threads(1)
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.presets.classic_control import dqn, ppo
algo, component, frames = sys.argv[1], sys.argv[2], int(sys.argv[3])
seed_everything(0)
if component == "plr":
    from looprl.environments.contextual import ContextualEnvironment, sample_contexts
    env = ContextualEnvironment("CartPole-v1", sample_contexts("CartPole-v1", 20,
                                {"length": (0.25, 1.0)}, seed=0))
else:
    env = GymEnvironment("CartPole-v1")
preset = {"ppo": ppo, "dqn": dqn}[algo].env(env).device("cpu").build()
kwargs = {}
if component != "none":
    from looprl.meta import PLR, RND
    kwargs["meta"] = [RND() if component == "rnd" else PLR()]
experiment = make_experiment(preset, env, train_steps=frames, logdir="/tmp/looprl-overhead",
                             quiet=True, verbose=False, seed=0, **kwargs)
warmup = frames // 10
experiment.train(frames=warmup)
start = time.perf_counter()
experiment.train(frames=frames)
print(json.dumps((experiment.frame - warmup) / (time.perf_counter() - start)))
"""


def measure(src: Path, algo: str, component: str, frames: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", MEASURE, algo, component, str(frames)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return float(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", default="434b1e5", help="git revision before the layer")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base),
                        args.baseline], check=True)
        try:
            rows = run(base / "src", ROOT / "src", args)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                           check=True)
    header = ["algo", "run", "steps/s (median)", "ratio to the baseline"]
    table = format_table(rows, header)
    text = (
        "# Meta layer overhead on CartPole-v1\n\n"
        f"{args.frames:,} frames per measurement (the first tenth not timed), median of "
        f"{args.repeats} alternating subprocess runs, 1 torch thread, preset defaults. "
        f"Baseline: revision {args.baseline} (before the meta layer). PLR runs on contextual "
        "CartPole (20 pole lengths).\n\n"
        f"{table}\n"
    )
    print(text)
    RESULTS.write_text(text)


def run(base: Path, current: Path, args: argparse.Namespace) -> list[list[str]]:
    rows = []
    for algo in ("ppo", "dqn"):
        times: dict[str, list[float]] = {"baseline": [], "none": [], "rnd": [], "plr": []}
        for _ in range(args.repeats):
            times["baseline"].append(measure(base, algo, "none", args.frames))
            for component in ("none", "rnd", "plr"):
                times[component].append(measure(current, algo, component, args.frames))
        reference = statistics.median(times["baseline"])
        names = {"baseline": f"baseline ({args.baseline})", "none": "looprl, no component",
                 "rnd": "looprl + RND", "plr": "looprl + PLR"}
        for key, values in times.items():
            rate = statistics.median(values)
            rows.append([algo.upper(), names[key], f"{rate:,.0f}", f"{rate / reference:.3f}"])
            print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    main()
