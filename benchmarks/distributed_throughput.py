"""Throughput of the distributed (Ray) runtime against the local runtime, in one run: DQN on
CartPole-v1 and SAC on Pendulum-v1 (1 actor, asynchronous, the preset's update ratio;
``distributed_replay.py``, with a short learning check), and distributed PPO on CartPole-v1
and Atari Breakout against the raw env step rate and the local runtime.

For each PPO environment it measures, on this machine:

* raw env (the ceiling): the SRL env copies the actors step (``looprl.environments.make``),
  stepped with random actions, no policy: in one process, and in one process per core;
* actor loop alone: one actor's ``EnvRunner`` and its policy copy in this process (no Ray,
  no training): what one actor worker can do with a core to itself;
* trainer alone: ``Trainer.step`` on one batch in this process: the rows/s one trainer
  worker can learn from with a core to itself;
* local: the local PPO preset (``looprl.presets.classic_control.ppo`` /
  ``looprl.presets.atari.ppo``) training through ``make_experiment(...).train``;
* distributed: ``DistributedRun`` of the same PPO (same network, same rows per update, same
  epochs and minibatches) with 1, 2 and 4 actor workers, each with inference in the actor
  (``policy_workers=0``) and with one batched policy worker (``policy_workers=1``), and with
  1 and 2 actors whose trainer runs on 2 torch threads (``runtime.trainer_threads=2``). The 8
  env copies of the local preset are split between the actors.

Every rate is measured over ``--seconds`` (CartPole) or ``--breakout-seconds`` of wall time
after a warm-up (the local preset: after its first update; a distributed run: once the
actors have made the first batch), and every process runs one torch thread unless said
otherwise. A distributed run's row also
reports, from its ``throughput.csv`` and ``losses.csv`` over the same window: the fraction
of actor wall time spent stepping envs and waiting for actions, the policy worker's batch
rows, the trainer's steps/s and trained rows/s, the mean lag of the trained samples
(trainer versions), and how many cores each kind of process used (from ``/proc``: actors,
trainer, policy worker, Ray's own processes, and processes outside this benchmark).

Env steps are agent steps (on Breakout one step is 4 emulator frames). Writes
``benchmarks/results/distributed_throughput.md``.

    python benchmarks/distributed_throughput.py [--seconds 15] [--breakout-seconds 36]
        [--envs cartpole breakout] [--actors 1 2 4] [--policy-workers 0 1]
        [--trainer-threads 2] [--trainer-thread-actors 1 2] [--replay dqn sac]
        [--replay-seconds 20] [--replay-repeats 2] [--learning sac dqn]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import logging
import math
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from harness import format_table  # noqa: E402
from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "distributed_throughput.md"
ENV_COPIES = 8  # the local presets' n_envs; split between the actor workers


@dataclass
class Setup:
    """One environment's PPO, on both runtimes."""

    key: str
    name: str
    spec: AlgorithmSpec
    segment_length: int
    actions: int
    local: str  # "classic_control" or "atari"

    @property
    def rows(self) -> int:
        """Rows per PPO update (segment_length x batch_streams = n_steps x n_envs)."""
        return self.segment_length * self.spec.buffer_args["batch_streams"]


def ppo_spec(trainer_args: dict[str, Any], **spec: Any) -> AlgorithmSpec:
    """The ``AlgorithmSpec`` of PPO (``trainer_args``, 256-row minibatches) on batches of
    ``ENV_COPIES`` streams; ``spec``: its environment and policy."""
    return AlgorithmSpec(trainer="ppo", trainer_args={"minibatch_size": 256, **trainer_args},
                         buffer_args={"batch_streams": ENV_COPIES}, **spec)


def cartpole() -> Setup:
    """The classic-control preset's zoo hyperparameters (8 x 32 rows, 20 epochs)."""
    spec = ppo_spec(
        dict(epochs=20, clip=0.2, entropy_coef=0.0, discount_factor=0.98, gae_lambda=0.8),
        env="CartPole-v1", policy="actor-critic-separate",
        policy_args=dict(obs_dim={"obs": 4}, action_dim=2, hidden_dim=64, num_layers=2,
                         activation="tanh", lr=1e-3, clip_grad=0.5),
    )  # fmt: skip
    return Setup("cartpole", "CartPole-v1", spec, 32, 2, "classic_control")


def breakout() -> Setup:
    """The Atari preset's settings: Nature CNN shared by both heads (``num_layers=0``: the
    CNN's own 512-unit layer feeds the heads), 8 x 128 rows, 4 epochs of 256-row minibatches."""
    spec = ppo_spec(
        dict(epochs=4, clip=0.1, entropy_coef=0.01, discount_factor=0.99, gae_lambda=0.95),
        env="atari", env_args={"game": "Breakout", "clip_rewards": True},
        policy="actor-critic-shared",
        policy_args=dict(obs_dim={"obs": (4, 84, 84)}, action_dim=4, num_layers=0, lr=2.5e-4,
                         clip_grad=0.5),
    )  # fmt: skip
    return Setup("breakout", "Breakout", spec, 128, 4, "atari")


SETUPS = {"cartpole": cartpole, "breakout": breakout}


@dataclass
class Row:
    """One measured configuration."""

    name: str
    steps: int
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.steps / self.seconds if self.seconds else math.nan


def start_local_ray(num_cpus: int) -> None:
    """Start a local Ray instance on loopback only, shared by the runs of a benchmark (each
    ``DistributedRun`` then uses it and leaves it running; call ``ray.shutdown()``).

    ``address="local"``: a fresh instance even when another one started by ``ray start`` on
    this machine is named in ``/tmp/ray/ray_current_cluster``, which a bare ``ray.init()``
    (what ``DistributedRun`` calls) would try to join.
    """
    import ray

    from looprl.distributed.controller import local_instance_settings

    local_instance_settings()
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
             logging_level=logging.WARNING, log_to_driver=False)


# -- CPU accounting from /proc ------------------------------------------------------------------
ROLES = (("ray::ActorWorker", "actors"), ("ray::TrainerWorker", "trainer"),
         ("ray::PolicyWorker", "policy"), ("ray::ParameterServer", "server"))


def _role(command: str) -> str:
    for prefix, role in ROLES:
        if command.startswith(prefix):
            return role
    return "ray"


def cpu_snapshot() -> dict[int, tuple[str, float]]:
    """CPU seconds used so far by every process, with its role (empty without ``/proc``):
    this process is ``driver``, its descendants (the Ray instance it started) go by their
    process titles, and every other process (other users of the machine) is ``other``."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    processes = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                command = file.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", encoding="utf-8") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        processes[int(entry)] = (int(fields[1]), command,
                                 (int(fields[11]) + int(fields[12])) / tick)
    snapshot = {}
    for pid, (_, command, cpu) in processes.items():
        role = "other"
        ancestor = pid
        while ancestor in processes and ancestor > 1:
            if ancestor == os.getpid():
                role = "driver" if pid == ancestor else _role(command)
                break
            ancestor = processes[ancestor][0]
        snapshot[pid] = (role, cpu)
    return snapshot


def cores_used(start: dict, end: dict, seconds: float) -> dict[str, float]:
    """Cores each role used between two snapshots (new processes counted from zero)."""
    used: dict[str, float] = defaultdict(float)
    for pid, (role, cpu) in end.items():
        used[role] += cpu - start.get(pid, (role, 0.0))[1]
    return {role: value / seconds for role, value in used.items()}


# -- the ceiling and the parts alone -------------------------------------------------------------
def raw_env(setup_name: str, copies: int, seconds: float) -> tuple[int, float]:
    """Env steps of ``copies`` env copies stepped with random actions for ``seconds``."""
    setup = SETUPS[setup_name]()
    envs = [setup.spec.make_env() for _ in range(copies)]
    for i, env in enumerate(envs):
        env.seed(i)
        env.reset()
    rng = np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for env in envs:
            result = env.step([int(rng.integers(setup.actions))])[0]
            if result.done or result.truncated:
                env.reset()
            steps += 1
    return steps, time.perf_counter() - start


def raw_env_parallel(setup_name: str, copies: int, seconds: float, processes: int) -> Row:
    """``raw_env`` in ``processes`` processes at once (the copies split between them)."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        args = [(setup_name, max(1, copies // processes), seconds)] * processes
        results = pool.starmap(raw_env, args)
    return Row(f"raw env, {processes} processes", sum(s for s, _ in results),
               max(t for _, t in results))


def actor_alone(setup: Setup, seconds: float) -> Row:
    """One actor's loop (``EnvRunner`` + its policy's ``rollout``) in this process."""
    from looprl.collector import EnvRunner

    policy = setup.spec.make_policy()
    runner = EnvRunner(setup.spec.make_env, None, ENV_COPIES, setup.segment_length, None)
    inference, start = 0.0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        request = runner.request(0)
        begin = time.perf_counter()
        result = policy.rollout(request)
        inference += time.perf_counter() - begin
        runner.step(0, result, policy.version)
        runner.segments()
    elapsed = time.perf_counter() - start
    return Row("actor loop alone (EnvRunner + policy, no Ray)", runner.frames, elapsed,
               {"env": runner.env_seconds / elapsed, "inference": inference / elapsed})


def trainer_alone(setup: Setup, seconds: float) -> Row:
    """``Trainer.step`` on one collected batch, repeated, in this process."""
    from looprl.collector import EnvRunner
    from looprl.distributed.pipeline import trainer_core

    policy = setup.spec.make_policy()
    core = trainer_core(setup.spec, policy)  # (the trainer worker's Learner)
    runner = EnvRunner(setup.spec.make_env, None, ENV_COPIES, setup.segment_length, None)
    while not core.ready():
        runner.step(0, policy.rollout(runner.request(0)), policy.version)
        for segment in runner.segments():
            core.put(segment)
    batch = core.next_batch()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or steps < 2:
        core.learn(batch)
        steps += 1
    elapsed = time.perf_counter() - start
    return Row("trainer alone (Trainer.step, no Ray): rows/s it learns", steps * setup.rows,
               elapsed, {"train_steps": steps / elapsed})


# -- the two runtimes ----------------------------------------------------------------------------
def local(setup: Setup, seconds: float, threads: int, logdir: str) -> Row:
    """The local PPO preset training through the experiment loop, after one update."""
    from looprl.environments import AtariEnvironment, GymEnvironment
    from looprl.experiments import make_experiment

    if setup.local == "atari":
        from looprl.presets.atari import ppo

        env = AtariEnvironment("Breakout", seed=0)
    else:
        from looprl.presets.classic_control import ppo

        env = GymEnvironment(setup.name)
    torch.set_num_threads(threads)
    preset = ppo.env(env).device("cpu").build()
    experiment = make_experiment(preset, env, train_steps=10**9, logdir=logdir, quiet=True,
                                 verbose=False, seed=0)
    experiment.train(frames=setup.rows + 1)  # one rollout and its update
    first, before = experiment.frame, cpu_snapshot()
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        experiment.train(frames=experiment.frame + setup.rows)
    elapsed = time.perf_counter() - start
    cores = cores_used(before, cpu_snapshot(), elapsed)
    experiment.close()
    torch.set_num_threads(1)
    name = f"local PPO preset ({threads} torch thread{'s' * (threads > 1)})"
    return Row(name, experiment.frame - first, elapsed, {
        "train_steps": (experiment.frame - first) / setup.rows / elapsed, "lag": 0.0,
        "cores": cores})


def open_window(window: dict[str, Any], now: float, frames: int, steps: int,
                ready: bool) -> bool:
    """Whether a run's measurement ``window`` is open; it opens at the first poll that is
    ``ready`` (past the warm-up), with the frames, trainer steps and CPU times then."""
    if "start" in window:
        return True
    if ready:
        window.update(start=now, wall=time.time(), frames=frames, steps=steps,
                      cpu=cpu_snapshot())
    return False


def close_window(window: dict[str, Any], now: float, frames: int, steps: int) -> None:
    """Close ``window`` at ``now``: its seconds, and the frames, trainer steps and cores used
    within it."""
    elapsed = now - window["start"]
    window.update(seconds=elapsed, frames=frames - window["frames"],
                  steps=steps - window["steps"],
                  cores=cores_used(window["cpu"], cpu_snapshot(), elapsed))


def distributed(setup: Setup, actors: int, policy_workers: int, seconds: float,
                logdir: str, trainer_threads: int = 1) -> Row:
    """A ``DistributedRun`` measured over ``seconds`` once the actors made the first batch."""
    runtime = RuntimeConfig(actors=actors, envs_per_actor=ENV_COPIES // actors,
                            policy_workers=policy_workers, segment_length=setup.segment_length,
                            checkpoint_every=None, trainer_threads=trainer_threads)
    window: dict[str, Any] = {"changes": []}

    def measure(run: DistributedRun) -> None:
        now, frames, steps = time.perf_counter(), run.result.frames, run.result.train_steps
        if not open_window(window, now, frames, steps, frames >= setup.rows):
            return
        last = window["changes"][-1][1] if window["changes"] else window["steps"]
        if steps != last:
            window["changes"].append((now, steps))
        if now - window["start"] >= seconds:
            close_window(window, now, frames, steps)
            run.frames = 0  # ends the run after this poll

    run = DistributedRun(setup.spec, runtime, frames=10**12, logdir=logdir, seed=0,
                         name=f"{actors}a{policy_workers}p", quiet=True)
    result = run.run(measure)
    first_frame = result.frames - window["frames"]
    extra = _actor_shares(Path(result.log_dir) / "throughput.csv", window["wall"])
    extra.update(train_steps=_step_rate(window), cores=window["cores"],
                 lag=_mean_loss(Path(result.log_dir) / "losses.csv", "sample_lag", first_frame))
    name = f"distributed, {actors} actor{'s' * (actors > 1)} x {ENV_COPIES // actors} envs, " + (
        "batched policy worker" if policy_workers else "inference in each actor") + (
        f", trainer on {trainer_threads} torch threads" if trainer_threads > 1 else "")
    return Row(name, window["frames"], window["seconds"], extra)


def _runs(rows: dict[str, Row]) -> dict[str, Row]:
    """The distributed rows (keys ``{actors}a{policy workers}p[{trainer threads}t]``)."""
    return {k: r for k, r in rows.items() if k[0].isdigit()}


def _step_rate(window: dict[str, Any]) -> float:
    """Trainer steps/s in the window: timed from its first to its last step there when it
    stepped at least twice (steps of several seconds are too few to count over the window)."""
    changes = window["changes"]
    if len(changes) >= 2 and changes[-1][0] > changes[0][0]:
        return (changes[-1][1] - changes[0][1]) / (changes[-1][0] - changes[0][0])
    return window["steps"] / window["seconds"]


def _actor_shares(path: Path, since: float) -> dict[str, float]:
    """Mean env and inference shares of actor wall time, batch rows and drops since ``since``."""
    with open(path, encoding="utf-8") as file:
        rows = [r for r in csv.DictReader(file)
                if float(r["time"]) >= since and r["worker"].startswith("actor")]
    batch = [float(r["batch_rows"]) for r in rows if r["batch_rows"]]
    return {"env": float(np.mean([float(r["env_share"]) for r in rows])),
            "inference": float(np.mean([float(r["inference_share"]) for r in rows])),
            "batch_rows": float(np.mean(batch)) if batch else math.nan,
            "dropped": int(rows[-1]["dropped"] or 0) if rows else 0}


def _mean_loss(path: Path, name: str, since_frame: int) -> float:
    """Mean of the trainer statistic ``name`` in ``losses.csv`` from ``since_frame`` on."""
    if not path.exists():  # the trainer never stepped
        return math.nan
    with open(path, encoding="utf-8") as file:
        values = [float(r["value"]) for r in csv.DictReader(file)
                  if r["name"] == name and int(r["frame"]) >= since_frame]
    return float(np.mean(values)) if values else math.nan


# -- the report ----------------------------------------------------------------------------------
def measure(setup: Setup, args: argparse.Namespace, tmp: str) -> dict[str, Row]:
    """Every row of ``setup``'s table, by key."""
    rows: dict[str, Row] = {}
    part = args.part_seconds
    seconds = args.breakout_seconds if setup.key == "breakout" else args.seconds
    raw_steps, raw_seconds = raw_env(setup.key, ENV_COPIES, part)
    rows["raw"] = Row(f"raw env, {ENV_COPIES} copies in 1 process (ceiling)", raw_steps,
                      raw_seconds)
    cores = os.cpu_count() or 1
    if cores > 1:
        rows["raw_all"] = raw_env_parallel(setup.key, ENV_COPIES, part, cores)
    rows["actor"] = actor_alone(setup, part)
    rows["trainer"] = trainer_alone(setup, part)
    rows["local"] = local(setup, seconds, 1, f"{tmp}/local-{setup.key}")
    if setup.local == "atari" and cores > 1 and args.local_threads:
        rows["local_all"] = local(setup, seconds, cores, f"{tmp}/local2-{setup.key}")
    runs = [(actors, workers, 1) for workers in args.policy_workers for actors in args.actors
            if not workers or actors in args.policy_worker_actors]
    runs += [(actors, 0, threads) for threads in args.trainer_threads if threads > 1
             for actors in args.trainer_thread_actors]
    for actors, workers, threads in runs:
        key = f"{actors}a{workers}p" + (f"{threads}t" if threads > 1 else "")
        rows[key] = distributed(setup, actors, workers, seconds, f"{tmp}/{setup.key}-{key}",
                                threads)
        print(f"  {rows[key].name}: {rows[key].rate:,.0f} steps/s", flush=True)
    return rows


def table(rows: dict[str, Row], rows_per_update: int) -> str:
    """The Markdown table of one environment's rows."""
    local, raw = rows["local"].rate, rows["raw"].rate
    body = []
    for key, row in rows.items():
        x = row.extra
        cores = x.get("cores")
        used = "-" if cores is None else " / ".join(
            f"{cores.get(role, 0.0):.2f}" for role in ("actors", "trainer", "policy", "driver"))
        ray = "-" if cores is None else f"{cores.get('ray', 0) + cores.get('server', 0):.2f}"
        other = "-" if cores is None else f"{cores.get('other', 0.0):.2f}"
        trains = "train_steps" in x
        steps = key != "trainer"  # the trainer's row counts rows learned, not env steps
        body.append([
            row.name, f"{row.rate:,.0f}",
            f"{row.rate / local:.2f}" if trains and steps else "-",
            f"{row.rate / raw:.2f}" if steps else "-",
            f"{x['train_steps']:.2f}" if trains else "-",
            f"{x['train_steps'] * rows_per_update:,.0f}" if trains else "-",
            f"{x['train_steps'] * rows_per_update / local:.2f}" if trains else "-",
            _fmt(x.get("lag"), "{:.1f}"),
            f"{x['env']:.2f} / {x['inference']:.2f}" if "env" in x else "-",
            _fmt(x.get("batch_rows"), "{:.1f}"),
            used, ray, other,
        ])
    header = ["run", "env steps/s", "x local", "x raw", "trainer steps/s", "trained rows/s",
              "trained x local", "sample lag", "actor env / wait", "policy batch",
              "cores: actors / trainer / policy / driver", "Ray", "other"]
    return format_table(body, header)


def _fmt(value: Any, pattern: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else (
        pattern.format(value))


def bound(rows: dict[str, Row], cores: int) -> float:
    """Steps/s of a run that learns from every step it makes, from the actor's and the
    trainer's CPU costs per step measured alone: ``cores`` cores perfectly shared, and one
    trainer process (one torch thread) that learns at most its rate alone."""
    return min(cores / (1 / rows["actor"].rate + 1 / rows["trainer"].rate), rows["trainer"].rate)


def policy_worker_note(rows: dict[str, Row]) -> str:
    """A sentence comparing a batched policy worker with inference in the actors."""
    pairs = [(k, k[:-2] + "0p") for k in rows if k.endswith("1p") and k[:-2] + "0p" in rows]
    if not pairs:
        return ""
    batched, inline = rows[pairs[0][0]], rows[pairs[0][1]]
    x = batched.extra
    return (f"With a batched policy worker ({batched.name}: {batched.rate:,.0f} env steps/s "
            f"against {inline.rate:,.0f} with inference in each actor), every env step of a "
            "group waits for a Ray round trip to the policy worker; its batches held "
            f"{x['batch_rows']:.1f} rows on average, and the policy worker process used "
            f"{x['cores'].get('policy', 0):.2f} cores that the actors and the trainer lacked.")


def where_the_time_goes(setup: Setup, rows: dict[str, Row], cores: int) -> str:
    """Sentences on the best distributed configurations and where their time went."""
    runs = _runs(rows)
    if not runs:
        return ""
    local = rows["local"].rate
    fastest = max(runs.values(), key=lambda r: r.rate)
    learner = max(runs.values(), key=lambda r: r.extra["train_steps"])
    x, c = fastest.extra, fastest.extra["cores"]
    ray_cores = c.get("ray", 0) + c.get("server", 0)
    trained = x["train_steps"] * setup.rows
    limit = bound(rows, cores)
    return " ".join([
        f"Most env steps/s: {fastest.name}, {fastest.rate:,.0f} = {fastest.rate / local:.2f}x "
        f"the local preset ({local:,.0f}) and {fastest.rate / rows['raw'].rate:.2f}x the raw "
        f"env in one process; but its trainer learned from {trained:,.0f} rows/s "
        f"({trained / local:.2f}x local; {x['train_steps']:.2f} steps/s): "
        f"{max(0.0, 1 - trained / fastest.rate):.0%} of its steps were not trained on in "
        f"time and piled up in the trainer's buffer (trained samples were {x['lag']:.1f} "
        "policy versions old on average).",
        f"Most trained rows/s: {learner.name}, "
        f"{learner.extra['train_steps'] * setup.rows:,.0f} "
        f"({learner.extra['train_steps'] * setup.rows / local:.2f}x local).",
        f"Where the time went in the first: its actors spent {x['env']:.0%} of their wall "
        f"time stepping envs and {x['inference']:.0%} computing or waiting for actions (the "
        "rest: EnvRunner bookkeeping and sending segments); the actors used "
        f"{c.get('actors', 0):.2f} cores, the trainer {c.get('trainer', 0):.2f}, the policy "
        f"worker {c.get('policy', 0):.2f}, Ray's own processes {ray_cores:.2f} "
        f"and other users of the machine {c.get('other', 0):.2f}, of {cores}.",
        f"Alone on a core, an actor loop makes {rows['actor'].rate:,.0f} steps/s "
        f"({rows['actor'].extra['env']:.0%} env, {rows['actor'].extra['inference']:.0%} "
        f"inference) and a trainer learns from {rows['trainer'].rate:,.0f} rows/s "
        f"({rows['trainer'].rate / local:.2f}x the whole local loop): a run that learns from "
        f"every step it makes, with one trainer process on one torch thread, is bounded by "
        f"about {limit:,.0f} steps/s on {cores} cores ({limit / local:.2f}x local), however "
        "well it overlaps; `runtime.trainer_threads` lets the trainer use the cores the "
        "actors leave idle (the rows `trainer on N torch threads`).",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15,
                        help="measured wall time of each CartPole training configuration")
    parser.add_argument("--breakout-seconds", type=float, default=36,
                        help="the same on Breakout (PPO updates take seconds there)")
    parser.add_argument("--part-seconds", type=float, default=3,
                        help="measured wall time of each raw-env / actor / trainer row")
    parser.add_argument("--envs", nargs="*", default=list(SETUPS), choices=list(SETUPS),
                        help="PPO setups; none (`--envs` alone): the replay section only, "
                             "which replaces that section of --results and keeps the rest")
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--policy-workers", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--policy-worker-actors", type=int, nargs="+", default=[2, 4],
                        help="actor counts also run with a policy worker")
    parser.add_argument("--trainer-threads", type=int, nargs="+", default=[2],
                        help="also run inference-in-actor configurations with trainers on "
                             "this many torch threads (runtime.trainer_threads)")
    parser.add_argument("--trainer-thread-actors", type=int, nargs="+", default=[1, 2],
                        help="actor counts run with --trainer-threads")
    parser.add_argument("--no-local-threads", dest="local_threads", action="store_false",
                        help="skip the local Breakout run with one torch thread per core")
    parser.add_argument("--replay", nargs="*", default=["dqn", "sac"], choices=["dqn", "sac"],
                        help="replay presets measured local against Ray (distributed_replay.py)")
    parser.add_argument("--replay-seconds", type=float, default=20,
                        help="measured wall time of each replay row")
    parser.add_argument("--replay-repeats", type=int, default=2,
                        help="local/Ray pairs per replay preset (the machine's load varies)")
    parser.add_argument("--learning", nargs="*", default=["sac", "dqn"], choices=["dqn", "sac"],
                        help="replay presets whose env steps to distributed_learning.py's bar "
                             "are compared, local against Ray (seed 0)")
    parser.add_argument("--results", default=str(RESULTS))
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(1)
    import ray

    cores = os.cpu_count() or 1
    start_local_ray(num_cpus=8)  # Ray CPUs: 4 actors + policy worker + trainer fit
    sections = []
    load_start = os.getloadavg()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sections.append(replay_section(args, tmp))
            for name in args.envs:
                setup = SETUPS[name]()
                print(f"{setup.name} ...", flush=True)
                rows = measure(setup, args, tmp)
                text = table(rows, setup.rows)
                print(text, flush=True)
                sections.append((setup, rows, text))
    finally:
        ray.shutdown()
    write(args, cores, load_start, sections)


def replay_section(args: argparse.Namespace, tmp: str) -> str:
    """The Markdown of the replay presets' speed and learning tables (``distributed_replay``)."""
    import distributed_replay  # (it imports this module)

    lines = ["## Replay: DQN on CartPole-v1 and SAC on Pendulum-v1, 1 actor, asynchronous", "",
             distributed_replay.__doc__.split("\n\n", 1)[1].strip(), ""]
    if args.replay:
        lines += [f"Speed, {args.replay_seconds:g} s per row:", "",
                  distributed_replay.speed_table(args.replay_seconds, tmp, args.replay,
                                                 args.replay_repeats), ""]
    if args.learning:
        lines += ["Learning, seed 0 (`distributed_learning.py`'s bar and budget):", "",
                  distributed_replay.learning_table(args.learning, tmp), ""]
    print("\n".join(lines), flush=True)
    return "\n".join(lines)


def write(args: argparse.Namespace, cores: int, load_start: tuple, sections: list) -> None:
    load = os.getloadavg()
    command = " ".join(["python benchmarks/distributed_throughput.py", *sys.argv[1:]])
    if not args.envs and Path(args.results).exists():
        return replace_replay(Path(args.results), sections[0], (
            f"`{command}` on {datetime.date.today()}: {platform.machine()}, {cores} CPU cores, "
            f"torch {torch.__version__}, one torch thread per process; load average "
            f"{load_start[0]:.1f} at the start and {load[0]:.1f} / {load[1]:.1f} / "
            f"{load[2]:.1f} (1/5/15 min) at the end."))
    lines = [
        "# Distributed runtime throughput: the Ray runtime against the local runtime",
        "",
        f"`{command}` on {datetime.date.today()}: {platform.machine()}, {cores} CPU cores, "
        f"torch {torch.__version__}, one torch thread per process unless said otherwise; "
        f"load average {load_start[0]:.1f} at the start and {load[0]:.1f} / {load[1]:.1f} / "
        f"{load[2]:.1f} (1/5/15 min) at the end (other sessions share this machine: the "
        "`other` column is the cores their processes used during each measurement).",
        "",
        "PPO sections: env steps are agent steps (Breakout: 4 emulator frames each), "
        "measured over "
        f"{args.seconds:g} s (CartPole) or {args.breakout_seconds:g} s (Breakout) per training "
        f"configuration after a warm-up, {args.part_seconds:g} "
        "s per part. `x local` / `x raw`: ratio to the local preset (1 torch thread) / to the "
        "raw env in one process. `trainer steps/s`: PPO updates per second (timed from the "
        "first to the last update in the window); `trained rows/s`: that times the rows per "
        "update, i.e. the env steps per second the run actually learns from; `trained x "
        "local`: its ratio to the local preset, which learns from every step it makes. "
        "`sample lag`: mean policy versions between the version that made a trained sample "
        "and the trainer's (the trainer's `sample_lag` statistic). "
        "`actor env / wait`: fraction of actor wall time stepping envs / getting actions "
        "(`throughput.csv`'s env_share / inference_share). `policy batch`: rows per batched "
        "rollout. `cores`: CPU time / wall time of each kind of process (`/proc`); `Ray`: "
        "Ray's own processes and the parameter server; `driver`: the benchmark process (the "
        "controller, or the whole local run).",
        "",
        "Both sides of a PPO section train the same PPO: the same network, 8 env copies, "
        "the same rows per update and epochs. What differs: the local preset steps its 8 "
        "envs as one vector env (Breakout: one ale-py `AtariVectorEnv` of 8, emulated on "
        f"{min(cores, 8)} C++ threads) and anneals lr/clip; Breakout's local preset also "
        "wraps episodic-life (both clip rewards). The distributed actors step SRL env copies "
        "one by one (`looprl.environments.make`; Breakout: one single-env `AtariVectorEnv` "
        "each) through `EnvRunner`. `trainer on N torch threads`: `runtime.trainer_threads="
        "N`, the other workers on one thread.",
        "",
    ]
    lines += [sections.pop(0)]  # (the replay section)
    for setup, rows, text in sections:
        lines += [f"## PPO on {setup.name}", "", text, ""]
        lines += [where_the_time_goes(setup, rows, cores), "", policy_worker_note(rows), ""]
        if setup.local == "atari":
            lines += [_verdict(rows, setup.rows), ""]
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    Path(args.results).write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"written to {args.results}")


def replace_replay(path: Path, section: str, note: str) -> None:
    """Replace the replay section of the results file ``path`` (up to the next ``## ``
    heading) with ``section``, ``note`` (how it was measured) under its heading."""
    text = path.read_text()
    start = text.index("## Replay:")
    end = text.find("\n## ", start + 1)
    heading, body = section.split("\n", 1)
    new = f"{heading}\n\n{note}\n{body.rstrip()}\n"
    path.write_text(text[:start] + new + ("" if end < 0 else text[end:]))
    print(f"replay section replaced in {path}")


def _verdict(rows: dict[str, Row], rows_per_update: int) -> str:
    runs = list(_runs(rows).values())
    if not runs:
        return ""
    local = rows["local"].rate
    fastest = max(runs, key=lambda r: r.rate)
    learner = max(runs, key=lambda r: r.extra["train_steps"])
    trained = learner.extra["train_steps"] * rows_per_update

    def met(ratio: float, row: Row) -> str:
        return f"{'met' if ratio >= 1.5 else 'not met'} ({ratio:.2f}x: {row.name})"

    text = (f"**Target (Breakout: distributed >= 1.5x local on this machine): in env "
            f"steps/s {met(fastest.rate / local, fastest)}; in trained rows/s "
            f"{met(trained / local, learner)}.**")
    if "local_all" in rows:
        both = rows["local_all"].rate
        text += (f" Against the local preset on all cores ({both:,.0f} steps/s: its training "
                 f"uses every core too): {fastest.rate / both:.2f}x in env steps/s and "
                 f"{trained / both:.2f}x in trained rows/s. PPO on Breakout spends most of its "
                 "time training, so overlapping env stepping with it saves little; what "
                 "the distributed runtime adds on one machine is mostly the second core.")
    return text


if __name__ == "__main__":
    main()
