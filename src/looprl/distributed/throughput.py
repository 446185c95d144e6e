"""``Throughput``: each poll's ``throughput.csv`` rows, ``runtime/*`` scalars and the progress
line's summary, which names the bottleneck. No Ray import here."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from looprl.experiments.run_files import append_lines

__all__ = ["BUSY", "THROUGHPUT_HEADER", "Throughput", "bottleneck"]

THROUGHPUT_HEADER = ("time,worker,frames_per_s,env_share,inference_share,batch_rows,lag,"
                     "dropped,rows_per_s,wait_share")

#: a side that waits for the other less than this share of its time is not held up by it
BUSY = 0.2

#: weight of the latest poll in the progress line's (smoothed) values
SMOOTHING = 0.3


def bottleneck(actors_wait: float, trainer_waits: float) -> str:
    """Name what limits a run from the shares of time the actors and the trainer wait."""
    if math.isnan(actors_wait) or math.isnan(trainer_waits):
        return "bottleneck: -"
    if max(actors_wait, trainer_waits) < BUSY:
        return "bottleneck: none (actors and trainer busy)"
    if actors_wait >= trainer_waits:
        return f"bottleneck: trainer (actors wait for it {actors_wait:.0%} of the time)"
    return f"bottleneck: actors (the trainer waits for samples {trainer_waits:.0%} of the time)"


def _share(seconds: float, of: float) -> float:
    return min(seconds / of, 1.0)


class Throughput:
    """Writes each poll's throughput to ``path`` and ``log`` (``None``: skip); smooths ``line``."""

    def __init__(self, path: Path | None, log: Any) -> None:
        self.path, self.log = path, log
        self.latest: dict[str, float] = dict.fromkeys(
            ("env_steps_per_s", "trained_rows_per_s", "policy_lag", "actors_wait",
             "trainer_waits"), math.nan)
        self.restarts = 0

    def record(self, stats: dict[str, dict[str, Any]], trainers: dict[str, dict[str, Any]],
               seconds: float, restarts: int, last: bool = False) -> None:
        """Record one poll: ``stats`` by worker name, the trainers' (rank 0 first), ``seconds``
        since the last poll and the restarts so far; ``last``: no wait shares."""
        self.restarts = restarts
        if seconds <= 0:
            return
        actors = [s for n, s in stats.items() if n.startswith("actor")]
        polled = {"env_steps_per_s": sum(s["frames"] for s in actors) / seconds}
        if trainers:
            lags = next(iter(trainers.values()))["lags"]
            polled["trained_rows_per_s"] = sum(t.get("rows", 0) for t in trainers.values()
                                               ) / seconds
            if lags:
                polled["policy_lag"] = float(np.mean(lags))
        stepping = [s for s in actors if s["frames"]]
        if stepping and not last:
            polled["actors_wait"] = float(np.mean([_share(s.get("put_seconds", 0.0), seconds)
                                                   for s in stepping]))
            if trainers:
                polled["trainer_waits"] = float(np.mean(
                    [_share(t.get("wait_seconds", 0.0), seconds) for t in trainers.values()]))
        self._smooth(polled)
        self._write_rows(stats, trainers, seconds)

    def _smooth(self, polled: dict[str, float]) -> None:
        """Keep the moving averages; log this poll's values."""
        for key, value in polled.items():
            if math.isnan(value):
                continue
            old = self.latest[key]
            self.latest[key] = value if math.isnan(old) else (
                SMOOTHING * value + (1 - SMOOTHING) * old)
            if self.log is not None:
                self.log.add_runtime(key, value)
        if self.log is not None:
            self.log.add_runtime("restarts", self.restarts)

    def _write_rows(self, stats: dict[str, dict[str, Any]],
                    trainers: dict[str, dict[str, Any]], seconds: float) -> None:
        """One ``throughput.csv`` row per actor, evaluation actor and trainer."""
        if self.path is None:
            return
        now = f"{time.time():.1f}"
        rows = [n for name, s in stats.items() if name.startswith("policy")
                for n in s["batch_rows"]]
        first = next(iter(trainers.values()), {"lags": [], "dropped": ""})
        lags = first["lags"]
        shared = [f"{np.mean(rows):.1f}" if rows else "", f"{np.mean(lags):.2f}" if lags else "",
                  str(first["dropped"])]
        lines = [",".join([now, name, f"{s['frames'] / seconds:.1f}",
                           f"{_share(s['env_seconds'], seconds):.3f}",
                           f"{_share(s['inference_seconds'], seconds):.3f}", *shared, "",
                           f"{_share(s.get('put_seconds', 0.0), seconds):.3f}"])
                 for name, s in stats.items() if name.startswith(("actor", "eval"))]
        lines += [",".join([now, name, "", "", "", "", shared[1], shared[2],
                            f"{t.get('rows', 0) / seconds:.1f}",
                            f"{_share(t.get('wait_seconds', 0.0), seconds):.3f}"])
                  for name, t in trainers.items()]
        append_lines(self.path, [line + "\n" for line in lines])

    def line(self) -> str:
        """The progress line's summary."""
        latest = self.latest

        def show(key: str, form: str = ",.0f") -> str:
            return "-" if math.isnan(latest[key]) else format(latest[key], form)

        return (f"ray: {show('env_steps_per_s')} env steps/s, {show('trained_rows_per_s')} "
                f"trained rows/s, policy lag {show('policy_lag', '.1f')}, restarts "
                f"{self.restarts}, {bottleneck(latest['actors_wait'], latest['trainer_waits'])}")
