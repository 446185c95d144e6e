"""Wall-clock seconds of the CartPole PPO preset's two phases against the bare-PyTorch floor's.

``ppo_instructions.py`` counts instructions; this script times what they cost on the clock, in
one process and one torch thread, alternating looprl and the floor so that both see the same
machine: a 100,000-step run of the preset (``benchmarks/speed_cartpole.py``'s settings, no
evaluations), split into the trainer's steps (``OnPolicyTrainer.step``: targets and the 20
gradient steps of each update) and the rest (acting: the collector, ``policy.rollout``, the
rows, the env steps, the logging), against the floor's gradient steps and its acting loop
(``discrete_floor_seconds``, timed in the same two parts). Prints one line per repeat:

    looprl 7.55 s (gradient 5.85, acting 1.70)  floor 5.69 s (4.77, 0.92)  ratio 0.75 (0.81, 0.54)

    python tools_dev/instructions/ppo_phases.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import gymnasium as gym
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from speed_cartpole import BUDGET  # noqa: E402

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


def floor_seconds() -> tuple[float, float]:
    """``(whole, gradient steps)`` seconds of ``discrete_floor_seconds("ppo")``'s work."""
    def mlp(out: int) -> nn.Sequential:
        return nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                             nn.Linear(64, out))

    torch.set_flush_denormal(True)
    nets = nn.ModuleList([mlp(2), mlp(1)])
    optimizer = torch.optim.Adam(nets.parameters(), fused=True)
    env = gym.make_vec("CartPole-v1", num_envs=8, vectorization_mode="vector_entry_point")
    obs, _ = env.reset(seed=0)
    x = torch.randn(256, 4)
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(STEPS // 8):
            observation = torch.from_numpy(obs)
            action = nets[0](observation).argmax(-1).numpy()
            nets[1](observation)
            obs, *_ = env.step(action)
    acting = time.perf_counter()
    for _ in range(STEPS // 256 * 20):
        loss = nets[0](x).max(-1).values.mean() + nets[1](x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    end = time.perf_counter()
    torch.set_flush_denormal(False)
    return end - start, end - acting


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for _ in range(args.repeats):
        total, gradient = looprl_seconds()
        floor_total, floor_gradient = floor_seconds()
        acting, floor_acting = total - gradient, floor_total - floor_gradient
        print(f"looprl {total:.2f} s (gradient {gradient:.2f}, acting {acting:.2f})  "
              f"floor {floor_total:.2f} s ({floor_gradient:.2f}, {floor_acting:.2f})  "
              f"ratio {floor_total / total:.2f} ({floor_gradient / gradient:.2f}, "
              f"{floor_acting / acting:.2f})", flush=True)


if __name__ == "__main__":
    main()
