"""Throughput: Atari frames per second of the DQN and PPO presets against the raw emulator.

All measured in one process on Breakout: the raw ALE step rate (``ALEInterface.act``, one
emulator frame per call, random actions: the ceiling), the preprocessed environments alone
(random actions), and the two presets training with their default hyperparameters through
the experiment loop. A preset's frames are its agent steps x 4 (frame skip). DQN is timed
in its steady state (updates every 4 steps) after a short warm-up that fills
``replay_start_size``; PPO after one warm-up rollout. The table is printed and written to
``benchmarks/results/atari_throughput.md``.

    python benchmarks/atari_throughput.py [--dqn-steps 2000] [--ppo-steps 4096] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402
from harness import format_table  # noqa: E402
from looprl.environments.ale import rom_id  # noqa: E402
from looprl.environments.atari import AtariEnvironment  # noqa: E402
from looprl.experiments import make_experiment  # noqa: E402
from looprl.presets.atari import dqn, ppo  # noqa: E402

GAME = "Breakout"
FRAME_SKIP = 4
RESULTS = Path(__file__).parent / "results" / "atari_throughput.md"


def raw_ale(frames: int) -> tuple[int, float]:
    """Emulator frames and seconds of ``ale_py.ALEInterface`` stepping one frame at a time."""
    import ale_py

    ale = ale_py.ALEInterface()
    ale.setInt("random_seed", 0)
    ale.setFloat("repeat_action_probability", 0.0)
    ale.setLoggerMode(ale_py.LoggerMode.Error)
    ale.loadROM(ale_py.roms.get_rom_path(rom_id(GAME)))
    actions = ale.getMinimalActionSet()
    choice = np.random.default_rng(0).integers(0, len(actions), frames)
    start = time.perf_counter()
    for i in range(frames):
        ale.act(actions[choice[i]])
        if ale.game_over():
            ale.reset_game()
    return frames, time.perf_counter() - start


def environment(steps: int, n_envs: int) -> tuple[int, float]:
    """Emulator frames and seconds of the preprocessed environment(s), random actions."""
    single = AtariEnvironment(GAME, seed=0)
    env = single if n_envs == 1 else single.duplicate(n_envs)
    env.reset()
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(steps // n_envs):
        action = rng.integers(0, 4, n_envs)
        state = env.step(action[0] if n_envs == 1 else action)
        if n_envs == 1 and state.done:
            env.reset()
    return (steps // n_envs) * n_envs * FRAME_SKIP, time.perf_counter() - start


def preset(builder, warmup: int, steps: int, **hyperparameters) -> tuple[int, float]:
    """Emulator frames and seconds of a preset training through the experiment loop."""
    env = AtariEnvironment(GAME, seed=0)
    built = builder.env(env).device("cpu").hyperparameters(**hyperparameters).build()
    experiment = make_experiment(
        built, env, train_steps=warmup + steps, logdir="/tmp/looprl-bench", quiet=True,
        verbose=False, seed=0,
    )
    experiment.train(frames=warmup)
    first = experiment.frame
    start = time.perf_counter()
    experiment.train(frames=first + steps)
    seconds = time.perf_counter() - start
    return (experiment.frame - first) * FRAME_SKIP, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw-frames", type=int, default=40_000)
    parser.add_argument("--env-steps", type=int, default=8_000)
    parser.add_argument("--dqn-steps", type=int, default=2_000)
    parser.add_argument("--ppo-steps", type=int, default=4_096)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ppo_batch = ppo.hyperparameter_defaults["n_envs"] * ppo.hyperparameter_defaults["n_steps"]
    runs = {
        "raw ALE (ALEInterface.act, ceiling)": raw_ale(args.raw_frames),
        "AtariEnvironment, random actions": environment(args.env_steps, 1),
        "AtariEnvironment.duplicate(8), random actions": environment(args.env_steps, 8),
        "DQN preset (train, 1 env)": preset(
            dqn, 1_000, args.dqn_steps, replay_start_size=1_000, replay_buffer_size=100_000
        ),
        "PPO preset (train, 8 envs)": preset(ppo, ppo_batch, args.ppo_steps),
    }
    ceiling = runs["raw ALE (ALEInterface.act, ceiling)"]
    ceiling_fps = ceiling[0] / ceiling[1]
    rows = []
    for name, (frames, seconds) in runs.items():
        fps = frames / seconds
        rows.append([
            name, f"{frames:,}", f"{seconds:.1f}", f"{fps:,.0f}",
            f"{fps / FRAME_SKIP:,.0f}", f"{fps / ceiling_fps:.3f}",
        ])
    header = ["run", "frames", "seconds", "frames/s", "agent steps/s", "ratio to raw ALE"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    harness.write_report(RESULTS, f"Atari throughput on {GAME}", [
        f"{harness.machine(args.threads)}, load average {load:.1f} at the end of the run.",
        "Frames are emulator frames (one agent step = 4 frames). DQN: default hyperparameters",
        "but a 1,000-step replay start and a 100k replay (timed in its steady state: one",
        "update of 32 every 4 steps). PPO: default hyperparameters (8 envs x 128 steps, 4",
        "epochs), timed after one warm-up rollout.",
    ], format_table(rows, header))


if __name__ == "__main__":
    main()
