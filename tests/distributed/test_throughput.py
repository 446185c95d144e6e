"""What a distributed run shows beside a local run's lines (issue 44, 4), without Ray: the
throughput of each poll (``Throughput``: ``throughput.csv`` rows for actors and trainer, the
``runtime/*`` scalars, the progress line naming the bottleneck) and the dashboard of losses and
``hp/*`` a local run shows (``RunMonitor.status``)."""

from __future__ import annotations

import csv
import math
from typing import Any

import numpy as np
import pytest

from looprl.core import SampleBatch
from looprl.distributed.run_state import (
    THROUGHPUT_HEADER,
    DistributedResult,
    RunMonitor,
    SampleCounts,
    Throughput,
    bottleneck,
)
from looprl.distributed.trainer_worker import trained_rows


class _Log:
    """Records ``add_runtime`` calls, as ``ExperimentLogger`` writes ``runtime/*`` scalars."""

    def __init__(self) -> None:
        self.runtime: dict[str, list[float]] = {}

    def add_runtime(self, name: str, value: float) -> None:
        self.runtime.setdefault(name, []).append(float(value))


def _actor(frames: int, put: float, env: float = 0.3, inference: float = 0.1) -> dict[str, Any]:
    return {"frames": frames, "episodes": [], "env_seconds": env, "inference_seconds": inference,
            "put_seconds": put, "meta": [], "finished": False}


def _trainer(rows: int, wait: float, lags: list[float] | None = None) -> dict[str, Any]:
    return {"steps": 1, "lags": lags or [], "received": 0, "dropped": 0,
            "meta": {}, "hp": {}, "rows": rows, "wait_seconds": wait}


def test_bottleneck_names_the_side_the_other_waits_on() -> None:
    assert bottleneck(0.6, 0.1) == "bottleneck: trainer (actors wait for it 60% of the time)"
    assert bottleneck(0.05, 0.7) == ("bottleneck: actors (the trainer waits for samples 70% "
                                     "of the time)")
    assert bottleneck(0.1, 0.15) == "bottleneck: none (actors and trainer busy)"
    assert bottleneck(math.nan, 0.5) == "bottleneck: -"


def test_throughput_writes_trainer_rows_runtime_scalars_and_the_bottleneck(tmp_path) -> None:
    path = tmp_path / "throughput.csv"
    path.write_text(THROUGHPUT_HEADER + "\n")
    log = _Log()
    throughput = Throughput(path, log)
    stats = {"actor0": _actor(400, put=0.4), "actor1": _actor(600, put=0.2),
             "trainer": _trainer(rows=2048, wait=0.05, lags=[1.0, 3.0])}
    throughput.record(stats, {"trainer": stats["trainer"]}, seconds=0.5, restarts=1)
    with open(path, newline="") as file:
        rows = {row["worker"]: row for row in csv.DictReader(file)}
    assert set(rows) == {"actor0", "actor1", "trainer"}
    assert float(rows["trainer"]["rows_per_s"]) == 4096.0
    assert float(rows["trainer"]["wait_share"]) == 0.1
    assert float(rows["trainer"]["lag"]) == 2.0 and rows["trainer"]["frames_per_s"] == ""
    assert float(rows["actor0"]["wait_share"]) == 0.8 and float(rows["actor0"]["frames_per_s"]
                                                                 ) == 800.0
    assert {key: value for key, [value] in log.runtime.items()} == pytest.approx({
        "env_steps_per_s": 2000.0, "trained_rows_per_s": 4096.0, "policy_lag": 2.0,
        "actors_wait": 0.6, "trainer_waits": 0.1, "restarts": 1.0})
    line = throughput.line()
    assert line == ("ray: 2,000 env steps/s, 4,096 trained rows/s, policy lag 2.0, restarts 1, "
                    "bottleneck: trainer (actors wait for it 60% of the time)")
    # the poll that finds the budget spent (actors done, the trainer idle) and actors that did
    # not step say nothing of the bottleneck; rates move smoothly
    idle = {"actor0": _actor(0, 0.0, 0.0, 0.0), "actor1": _actor(0, 0.0, 0.0, 0.0),
            "trainer": _trainer(rows=0, wait=0.5)}
    throughput.record(idle, {"trainer": idle["trainer"]}, seconds=0.5, restarts=1)
    ending = {"actor0": _actor(10, 0.0, 0.0, 0.0), "trainer": _trainer(rows=0, wait=0.5)}
    throughput.record(ending, {"trainer": ending["trainer"]}, seconds=0.5, restarts=1, last=True)
    assert (throughput.latest["actors_wait"], throughput.latest["trainer_waits"]) == \
        pytest.approx((0.6, 0.1))
    assert np.isclose(throughput.latest["env_steps_per_s"], 0.3 * 20 + 0.7 * 0.7 * 2000)
    # the trainer waiting on samples while actors step: the actors are the bottleneck
    for _ in range(10):
        busy = {"actor0": _actor(300, 0.0), "trainer": _trainer(rows=100, wait=0.45)}
        throughput.record(busy, {"trainer": busy["trainer"]}, seconds=0.5, restarts=1)
    assert "bottleneck: actors (the trainer waits for samples 88% of the time)" in (
        throughput.line())


def test_run_monitor_status_shows_a_local_runs_losses_and_hp_then_the_throughput() -> None:
    monitor = RunMonitor(DistributedResult(), SampleCounts(), None, ["trainer"])
    assert monitor.status() == ["ray: - env steps/s, - trained rows/s, policy lag -, "
                                "restarts 0, bottleneck: -"]
    logged = [(None, "loss", "td", 1.0, 50), (None, "loss", "q", 0.3, 50),
              (None, "schedule", "q/lr", 0.1, 50), ("player_1", "loss", "q", 9.0, 50),
              (None, "loss", "td", 2.0, 100)]  # (``LossRecorder``'s rows, in their order)
    trainer = {**_trainer(rows=512, wait=0.0, lags=[1.0]), "logged": logged,
               "hp": {"hp/lr": 0.001, "hp/batch_size": 64}}
    monitor.record({"actor0": _actor(100, put=0.0), "trainer": trainer}, seconds=0.5)
    losses, hp, ray_line = monitor.status()
    assert losses == "loss/q 0.3  loss/td 2"  # each add_loss's last value, as a local run's
    assert hp == "hp/batch_size 64  hp/lr 0.001"  # the local dashboard's layout
    assert ray_line.startswith("ray: 200 env steps/s, 1,024 trained rows/s, policy lag 1.0")
    assert monitor.result.train_steps == 1


def test_trained_rows_counts_env_steps_on_policy_and_transitions_replayed() -> None:
    def batch(steps: int, columns: int) -> SampleBatch:
        return SampleBatch(obs={"obs": np.zeros((steps, columns, 4))},
                           reward=np.zeros((steps, columns)))

    assert trained_rows((batch(33, 8), None)) == 32 * 8  # on-policy [T + 1, B]
    assert trained_rows((batch(4, 64), np.arange(64))) == 64  # replayed: B transitions
    assert trained_rows((1, (batch(17, 2), None))) == 16 * 2  # an independent learner's agent
    assert trained_rows(object()) == 0
