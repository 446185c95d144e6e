"""Wall-clock seconds of the CartPole PPO preset's two phases against the bare-PyTorch floor's.

``ppo_instructions.py`` counts instructions; this script times what they cost on the clock, in
one process and one torch thread, alternating looprl and the floor so that both see the same
machine: a 100,000-step run of the preset (``benchmarks/speed_cartpole.py``'s settings, no
evaluations), split into the trainer's steps (``OnPolicyTrainer.step``: targets and the 20
gradient steps of each update) and the rest (acting: the collector, ``policy.rollout``, the
rows, the env steps, the logging), against the floor's gradient steps and its acting loop
(``discrete_floor_phases``). Prints one line per repeat:

    looprl 7.55 s (gradient 5.85, acting 1.70)  floor 5.69 s (4.77, 0.92)  ratio 0.75 (0.81, 0.54)

    python tools_dev/instructions/ppo_phases.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from speed_cartpole import BUDGET, discrete_floor_phases, flushed_denormals  # noqa: E402

STEPS = BUDGET["ppo"]


def looprl_seconds() -> tuple[float, float]:
    """``(whole run, trainer steps)`` seconds of the preset's 100,000-step run."""
    from looprl.agents.on_policy import OnPolicyTrainer
    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.experiments.experiment import seed_everything
    from looprl.presets.classic_control import ppo

    spent = [0.0]
    step = OnPolicyTrainer.step

    def timed(self: OnPolicyTrainer, sample):
        start = time.perf_counter()
        try:
            return step(self, sample)
        finally:
            spent[0] += time.perf_counter() - start

    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    preset = ppo.env(env).device("cpu").build()
    experiment = make_experiment(preset, env, train_steps=STEPS, logdir="/tmp/looprl-phases",
                                 quiet=True, verbose=False, seed=0)
    OnPolicyTrainer.step = timed
    try:
        start = time.perf_counter()
        experiment.train(frames=STEPS)
        total = time.perf_counter() - start
    finally:
        OnPolicyTrainer.step = step
        experiment.close()
    return total, spent[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for _ in range(args.repeats):
        total, gradient = looprl_seconds()
        with flushed_denormals():
            floor_acting, floor_gradient = discrete_floor_phases("ppo")
        acting, floor_total = total - gradient, floor_acting + floor_gradient
        print(f"looprl {total:.2f} s (gradient {gradient:.2f}, acting {acting:.2f})  "
              f"floor {floor_total:.2f} s ({floor_gradient:.2f}, {floor_acting:.2f})  "
              f"ratio {floor_total / total:.2f} ({floor_gradient / gradient:.2f}, "
              f"{floor_acting / acting:.2f})", flush=True)


if __name__ == "__main__":
    main()
