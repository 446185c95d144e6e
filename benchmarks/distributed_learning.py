"""Learning parity: distributed PPO (Ray runtime) against local PPO on CartPole-v1.

Issue 11's bar: distributed PPO reaches >= 475 on CartPole-v1 in 3 of 3 seeds, within 1.5x
the env steps local PPO needs. Both sides are judged the same way, from the run's own
``results.csv`` (``frame,episode,return``, one row per training episode): a run *reaches*
475 at the ``frame`` of the first episode after which the mean return of the last 20
training episodes is >= 475 (a run stops there, or at ``--budget`` env steps).

* local: ``looprl.presets.classic_control.ppo`` (rl-baselines3-zoo's CartPole-v1 settings:
  8 envs x 32 steps, 20 epochs of one 256-row minibatch, lr 1e-3 and clip 0.2 annealed
  linearly over the budget, gamma 0.98, lambda 0.8, no entropy bonus, gradient norm 0.5,
  separate 64x64 tanh actor and critic) through ``make_experiment(...).train``.
* one process: the distributed side's SRL policy and trainer in one synchronous loop
  (``EnvRunner`` + ``TrainerCore``, no Ray): it checks the mapping of the hyperparameters,
  apart from the runtime.
* distributed: ``DistributedRun`` with the same hyperparameters mapped onto the SRL policy
  and trainer (``actor-critic-separate``, trainer ``ppo``): ``segment_length`` x
  ``batch_streams`` = 32 x 8 = n_steps x n_envs, and the same two schedules over the same
  budget (``total_updates`` = budget / 256). ``RUNTIMES`` lists the runtime settings;
  ``--runtime`` picks the one of the main table, ``--try`` runs others on the first seed.

A seed passes when its distributed run reaches 475 within ``--ratio`` (1.5) times the mean
env steps the local runs need. Writes ``benchmarks/results/distributed_learning.md`` (and
``.png``, the curves) and exits non-zero when a seed fails.

    python benchmarks/distributed_learning.py [--seeds 0 1 2] [--budget 100000]
        [--runtime 1x4] [--try 2x4 2x4-lag1 2x4-vtrace]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import logging
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from distributed_throughput import start_local_ray  # noqa: E402
from harness import format_table  # noqa: E402
from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig  # noqa: E402
from looprl.distributed.collector import EnvRunner  # noqa: E402
from looprl.distributed.pipeline import TrainerCore  # noqa: E402
from looprl.environments import GymEnvironment  # noqa: E402
from looprl.experiments import make_experiment  # noqa: E402
from looprl.experiments.experiment import seed_everything  # noqa: E402
from looprl.presets.classic_control import ppo  # noqa: E402
from looprl.presets.classic_control.ppo import default_hyperparameters as ZOO  # noqa: E402
from looprl.presets.on_policy import linear  # noqa: E402

ENV = "CartPole-v1"
SOLVED = 475.0
WINDOW = 20  # training episodes in the mean that must reach SOLVED
RESULTS = Path(__file__).parent / "results"
ROWS = ZOO["n_envs"] * ZOO["n_steps"]  # rows per PPO update, both sides

#: runtime settings of the distributed side (actors x env copies per actor); every update
#: takes 8 segments of 32 steps (``batch_streams=8``): 256 rows, as the local preset
RUNTIMES: dict[str, dict] = {
    "2x4": dict(actors=2, envs_per_actor=4, segment_length=32),
    "1x8": dict(actors=1, envs_per_actor=8, segment_length=32),
    "1x4": dict(actors=1, envs_per_actor=4, segment_length=32),
    "1x2": dict(actors=1, envs_per_actor=2, segment_length=32),
    "2x4-lag0": dict(actors=2, envs_per_actor=4, segment_length=32, max_lag=0),
    "2x4-lag1": dict(actors=2, envs_per_actor=4, segment_length=32, max_lag=1),
    "2x4-vtrace": dict(actors=2, envs_per_actor=4, segment_length=32, vtrace=True),
    "1x4-sync": dict(actors=1, envs_per_actor=4, segment_length=32, sync=True),
    "2x4-sync": dict(actors=2, envs_per_actor=4, segment_length=32, sync=True),
    "1x8-sync": dict(actors=1, envs_per_actor=8, segment_length=32, sync=True),
    "2x4-q1": dict(actors=2, envs_per_actor=4, segment_length=32, queue_batches=1,
                   pull_interval=0.02),
}


def spec(budget: int, vtrace: bool = False) -> AlgorithmSpec:
    """The local preset's hyperparameters as an SRL policy and trainer."""
    return AlgorithmSpec(
        env=ENV, policy="actor-critic-separate",
        policy_args=dict(obs_dim={"obs": 4}, action_dim=2, hidden_dim=ZOO["hidden"],
                         num_layers=2, activation="tanh", lr=ZOO["lr"],
                         clip_grad=ZOO["clip_grad"]),
        trainer="ppo",
        trainer_args=dict(
            epochs=ZOO["epochs"], minibatch_size=ZOO["minibatch_size"],
            clip=linear(ZOO["clip"]), lr=linear(ZOO["lr"]), total_updates=budget / ROWS,
            value_coef=ZOO["value_coef"], entropy_coef=ZOO["entropy_coef"],
            discount_factor=ZOO["discount_factor"], gae_lambda=ZOO["lam"],
            value_clip=ZOO["value_clip"], vtrace=vtrace,
        ),
        buffer_args={"batch_streams": ROWS // 32},
    )  # fmt: skip


def episodes(log_dir: str) -> tuple[np.ndarray, np.ndarray]:
    """``(frames, returns)`` of every training episode in ``log_dir/results.csv``."""
    with open(Path(log_dir) / "results.csv", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    return (np.array([int(r["frame"]) for r in rows], dtype=np.int64),
            np.array([float(r["return"]) for r in rows]))


def reached(frames: np.ndarray, returns: np.ndarray) -> float:
    """The frame of the first episode after which the last ``WINDOW`` returns average >=
    ``SOLVED`` (``nan``: never)."""
    for i in range(WINDOW - 1, len(returns)):
        if returns[i - WINDOW + 1:i + 1].mean() >= SOLVED:
            return float(frames[i])
    return math.nan


def local_run(seed: int, budget: int, logdir: str) -> dict:
    """Local PPO until it reaches the bar (checked every 2,048 steps) or the budget."""
    seed_everything(seed)  # before the networks are built: their initial weights too
    env = GymEnvironment(ENV)
    preset = ppo.env(env).device("cpu").build()
    experiment = make_experiment(preset, env, train_steps=budget, logdir=logdir, quiet=True,
                                 verbose=False, seed=seed)
    log_dir = experiment.logger.log_dir
    start = time.perf_counter()
    for target in range(2048, budget + 2048, 2048):
        experiment.train(frames=min(target, budget))
        _, returns = episodes(log_dir)
        if len(returns) >= WINDOW and returns[-WINDOW:].mean() >= SOLVED:
            break
    seconds = time.perf_counter() - start
    experiment.close()
    frames, returns = episodes(log_dir)
    return dict(frames=frames, returns=returns, total=experiment.frame, seconds=seconds)


def sync_run(seed: int, budget: int) -> dict:
    """The distributed side's policy and trainer in one synchronous loop (``EnvRunner`` and
    ``TrainerCore`` as in ``test_pipeline``: no Ray, every sample trained on at lag 0)."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    algorithm = spec(budget)
    policy = algorithm.make_policy()
    core = TrainerCore(algorithm.make_trainer(policy), None, algorithm.buffer_args)
    runner = EnvRunner(algorithm.make_env, None, ROWS // 32, 32, None, seed=seed)
    frames, returns = [], []
    start = time.perf_counter()
    while runner.frames < budget:
        runner.step(0, policy.rollout(runner.request(0)), policy.version)
        for segment in runner.segments():
            core.put(segment)
        while core.ready():
            core.train_step()
        for episode in runner.pop_episodes():
            frames.append(runner.frames)
            returns.append(episode.ret)
        if len(returns) >= WINDOW and np.mean(returns[-WINDOW:]) >= SOLVED:
            break
    return dict(frames=np.array(frames), returns=np.array(returns), total=runner.frames,
                seconds=time.perf_counter() - start, lag=0.0)


def distributed_run(seed: int, budget: int, logdir: str, runtime: str) -> dict:
    """Distributed PPO until it reaches the bar (checked at every poll) or the budget."""
    options = dict(RUNTIMES[runtime])
    vtrace = options.pop("vtrace", False)

    def stop_when_solved(run: DistributedRun) -> None:
        returns = run.result.returns
        if len(returns) >= WINDOW and np.mean(returns[-WINDOW:]) >= SOLVED:
            run.frames = 0  # ends the run after this poll

    run = DistributedRun(spec(budget, vtrace), RuntimeConfig(**options), frames=budget,
                         logdir=logdir, seed=seed, name=f"ppo-ray-{seed}", quiet=True)
    result = run.run(stop_when_solved)
    frames, returns = episodes(result.log_dir)
    return dict(frames=frames, returns=returns, total=result.frames, seconds=result.seconds,
                train_steps=result.train_steps, lag=mean_lag(result.log_dir))


def mean_lag(log_dir: str) -> float:
    """Mean ``sample_lag`` (trainer version minus the version that made a trained sample)."""
    path = Path(log_dir) / "losses.csv"
    if not path.exists():  # the trainer never stepped
        return math.nan
    with open(path, encoding="utf-8") as file:
        lags = [float(r["value"]) for r in csv.DictReader(file) if r["name"] == "sample_lag"]
    return float(np.mean(lags)) if lags else math.nan


def plot(runs: dict[tuple[str, int], dict], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    for (side, seed), run in sorted(runs.items()):
        returns = run["returns"]
        mean = [returns[max(0, i - WINDOW + 1):i + 1].mean() for i in range(len(returns))]
        axes.plot(run["frames"], mean, label=f"{side} seed {seed}", color=f"C{seed % 10}",
                  linestyle="-" if side.startswith("distributed") else "--")
    axes.axhline(SOLVED, color="gray", linestyle=":", linewidth=1)
    axes.set(title=f"PPO on {ENV}: local vs distributed (Ray)", xlabel="env steps",
             ylabel=f"mean return of the last {WINDOW} training episodes")
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path)


def fmt(frames: float) -> str:
    return "-" if math.isnan(frames) else f"{frames:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=100_000,
                        help="env steps per run (both sides; the schedules anneal over it)")
    parser.add_argument("--runtime", default="1x4", choices=list(RUNTIMES),
                        help="the distributed runtime setting of the main table")
    parser.add_argument("--try", dest="tried", nargs="*", default=[], choices=list(RUNTIMES),
                        help="other runtime settings, run on the first seed only")
    parser.add_argument("--repeats", type=int, default=1,
                        help="distributed runs per seed (with several actors, runs of one "
                             "seed differ: segments arrive in varying order)")
    parser.add_argument("--ratio", type=float, default=1.5,
                        help="distributed may need this many times local's env steps")
    parser.add_argument("--results", default=str(RESULTS))
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(1)
    args.load_start = os.getloadavg()[0]
    runs: dict[tuple[str, int], dict] = {}
    import ray

    start_local_ray(num_cpus=max(4, os.cpu_count() or 1))  # shared by the distributed runs
    with ray_stopped(ray), tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            runs["local", seed] = local_run(seed, args.budget, f"{tmp}/local{seed}")
            runs["one process", seed] = sync_run(seed, args.budget)
            for repeat in range(args.repeats):
                runs[_repeat("distributed", repeat), seed] = distributed_run(
                    seed, args.budget, f"{tmp}/ray{seed}-{repeat}", args.runtime)
            print(seed, {side: fmt(reached(r["frames"], r["returns"]))
                         for (side, s), r in runs.items() if s == seed}, flush=True)
        tried = {}
        for runtime in args.tried:
            tried[runtime] = distributed_run(args.seeds[0], args.budget, f"{tmp}/try-{runtime}",
                                             runtime)
            print(runtime, fmt(reached(tried[runtime]["frames"], tried[runtime]["returns"])),
                  flush=True)
    write(args, runs, tried)


@contextlib.contextmanager
def ray_stopped(ray: Any) -> Iterator[None]:
    """Shut Ray down on the way out."""
    try:
        yield
    finally:
        ray.shutdown()


def write(args: argparse.Namespace, runs: dict, tried: dict) -> None:
    at = {key: reached(run["frames"], run["returns"]) for key, run in runs.items()}
    local_mean = float(np.mean([at["local", s] for s in args.seeds]))  # nan if one never did
    rows, passed = [], 0
    for seed in args.seeds:
        for repeat in range(args.repeats):
            side = _repeat("distributed", repeat)
            dist = runs[side, seed]
            ratio = at[side, seed] / local_mean
            ok = ratio <= args.ratio  # False for nan (never reached)
            passed += ok
            rows.append([seed if not repeat else f"{seed} (run {repeat + 1})",
                         fmt(at["local", seed]), fmt(at["one process", seed]),
                         fmt(at[side, seed]), "-" if math.isnan(ratio) else f"{ratio:.2f}",
                         f"{dist['lag']:.2f}", dist["train_steps"],
                         f"{runs['local', seed]['seconds']:.0f} / {dist['seconds']:.0f}",
                         "PASS" if ok else "FAIL"])
    distributed = [at[_repeat("distributed", r), s] for s in args.seeds
                   for r in range(args.repeats)]
    means = [float(np.mean([at[side, s] for s in args.seeds]))
             for side in ("local", "one process")] + [float(np.mean(distributed))]
    rows.append(["mean", *(fmt(m) for m in means), f"{means[2] / means[0]:.2f}", "", "", "", ""])
    header = ["seed", "local", "one process (no Ray)", f"distributed ({args.runtime})",
              "distributed / local mean", "sample lag", "trainer steps",
              "seconds local / distributed", f"<= {args.ratio}x"]
    first = args.seeds[0]
    tuning = [[name, ", ".join(f"{k}={v}" for k, v in RUNTIMES[name].items()),
               fmt(reached(run["frames"], run["returns"])),
               f"{reached(run['frames'], run['returns']) / local_mean:.2f}",
               f"{run['lag']:.1f}", run["train_steps"], f"{run['total']:,}"]
              for name, run in [(args.runtime, runs["distributed", first]), *tried.items()]]
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    plot({k: v for k, v in runs.items() if k[0] != "one process"},
         results / "distributed_learning.png")
    load = os.getloadavg()
    command = " ".join(["python benchmarks/distributed_learning.py", *sys.argv[1:]])
    lines = [
        f"# Learning parity: distributed vs local PPO on {ENV}",
        "",
        f"`{command}` on {datetime.date.today()}: {platform.machine()}, {os.cpu_count()} CPU "
        f"cores, torch {torch.__version__}, one torch thread per process; load average "
        f"{args.load_start:.1f} at the start and {load[0]:.1f} / {load[1]:.1f} / "
        f"{load[2]:.1f} (1/5/15 min) at the end (other sessions share this machine; how fast "
        "the trainer keeps up with the actors, and so the sample lag, depends on it).",
        "",
        f"Env steps at which each run reaches {SOLVED:.0f}: the `frame` (`results.csv`) of the "
        f"first training episode after which the mean return of the last {WINDOW} training "
        f"episodes is >= {SOLVED:.0f}; runs stop there or at {args.budget:,} env steps. All "
        "three train the local preset's rl-baselines3-zoo hyperparameters (8 streams x 32 "
        "steps = 256 rows per update, 20 epochs of one 256-row minibatch, lr 1e-3 and clip 0.2 "
        "annealed linearly over the budget, gamma 0.98, lambda 0.8, no entropy bonus, gradient "
        "norm 0.5, separate 64x64 tanh actor and critic): `local` is the local preset "
        "(`make_experiment(...).train`); `one process` is the distributed side's SRL policy "
        "(`actor-critic-separate`) and trainer (`ppo`) in one synchronous loop (`EnvRunner` + "
        "`TrainerCore`, as `test_pipeline`: no Ray, no lag); `distributed` is `DistributedRun` "
        f"with runtime `{args.runtime}` "
        f"({', '.join(f'{k}={v}' for k, v in RUNTIMES[args.runtime].items())}; each actor runs "
        "its own policy copy). A seed passes when distributed reaches the bar within "
        f"{args.ratio}x the mean env steps local needs over the seeds (seeds do not pair "
        "across runtimes: their random streams differ). `sample lag`: mean trainer versions "
        "between the policy that made a trained sample and the trained one.",
        "",
        format_table(rows, header),
        "",
        f"**{passed} of {len(rows) - 1} distributed runs pass.**",
        "",
        f"Runtime settings tried (seed {first}; ratio to the local mean above):",
        "",
        format_table(tuning, ["setting", "runtime", f"reaches {SOLVED:.0f} at", "ratio",
                              "sample lag", "trainer steps", "env steps run"]),
        "",
        "![curves](distributed_learning.png)",
        "",
    ]
    text = "\n".join(lines)
    (results / "distributed_learning.md").write_text(text)
    print(f"\n{text}\nwritten to {results}/distributed_learning.md and .png")
    if passed < len(rows) - 1:
        sys.exit(1)


def _repeat(side: str, repeat: int) -> str:
    return side if not repeat else f"{side} {repeat + 1}"


if __name__ == "__main__":
    main()
