"""Speed: looprl vs Stable-Baselines3 and a bare-PyTorch floor: PPO and DQN on CartPole-v1,
SAC on Pendulum-v1, in one process.

Both libraries get the same hyperparameters (rl-baselines3-zoo's for CartPole-v1; the SAC
preset's defaults, which are the zoo's Pendulum-v1 ones) and the same number of environment
steps; both are evaluated every ``--eval-every`` steps by the same harness (excluded from the
clock). The table reports training env steps per second, the share of the floor's speed
(``floor_seconds``: the bare work any eager PyTorch implementation must do) that looprl
reaches, and the wall-clock seconds to the first evaluation at the solved threshold.

``--baseline REV`` also runs the looprl rows of git revision ``REV`` in the same run (checked
out with ``git worktree add --detach`` and run in a subprocess on this interpreter with its
``src`` first on ``PYTHONPATH``), so that a change is compared against it under the same load.

    python benchmarks/speed_cartpole.py [--seeds 0 1 2] [--algos ppo dqn sac] [--baseline REV]

Stable-Baselines3 is a benchmark-only dependency (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from harness import Clock, Run, evaluate, format_table  # noqa: E402

ENV = {"ppo": "CartPole-v1", "dqn": "CartPole-v1", "sac": "Pendulum-v1"}
SOLVED = {"ppo": 475.0, "dqn": 475.0, "sac": -400.0}
BUDGET = {"ppo": 100_000, "dqn": 50_000, "sac": 10_000}
REPO = Path(__file__).resolve().parent.parent


# -- looprl ----------------------------------------------------------------------------
def looprl_run(algo: str, seed: int, eval_every: int, eval_episodes: int) -> Run:
    from looprl.core import StateArray
    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.experiments.experiment import seed_everything

    if algo == "sac":
        from looprl.presets.continuous import sac as builder
    else:
        from looprl.presets.classic_control import dqn, ppo
        builder = {"ppo": ppo, "dqn": dqn}[algo]
    seed_everything(seed)  # before building, so that the initial weights are seeded too
    env = GymEnvironment(ENV[algo])
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
        score = evaluate(act_fn(), ENV[algo], eval_episodes, seed=10_000 + seed)
        run.evals.append((experiment.frame, clock.elapsed, score))
    run.steps, run.seconds = experiment.frame, clock.elapsed
    experiment.close()
    return run


def baseline_checkout(rev: str) -> Path:
    """A detached worktree of ``rev`` (reused when it is already checked out there)."""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", rev],
                            check=True, capture_output=True, text=True).stdout.strip()
    path = Path(f"/tmp/looprl-baseline-{commit}")
    if not (path / "src" / "looprl").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path),
                        commit], check=True, capture_output=True)
    return path


def baseline_run(checkout: Path, algo: str, seed: int, args: argparse.Namespace) -> Run:
    """``looprl_run`` of the revision at ``checkout``, in a subprocess on this interpreter."""
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    command = [sys.executable, __file__, "--looprl-only", "--algos", algo, "--seeds", str(seed),
               "--eval-every", str(args.eval_every), "--eval-episodes", str(args.eval_episodes),
               "--threads", str(args.threads)]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    fields = json.loads(out.strip().splitlines()[-1])
    run = Run(**{**fields, "library": "baseline"})
    run.evals = [tuple(e) for e in run.evals]
    return run


# -- Stable-Baselines3 -------------------------------------------------------------------
def sb3_model(algo: str, seed: int):
    from stable_baselines3 import DQN, PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env

    def linear(x):
        return lambda progress_remaining: progress_remaining * x

    if algo == "ppo":
        env = make_vec_env(ENV[algo], n_envs=8, seed=seed)
        return PPO(
            "MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
            n_epochs=20, ent_coef=0.0, learning_rate=linear(1e-3), clip_range=linear(0.2),
            seed=seed, device="cpu",
        )
    env = make_vec_env(ENV[algo], n_envs=1, seed=seed)
    if algo == "sac":  # the looprl preset's defaults (rl-baselines3-zoo's Pendulum-v1)
        return SAC(
            "MlpPolicy", env, learning_rate=1e-3, buffer_size=1_000_000, learning_starts=1000,
            batch_size=256, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1,
            ent_coef="auto_1.0", target_entropy="auto",
            policy_kwargs={"net_arch": [256, 256]}, seed=seed, device="cpu",
        )
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
                score = evaluate(act, ENV[algo], eval_episodes, seed=10_000 + seed)
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
    """The floor's seconds, with denormal floats flushed to zero (``flushed_denormals``)."""
    with flushed_denormals():
        return sac_floor_seconds() if algo == "sac" else sum(discrete_floor_phases(algo))


@contextlib.contextmanager
def flushed_denormals() -> Iterator[None]:
    """Denormal floats flushed to zero inside, as looprl's optimizer steps do (Adam's moments
    of weights that get no gradient decay into denormals, on which CPU arithmetic is many
    times slower: without this the DQN floor ran slower than looprl)."""
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


def discrete_floor(algo: str, n_envs: int | None = None
                   ) -> tuple[Callable[[int], None], Callable[[int], None], int, int]:
    """The bare work both libraries must do for ``algo`` (``"ppo"`` or ``"dqn"``):
    ``(act, update, acting_steps, grad_steps)``, where ``act(n)`` makes ``n`` batched env steps
    with the no-grad forward passes of acting (PPO: actor and critic) and ``update(n)`` makes
    ``n`` forward/backward/Adam steps on the same networks and batch shapes (PPO: actor and
    critic together, as both libraries train them; DQN: the online network, with the target
    network's targets), and the numbers of each in a benchmark run.

    Raw Gymnasium steps, in a bare PyTorch loop (no buffers, no losses beyond a trivial one,
    no logging, no library): no eager PyTorch implementation can beat this by much. SAC has its
    own: ``sac_floor_seconds``. ``n_envs`` overrides the env copies (PPO 8, DQN 1).
    """
    import gymnasium as gym
    from torch import nn

    def mlp(out: int, hidden: int, act) -> nn.Sequential:
        return nn.Sequential(nn.Linear(4, hidden), act(), nn.Linear(hidden, hidden), act(),
                             nn.Linear(hidden, out))

    ppo = algo == "ppo"
    if ppo:  # actor and critic, both used to act and both trained by one optimizer
        copies, batch, grad_steps = 8, 256, BUDGET[algo] // 256 * 20
        nets = nn.ModuleList([mlp(2, 64, nn.Tanh), mlp(1, 64, nn.Tanh)])
        trained = nets.parameters()
    else:  # the online network acts and is trained; the target network gives targets
        copies, batch, grad_steps = 1, 64, (BUDGET[algo] - 1000) // 256 * 128
        nets = nn.ModuleList([mlp(2, 256, nn.ReLU), mlp(2, 256, nn.ReLU)])
        trained = nets[0].parameters()
    copies = n_envs or copies
    env = gym.make_vec(ENV[algo], num_envs=copies, vectorization_mode="vector_entry_point")
    optimizer = torch.optim.Adam(trained, fused=True)
    obs, _ = env.reset(seed=0)
    x = torch.randn(batch, 4)

    def act(n: int) -> None:
        nonlocal obs
        with torch.no_grad():
            for _ in range(n):
                observation = torch.from_numpy(obs)
                action = nets[0](observation).argmax(-1).numpy()
                if ppo:
                    nets[1](observation)
                obs, *_ = env.step(action)

    def update(n: int) -> None:
        for _ in range(n):
            if ppo:
                loss = nets[0](x).max(-1).values.mean() + nets[1](x).square().mean()
            else:
                with torch.no_grad():
                    target = nets[1](x).max(-1).values
                loss = (nets[0](x).max(-1).values - target).square().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    return act, update, BUDGET[algo] // copies, grad_steps


def discrete_floor_phases(algo: str) -> tuple[float, float]:
    """Seconds ``(acting, gradient steps)`` of ``discrete_floor(algo)``'s whole run."""
    act, update, acting_steps, grad_steps = discrete_floor(algo)
    start = time.perf_counter()
    act(acting_steps)
    acting = time.perf_counter()
    update(grad_steps)
    return acting - start, time.perf_counter() - acting


def sac_floor_seconds() -> float:
    """SAC's floor on Pendulum-v1: the same env steps with a no-grad actor forward each
    (random actions for the first 1,000, as both libraries), then one gradient step per env
    step after the first 1,000, on the same networks (actor 3-256-256-2, twin critics
    4-256-256-1 with Polyak targets, the temperature) and batch size (256): the critic
    regression to a no-grad soft target, the actor loss through the critics (gradients into
    the actor only), the temperature loss, three Adam steps and the Polyak update. Tensors
    are random; no buffer, no logging, no library.
    """
    import gymnasium as gym
    from torch import nn

    def mlp(inp: int, out: int) -> nn.Sequential:
        return nn.Sequential(nn.Linear(inp, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                             nn.Linear(256, out))

    def policy(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = actor(obs).chunk(2, -1)
        std = log_std.clamp(-20, 2).exp()
        u = mean + std * torch.randn_like(mean)
        action = torch.tanh(u)
        log_prob = (-0.5 * ((u - mean) / std).square() - std.log() - 0.5 * math.log(2 * math.pi)
                    - torch.log1p(-action.square() + 1e-6)).sum(-1)
        return action, log_prob

    def twin(net: nn.ModuleList, obs: torch.Tensor, action: torch.Tensor):
        x = torch.cat((obs, action), -1)
        return net[0](x).squeeze(-1), net[1](x).squeeze(-1)

    steps, start_size, batch = BUDGET["sac"], 1000, 256
    actor, critic = mlp(3, 2), nn.ModuleList([mlp(4, 1), mlp(4, 1)])
    target = nn.ModuleList([mlp(4, 1), mlp(4, 1)])
    target.load_state_dict(critic.state_dict())
    log_alpha = torch.zeros((), requires_grad=True)
    optimizers = [torch.optim.Adam(p, lr=1e-3, fused=True)
                  for p in (actor.parameters(), critic.parameters(), [log_alpha])]
    critic_params, target_params = list(critic.parameters()), list(target.parameters())
    env = gym.make("Pendulum-v1")
    obs, _ = env.reset(seed=0)
    s, a, r, s2 = torch.randn(batch, 3), torch.rand(batch, 1) * 2 - 1, torch.randn(batch), \
        torch.randn(batch, 3)
    start = time.perf_counter()
    for step in range(steps):
        if step < start_size:
            action = env.action_space.sample()
        else:
            with torch.no_grad():
                action = 2.0 * policy(torch.from_numpy(obs).float().unsqueeze(0))[0][0].numpy()
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
        if step < start_size:
            continue
        alpha = log_alpha.detach().exp()
        with torch.no_grad():
            next_action, next_log_prob = policy(s2)
            q_next = torch.min(*twin(target, s2, next_action)) - alpha * next_log_prob
            y = r + 0.99 * q_next
        q1, q2 = twin(critic, s, a)
        critic_loss = (q1 - y).square().mean() + (q2 - y).square().mean()
        critic_loss.backward()
        action, log_prob = policy(s)
        actor_loss = (alpha * log_prob - torch.min(*twin(critic, s, action))).mean()
        torch.autograd.backward(actor_loss, inputs=list(actor.parameters()))
        temperature_loss = -(log_alpha * (log_prob.detach() - 1.0)).mean()
        temperature_loss.backward()
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            torch._foreach_lerp_(target_params, critic_params, 0.005)
    return time.perf_counter() - start


# -- the table --------------------------------------------------------------------------------
def summarize(runs: list[Run], floors: dict[str, list[float]],
              paired: dict[str, list[float]]) -> str:
    """The table: each library's fastest runs against the fastest floors, and the median of
    looprl's ratio to the floor measured right after each of its runs (``paired``), which
    the machine's swings between repeats move less."""
    rows = []
    libraries = ("looprl", "baseline", "sb3")
    for algo in [a for a in BUDGET if any(r.algorithm == a for r in runs)]:
        by_lib = {lib: [r for r in runs if r.library == lib and r.algorithm == algo]
                  for lib in libraries}
        sps = {lib: np.mean([r.steps_per_second for r in rs]) if rs else math.nan
               for lib, rs in by_lib.items()}
        tts, solved = {}, {}
        for lib, rs in by_lib.items():
            times = [r.time_to(SOLVED[algo]) for r in rs]
            solved[lib] = sum(math.isfinite(t) for t in times)
            tts[lib] = np.nanmean(times) if solved[lib] else math.nan
        n = len(by_lib["looprl"])
        floor = BUDGET[algo] / np.mean(floors[algo])
        baseline = "-" if math.isnan(sps["baseline"]) else (
            f"{sps['baseline']:,.0f} ({sps['looprl'] / sps['baseline']:.2f}x)")
        rows.append([
            f"{algo.upper()} ({ENV[algo]})", f"{BUDGET[algo]:,}",
            f"{sps['looprl']:,.0f}", baseline,
            "-" if math.isnan(sps["sb3"]) else
            f"{sps['sb3']:,.0f} ({sps['looprl'] / sps['sb3']:.2f}x)",
            f"{floor:,.0f}", f"{100 * sps['looprl'] / floor:.0f}%",
            f"{100 * np.median(paired[algo]):.0f}%",
            "-" if math.isnan(sps["sb3"]) else f"{100 * sps['sb3'] / floor:.0f}%",
            f"{tts['looprl']:.1f} ({solved['looprl']}/{n})",
            "-" if math.isnan(sps["sb3"]) else f"{tts['sb3']:.1f} ({solved['sb3']}/{n})",
        ])
    header = ["algo (env)", "steps", "looprl steps/s", "baseline steps/s (new/base)",
              "SB3 steps/s (looprl/SB3)", "floor steps/s", "looprl % of floor",
              "looprl % of floor (median of repeats)", "SB3 % of floor", "looprl s to solved",
              "SB3 s to solved"]
    return format_table(rows, header)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--algos", nargs="+", default=["ppo", "dqn", "sac"], choices=list(BUDGET))
    parser.add_argument("--baseline", default="098f297",
                        help="git revision whose looprl rows also run ('none': skip)")
    parser.add_argument("--eval-every", type=int, default=2048)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs per library and seed, interleaved; the fastest counts")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for all")
    parser.add_argument("--looprl-only", action="store_true",
                        help="(internal) run the looprl rows only and print them as JSON")
    parser.add_argument("--output", default=str(Path(__file__).parent / "results" / "speed.md"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.looprl_only:
        for algo in args.algos:
            for seed in args.seeds:
                print(json.dumps(asdict(looprl_run(algo, seed, args.eval_every,
                                                   args.eval_episodes))), flush=True)
        return
    checkout = baseline_checkout(args.baseline) if args.baseline != "none" else None
    fns = {"looprl": lambda a, s: looprl_run(a, s, args.eval_every, args.eval_episodes)}
    if checkout is not None:
        fns["baseline"] = lambda a, s: baseline_run(checkout, a, s, args)
    if importlib.util.find_spec("stable_baselines3") is not None:
        fns["sb3"] = lambda a, s: sb3_run(a, s, args.eval_every, args.eval_episodes)
    else:
        print("stable_baselines3 is not installed (pip install -e '.[bench]'): "
              "the SB3 columns stay empty", flush=True)
    runs, floors = [], {algo: [] for algo in args.algos}
    paired: dict[str, list[float]] = {algo: [] for algo in args.algos}
    for algo in args.algos:
        for seed in args.seeds:
            best: dict[str, Run] = {}
            floor = math.inf
            for repeat in range(args.repeats):  # interleaved, so that all see the same load
                for library, fn in fns.items():
                    run = fn(algo, seed)
                    if library == "looprl":
                        ours = run.steps_per_second
                    print(f"{library:8s} {algo} seed {seed} #{repeat}: "
                          f"{run.steps_per_second:8,.0f} steps/s, best eval {run.best:.1f}, "
                          f"s to {SOLVED[algo]:.0f}: {run.time_to(SOLVED[algo]):.1f}", flush=True)
                    if library not in best or run.seconds < best[library].seconds:
                        best[library] = run
                seconds = floor_seconds(algo)
                print(f"floor    {algo} seed {seed} #{repeat}: {BUDGET[algo] / seconds:8,.0f} "
                      "steps/s", flush=True)
                floor = min(floor, seconds)
                paired[algo].append(ours / (BUDGET[algo] / seconds))
            runs.extend(best.values())
            floors[algo].append(floor)
    table = summarize(runs, floors, paired)
    print()
    print(table)
    machine = f"{platform.processor() or platform.machine()}, torch {torch.__version__}, " \
              f"{args.threads} torch thread(s), seeds {args.seeds}, repeats {args.repeats}"
    base = f"baseline: looprl at {args.baseline}, same run and interpreter" if checkout else \
        "no baseline run"
    solved = ", ".join(f"{ENV[a]} {SOLVED[a]:g}" for a in args.algos)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(
        f"# looprl vs SB3 vs the bare-PyTorch floor\n\n{machine}; {base}\n\n{table}\n\n"
        f"% of floor: steps/s over the floor's steps/s (``floor_seconds``, measured after each "
        f"seed's runs). With --repeats {args.repeats}: each library's fastest of that many "
        f"interleaved runs per seed (the machine is shared); the median of repeats: of "
        f"looprl's ratios to the floor measured right after each of its runs. Solved: first "
        f"evaluation (10 episodes) at mean return >= {solved}.\n"
    )
    print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
