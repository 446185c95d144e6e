"""CPU instructions per step of the CartPole PPO preset against the bare-PyTorch floor.

The wall clock of this machine swings by a quarter between minutes, more than most changes to
the hot path move it. Instruction counts do not: this script counts them with valgrind's
callgrind (started and stopped around each measured part by its client requests, so the
imports and the set-up are not counted) and prints a table:

* acting: one step of the 8 CartPole copies through ``ParallelEnvExperiment`` (the collector,
  ``policy.rollout``, the rows) with training and episode logging switched off, against the
  floor's step (raw Gymnasium vector step, actor and critic forward passes, ``argmax``);
* a gradient step: one PPO update (``trainer.step`` on a captured 32 x 8 segment: targets and
  20 gradient steps) over 20, against the floor's forward/backward/Adam step on the same
  networks (``benchmarks/speed_cartpole.py``'s ``discrete_floor``).

``--whole`` counts the preset's ``experiment.train`` from frame 1,600 for 2,048 frames instead
(256 acting steps, 8 updates: everything, episode logging and the learner's bookkeeping
too), to check the table's extrapolation to a whole run: on 2026-12-01 it counted 1.2275G
against the parts' 1.2204G (256 acting steps and 160 gradient steps), 0.6% more.

Fewer instructions is not the same as less time (caches, the GIL), but a change that removes
instructions from the hot path shows here, exactly, in one run. Needs ``valgrind`` and ``gcc``
(``apt install valgrind gcc``); takes about 3 minutes.

    python tools_dev/instructions/ppo_instructions.py [--steps 200] [--whole]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HELPER = r"""
#include <valgrind/callgrind.h>
void start(void) {
    CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT;
}
void stop(void) {
    CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS; CALLGRIND_STOP_INSTRUMENTATION;
}
"""
PARTS = ("looprl acting", "floor acting", "looprl update", "floor update")
WHOLE = 2048  # frames counted by --whole (8 updates of the preset's 8 x 32 frames)


def seeded_ppo(helper: str) -> tuple[Any, Any, Any]:
    """The counter of ``helper``, CartPole-v1 and a seeded PPO preset on it (one torch thread)."""
    import torch

    from looprl.environments import GymEnvironment
    from looprl.experiments.experiment import seed_everything
    from looprl.presets.classic_control import ppo

    counter = ctypes.CDLL(helper)
    torch.set_num_threads(1)
    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    return counter, env, ppo.env(env).device("cpu").build()


def counted(counter: Any, run: Callable[[int], Any], warm: int, steps: int) -> None:
    """``run(warm)``, then ``run(steps)`` counted (between ``counter.start`` and ``stop``)."""
    run(warm)
    counter.start()
    run(steps)
    counter.stop()


def measure_whole(helper: str) -> None:
    """Count ``WHOLE`` frames of ``experiment.train`` from frame 1,600 (any revision's)."""
    from looprl.experiments import make_experiment

    counter, env, preset = seeded_ppo(helper)
    with tempfile.TemporaryDirectory() as logdir:
        experiment = make_experiment(preset, env, train_steps=100_000, logdir=logdir,
                                     quiet=True, verbose=False, seed=0)
        experiment.train(frames=1600)
        counter.start()
        experiment.train(frames=1600 + WHOLE)
        counter.stop()
        experiment.close()


def measure(helper: str, steps: int) -> None:
    """The measured run (under valgrind): each part between ``start`` and ``stop``."""

    from looprl.agents.on_policy import OnPolicyAgent
    from looprl.experiments import make_experiment

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from speed_cartpole import discrete_floor, flushed_denormals

    counter, env, preset = seeded_ppo(helper)
    with tempfile.TemporaryDirectory() as logdir:
        experiment = make_experiment(preset, env, train_steps=10**9, logdir=logdir, quiet=True,
                                     verbose=False, seed=0)
        learner = experiment.agent.unwrapped
        segments: list = []
        train = OnPolicyAgent.train
        OnPolicyAgent.train = lambda self, segment: segments.append(segment)
        type(experiment)._log_episode = lambda self, episode: None
        counted(counter, lambda n: experiment.train(frames=8 * n), 200, 200 + steps)
        OnPolicyAgent.train = train

        floor_act, floor_update, _, _ = discrete_floor("ppo")
        counted(counter, floor_act, 200, steps)

        segment = segments[-1].to(learner.policy.device)
        for _ in range(2):
            learner.trainer.step(segment)
        counter.start()
        learner.trainer.step(segment)
        counter.stop()

        with flushed_denormals():
            counted(counter, floor_update, 20, 20)  # (one update: 20 gradient steps)
        experiment.close()


def callgrind_totals(script: str, args: list[str], parts: int) -> list[int]:
    """Instructions of each of the ``parts`` measured parts of ``script --measure HELPER
    *args`` run under callgrind (each between the helper's ``start`` and ``stop``)."""
    with tempfile.TemporaryDirectory() as tmp:
        source, helper = Path(tmp, "helper.c"), Path(tmp, "helper.so")
        source.write_text(HELPER)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(helper), str(source)],
                       check=True)
        out = Path(tmp, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
                   f"--callgrind-out-file={out}", sys.executable, script, *args, "--measure",
                   str(helper)]
        run = subprocess.run(command, capture_output=True, text=True,
                             env={**os.environ, "PYTHONWARNINGS": "ignore",
                                  "PYTHONHASHSEED": "0"})  # (else the counts move by ~1%)
        totals = []
        for part in range(1, parts + 1):
            dump = Path(f"{out}.{part}")
            if run.returncode or not dump.exists():
                sys.exit(f"the valgrind run failed (exit {run.returncode}):\n{run.stderr[-3000:]}")
            line = next(x for x in dump.read_text().splitlines() if x.startswith("totals:"))
            totals.append(int(line.split()[1]))
    return totals


def arguments(doc: str, steps: int, whole: int) -> argparse.ArgumentParser:
    """The command line of an instructions script (``doc``: its docstring): ``--steps``
    (``steps`` by default), ``--whole`` (``whole`` frames) and the valgrind run's ``--measure``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=steps, help="acting steps counted")
    parser.add_argument("--whole", action="store_true",
                        help=f"count {whole} frames of experiment.train only (any revision)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # the helper library (valgrind run)
    return parser


def main() -> None:
    args = arguments(__doc__, 200, WHOLE).parse_args()
    if args.measure:
        return measure_whole(args.measure) if args.whole else measure(args.measure, args.steps)
    if args.whole:
        total = callgrind_totals(__file__, ["--whole"], 1)[0]
        print(f"experiment.train: {total / (WHOLE // 8):,.0f} instructions per acting step "
              f"(8 copies; {WHOLE} frames, 160 gradient steps): {total / 1e9:.4f}G")
        return
    totals = callgrind_totals(__file__, ["--steps", str(args.steps)], len(PARTS))
    per = [totals[0] / args.steps, totals[1] / args.steps, totals[2] / 20, totals[3] / 20]
    print("| per | looprl | floor | floor / looprl |\n|---|---|---|---|")
    print(f"| acting step (8 copies) | {per[0]:,.0f} | {per[1]:,.0f} | {per[1] / per[0]:.2f} |")
    print(f"| gradient step (update / 20) | {per[2]:,.0f} | {per[3]:,.0f} | "
          f"{per[3] / per[2]:.2f} |")
    floor = 12_500 * per[1] + 7_800 * per[3]  # the benchmark's 100,000 steps: 12,500 acting
    ours = 12_500 * per[0] + 7_800 * per[2]  # steps and 390 updates of 20 gradient steps
    print(f"| a 100,000-step run | {ours / 1e9:,.1f} G | {floor / 1e9:,.1f} G | "
          f"{floor / ours:.2f} |")


if __name__ == "__main__":
    main()
