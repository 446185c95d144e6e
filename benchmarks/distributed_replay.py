"""The replay rows of ``distributed_throughput.py``: DQN on CartPole-v1 and SAC on Pendulum-v1,
each on the local runtime and on Ray (1 actor of 1 env copy, asynchronous, the preset's own
update ratio), in the same run; and a short learning check of both runtimes.

* speed: the built preset (``classic_control.dqn``, ``continuous.sac``) trains through
  ``make_experiment(...).train`` (local) and ``DistributedRun(preset, RuntimeConfig(actors=1,
  envs_per_actor=1, groups=1))`` (Ray, as ``looprl run ... runtime=ray runtime.actors=1``), each
  measured over ``seconds`` once it has ``warm`` env steps (past the replay's start size).
  Both train on the preset's schedule: DQN 128 gradient steps every 256 env steps (0.5 per env
  step), SAC one per env step; the Ray trainer holds the actor back when it runs more than
  ``max_ahead`` (256) env steps ahead of the schedule.
* learning: ``distributed_learning.py``'s runs of one seed (the same preset, bar and budget):
  the env steps each runtime needs to reach the bar.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distributed_learning import FAMILIES, at, local_run, ray_run
from distributed_throughput import (
    Row,
    _actor_shares,
    close_window,
    cores_used,
    cpu_snapshot,
    open_window,
)
from harness import format_table
from looprl.distributed import DistributedRun, RuntimeConfig
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment


@dataclass(frozen=True)
class ReplaySetup:
    """One replay preset on one environment."""

    key: str  # distributed_learning's family: "dqn" or "sac"
    ratio: float  # the preset's gradient steps per env step (after its start size)
    warm: int  # env steps before the measurement (past the start size)

    @property
    def env(self) -> str:
        return FAMILIES[self.key].env

    def preset(self) -> Any:
        return FAMILIES[self.key].preset(0)


SETUPS = {"dqn": ReplaySetup("dqn", 0.5, 1_536), "sac": ReplaySetup("sac", 1.0, 1_200)}


def local(setup: ReplaySetup, seconds: float, logdir: str) -> Row:
    """The local preset training through the experiment loop."""
    env = GymEnvironment(setup.env)
    experiment = make_experiment(setup.preset(), env, train_steps=10**7, logdir=logdir,
                                 quiet=True, verbose=False, seed=0)
    experiment.train(frames=setup.warm)
    first, before, start = experiment.frame, cpu_snapshot(), time.perf_counter()
    while time.perf_counter() - start < seconds:
        experiment.train(frames=experiment.frame + 64)
    elapsed = time.perf_counter() - start
    cores = cores_used(before, cpu_snapshot(), elapsed)
    experiment.close()
    steps = experiment.frame - first
    return Row(f"local {setup.key} preset", steps, elapsed,
               {"train_steps": steps * setup.ratio / elapsed, "cores": cores})


def distributed(setup: ReplaySetup, seconds: float, logdir: str) -> Row:
    """The same preset on Ray, 1 actor x 1 env, asynchronous."""
    window: dict[str, Any] = {}

    def measure(run: DistributedRun) -> None:
        now, frames, steps = time.perf_counter(), run.result.frames, run.result.train_steps
        if open_window(window, now, frames, steps, frames >= setup.warm) and (
                now - window["start"] >= seconds):
            close_window(window, now, frames, steps)
            window["steps"] /= window["seconds"]  # (trainer steps per second)
            run.frames = 0  # ends the run after this poll

    runtime = RuntimeConfig(actors=1, envs_per_actor=1, groups=1)  # (as looprl run's)
    run = DistributedRun(setup.preset(), runtime, frames=10**7, logdir=logdir, seed=0,
                         name=f"ray-{setup.key}", quiet=True)
    result = run.run(measure)
    extra = _actor_shares(Path(result.log_dir) / "throughput.csv", window["wall"])
    extra.update(_waits(Path(result.log_dir) / "throughput.csv", window["wall"]))
    extra.update(train_steps=window["steps"], cores=window["cores"])
    return Row(f"Ray {setup.key}, 1 actor x 1 env, async", window["frames"], window["seconds"],
               extra)


def _waits(path: Path, since: float) -> dict[str, float]:
    """Mean ``wait_share`` of the actor (waiting for the trainer to accept its samples) and
    of the trainer (waiting for samples) in ``throughput.csv`` since ``since``."""
    import csv

    with open(path, encoding="utf-8") as file:
        rows = [r for r in csv.DictReader(file) if float(r["time"]) >= since]

    def mean(worker: str) -> float:
        values = [float(r["wait_share"]) for r in rows
                  if r["worker"].startswith(worker) and r["wait_share"]]
        return sum(values) / len(values) if values else math.nan

    return {"actor_wait": mean("actor"), "trainer_wait": mean("trainer")}


def measure(seconds: float, tmp: str, keys: list[str], repeats: int
            ) -> tuple[list[list[str]], list[str]]:
    """The speed table's rows (local then Ray, ``repeats`` times, for each of ``keys``: the
    pairs see about the same load) and a sentence per key: Ray's mean rate against local's."""
    body, verdicts = [], []
    for key in keys:
        setup = SETUPS[key]
        rates: dict[str, list[float]] = {"local": [], "ray": []}
        for repeat in range(repeats):
            print(f"{key} {repeat + 1}/{repeats} ...", flush=True)
            load = os.getloadavg()[0]
            mine = local(setup, seconds, f"{tmp}/local-{key}-{repeat}")
            ray = distributed(setup, seconds, f"{tmp}/ray-{key}-{repeat}")
            rates["local"].append(mine.rate)
            rates["ray"].append(ray.rate)
            body += [_cells(setup, row, mine.rate, load) for row in (mine, ray)]
            print(f"  local {mine.rate:,.0f}, Ray {ray.rate:,.0f} env steps/s", flush=True)
        ratio = sum(rates["ray"]) / sum(rates["local"])
        verdicts.append(f"{key} ({setup.env}): Ray {sum(rates['ray']) / repeats:,.0f} env steps/s "
                        f"against local {sum(rates['local']) / repeats:,.0f}, **{ratio:.2f}x** "
                        f"(mean of {repeats} pairs)")
    return body, verdicts


def _cells(setup: ReplaySetup, row: Row, local_rate: float, load: float) -> list[str]:
    x, c = row.extra, row.extra["cores"]
    return [f"{row.name} ({setup.env})", f"{row.rate:,.0f}", f"{row.rate / local_rate:.2f}",
            f"{x['train_steps']:,.0f}", f"{x['train_steps'] / row.rate:.2f}",
            _share(x.get("env")), _share(x.get("inference")), _share(x.get("actor_wait")),
            _share(x.get("trainer_wait")),
            f"{c.get('actors', 0):.2f} / {c.get('trainer', 0):.2f} / {c.get('driver', 0):.2f}",
            f"{c.get('other', 0):.2f}", f"{load:.1f}"]


def _share(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.2f}"


SPEED_HEADER = ["run", "env steps/s", "x local", "gradient steps/s", "per env step",
                "actor env", "actor acting", "actor waits for trainer", "trainer waits",
                "cores: actor / trainer / driver", "other", "load"]


def speed_table(seconds: float, tmp: str, keys: list[str], repeats: int = 2) -> str:
    """The Markdown speed table of ``keys`` and its verdicts."""
    body, verdicts = measure(seconds, tmp, keys, repeats)
    return "\n".join([format_table(body, SPEED_HEADER), "", *(f"* {v}" for v in verdicts)])


def learning_table(keys: list[str], tmp: str) -> str:
    """Env steps to the bar, local and Ray, seed 0 (``distributed_learning.py``'s runs)."""
    body = []
    for key in keys:
        family = FAMILIES[key]
        print(f"learning {key} ...", flush=True)
        mine = local_run(family, 0, f"{tmp}/learn-local-{key}")
        ray = ray_run(family, 0, f"{tmp}/learn-ray-{key}")
        reached = [at(family, mine), at(family, ray)]
        body.append([f"{key} ({family.env})", f"{family.bar:g} over {family.window}",
                     *(("-" if math.isnan(r) else f"{r:,.0f}") for r in reached),
                     f"{mine['seconds']:.0f} / {ray['seconds']:.0f}",
                     f"{len(mine['frames']) and mine['frames'][-1] / mine['seconds']:,.0f} / "
                     f"{len(ray['frames']) and ray['frames'][-1] / ray['seconds']:,.0f}"])
    return format_table(body, ["preset", "bar (mean of last training returns)",
                               "env steps to it: local", "Ray", "seconds local / Ray",
                               "env steps/s local / Ray"])
