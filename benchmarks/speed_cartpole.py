"""Speed: looprl vs Stable-Baselines3, PPO and DQN on CartPole-v1, in one process.

Both libraries get the rl-baselines3-zoo CartPole-v1 hyperparameters and the same
number of environment steps; both are evaluated every ``--eval-every`` steps by the same
harness (excluded from the clock). The table reports training env steps per second and
the wall-clock seconds to the first evaluation with mean return >= 475, and the ratios.

    python benchmarks/speed_cartpole.py [--seeds 0 1 2] [--algos ppo dqn]

Stable-Baselines3 is a benchmark-only dependency (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from harness import Clock, Run, evaluate, format_table  # noqa: E402

ENV = "CartPole-v1"
SOLVED = 475.0
BUDGET = {"ppo": 100_000, "dqn": 50_000}


# -- looprl ----------------------------------------------------------------------------
def looprl_run(algo: str, seed: int, eval_every: int, eval_episodes: int) -> Run:
    from looprl.core import StateArray
    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.experiments.experiment import seed_everything
    from looprl.presets.classic_control import dqn, ppo

    builder = {"ppo": ppo, "dqn": dqn}[algo]
    seed_everything(seed)  # before building, so that the initial weights are seeded too
    env = GymEnvironment(ENV)
    preset = builder.env(env).device("cpu").build()
    experiment = make_experiment(
        preset, env, train_steps=BUDGET[algo], logdir="/tmp/looprl-bench", quiet=True,
        verbose=False, seed=seed,
    )

    def act_fn():
        agent = preset.test_agent()
        return lambda obs: agent.act(StateArray({"observation": torch.from_numpy(obs)},
                                                (obs.shape[0],))).numpy()

    run, clock = Run("looprl", algo, seed), Clock()
    for target in range(eval_every, BUDGET[algo] + 1, eval_every):
        clock.start()
        experiment.train(frames=target)
        clock.pause()
        score = evaluate(act_fn(), ENV, eval_episodes, seed=10_000 + seed)
        run.evals.append((experiment.frame, clock.elapsed, score))
    run.steps, run.seconds = experiment.frame, clock.elapsed
    experiment.close()
    return run


# -- Stable-Baselines3 -------------------------------------------------------------------
def sb3_model(algo: str, seed: int):
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.env_util import make_vec_env

    def linear(x):
        return lambda progress_remaining: progress_remaining * x

    if algo == "ppo":
        env = make_vec_env(ENV, n_envs=8, seed=seed)
        return PPO(
            "MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
            n_epochs=20, ent_coef=0.0, learning_rate=linear(1e-3), clip_range=linear(0.2),
            seed=seed, device="cpu",
        )
    env = make_vec_env(ENV, n_envs=1, seed=seed)
    return DQN(
        "MlpPolicy", env, learning_rate=2.3e-3, batch_size=64, buffer_size=100_000,
        learning_starts=1000, gamma=0.99, target_update_interval=10, train_freq=256,
        gradient_steps=128, exploration_fraction=0.16, exploration_final_eps=0.04,
        policy_kwargs={"net_arch": [256, 256]}, seed=seed, device="cpu",
    )


def sb3_run(algo: str, seed: int, eval_every: int, eval_episodes: int) -> Run:
    from stable_baselines3.common.callbacks import BaseCallback

    model = sb3_model(algo, seed)
    run, clock = Run("sb3", algo, seed), Clock()

    class Evaluate(BaseCallback):
        next_eval = eval_every

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_eval:
                clock.pause()
                act = lambda obs: model.predict(obs, deterministic=True)[0]  # noqa: E731
                score = evaluate(act, ENV, eval_episodes, seed=10_000 + seed)
                run.evals.append((self.num_timesteps, clock.elapsed, score))
                self.next_eval += eval_every
                clock.start()
            return True

    clock.start()
    model.learn(total_timesteps=BUDGET[algo], callback=Evaluate())
    clock.pause()
    run.steps, run.seconds = model.num_timesteps, clock.elapsed
    return run


# -- the arithmetic floor -------------------------------------------------------------------
def floor_seconds(algo: str) -> float:
    """Seconds of the bare work both libraries must do: the same env steps and gradient steps.

    Raw Gymnasium steps with the no-grad forward passes of acting (PPO: actor and critic),
    plus the same number of forward/backward/Adam steps on the same networks and batch
    shapes (PPO: actor and critic together, as both libraries train them), in a bare PyTorch
    loop (no buffers, no losses beyond a trivial one, no logging, no library). No eager
    PyTorch implementation can beat this by much.
    """
    import gymnasium as gym
    from torch import nn

    def mlp(out: int, hidden: int, act) -> nn.Sequential:
        return nn.Sequential(nn.Linear(4, hidden), act(), nn.Linear(hidden, hidden), act(),
                             nn.Linear(hidden, out))

    ppo = algo == "ppo"
    if ppo:  # actor and critic, both used to act and both trained by one optimizer
        n_envs, batch, grad_steps = 8, 256, BUDGET[algo] // 256 * 20
        nets = nn.ModuleList([mlp(2, 64, nn.Tanh), mlp(1, 64, nn.Tanh)])
        trained = nets.parameters()
    else:  # the online network acts and is trained; the target network gives targets
        n_envs, batch, grad_steps = 1, 64, (BUDGET[algo] - 1000) // 256 * 128
        nets = nn.ModuleList([mlp(2, 256, nn.ReLU), mlp(2, 256, nn.ReLU)])
        trained = nets[0].parameters()
    env = gym.make_vec(ENV, num_envs=n_envs, vectorization_mode="vector_entry_point")
    optimizer = torch.optim.Adam(trained, fused=True)
    obs, _ = env.reset(seed=0)
    x = torch.randn(batch, 4)
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(BUDGET[algo] // n_envs):
            observation = torch.from_numpy(obs)
            action = nets[0](observation).argmax(-1).numpy()
            if ppo:
                nets[1](observation)
            obs, *_ = env.step(action)
    for _ in range(grad_steps):
        if ppo:
            loss = nets[0](x).max(-1).values.mean() + nets[1](x).square().mean()
        else:
            with torch.no_grad():
                target = nets[1](x).max(-1).values
            loss = (nets[0](x).max(-1).values - target).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def summarize(runs: list[Run]) -> str:
    rows = []
    for algo in sorted({r.algorithm for r in runs}):
        by_lib = {lib: [r for r in runs if r.library == lib and r.algorithm == algo]
                  for lib in ("looprl", "sb3")}
        sps = {lib: np.mean([r.steps_per_second for r in rs]) for lib, rs in by_lib.items()}
        tts = {lib: np.nanmean([r.time_to(SOLVED) for r in rs]) if any(
            math.isfinite(r.time_to(SOLVED)) for r in rs) else math.nan
            for lib, rs in by_lib.items()}
        solved = {lib: sum(math.isfinite(r.time_to(SOLVED)) for r in rs)
                  for lib, rs in by_lib.items()}
        n = len(by_lib["looprl"])
        floor = floor_seconds(algo)
        rows.append([
            algo.upper(), f"{BUDGET[algo]:,}",
            f"{sps['looprl']:,.0f}", f"{sps['sb3']:,.0f}", f"{sps['looprl'] / sps['sb3']:.1f}x",
            f"{tts['looprl']:.1f} ({solved['looprl']}/{n})",
            f"{tts['sb3']:.1f} ({solved['sb3']}/{n})",
            f"{tts['sb3'] / tts['looprl']:.1f}x",
            f"{BUDGET[algo] / floor:,.0f} ({BUDGET[algo] / floor / sps['sb3']:.1f}x)",
        ])
    header = ["algo", "steps", "looprl steps/s", "SB3 steps/s", "speed ratio",
              "looprl s to 475 (solved)", "SB3 s to 475 (solved)", "time ratio",
              "floor steps/s (max ratio)"]
    return format_table(rows, header)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--algos", nargs="+", default=["ppo", "dqn"], choices=["ppo", "dqn"])
    parser.add_argument("--eval-every", type=int, default=2048)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for both")
    parser.add_argument("--output", default=str(Path(__file__).parent / "results" / "speed.md"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runs = []
    for algo in args.algos:
        for seed in args.seeds:
            for fn in (looprl_run, sb3_run):
                run = fn(algo, seed, args.eval_every, args.eval_episodes)
                print(f"{run.library:7s} {algo} seed {seed}: {run.steps_per_second:8,.0f} steps/s, "
                      f"best eval {run.best:.1f}, s to {SOLVED:.0f}: {run.time_to(SOLVED):.1f}",
                      flush=True)
                runs.append(run)
    table = summarize(runs)
    print()
    print(table)
    machine = f"{platform.processor() or platform.machine()}, torch {torch.__version__}, " \
              f"{args.threads} torch thread(s), seeds {args.seeds}"
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(f"# looprl vs SB3 on {ENV}\n\n{machine}\n\n{table}\n")
    print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
