"""What a distributed run has done so far: its result, the ``RunMonitor`` that records each poll
of the workers in it (``Throughput``: the throughput's part), and the controller's checkpoint,
whence ``DistributedRun(..., resume_from=RUN_DIR)`` continues. No Ray import here."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from looprl.core import Hyperparameter
from looprl.core.files import find_one, write_atomically
from looprl.core.suggest import log_worker_warnings
from looprl.distributed.config import AlgorithmSpec
from looprl.distributed.watch import save_spec
from looprl.experiments.agent_loggers import AgentLoggers
from looprl.experiments.logger import mean_return
from looprl.experiments.run_files import append_lines

__all__ = ["BUSY", "CONTROLLER_CHECKPOINT", "THROUGHPUT_HEADER", "TRAINER_CHECKPOINT",
           "ControllerCheckpoint", "ControllerState", "DistributedResult", "RunMonitor",
           "SampleCounts", "Throughput", "bottleneck", "find_controller_checkpoint",
           "open_run_log", "trainer_checkpoint_steps"]

CONTROLLER_CHECKPOINT = "controller_checkpoint.pt"
TRAINER_CHECKPOINT = "trainer_checkpoint.pt"  # (trainer 0's, which the controller writes)


@dataclass
class DistributedResult:
    """What a distributed run did. ``returns``: each training episode's (summed over agents);
    ``restarts``: ``(worker, frame)`` of each death the run recovered from; ``meta``: by
    worker, the latest value of each ``log/*`` key its meta components wrote."""

    frames: int = 0
    returns: list[float] = field(default_factory=list)
    train_steps: int = 0
    seconds: float = 0.0
    restarts: list[tuple[str, int]] = field(default_factory=list)
    eval_returns: list[float] = field(default_factory=list)
    log_dir: str | None = None
    nodes: dict[str, str] = field(default_factory=dict)
    trainer_steps: list[int] = field(default_factory=list)
    trainers_in_sync: bool | None = None
    meta: dict[str, dict[str, float]] = field(default_factory=dict)
    agent_returns: dict[str, list[float]] = field(default_factory=dict)
    resumed_at: int = 0  # (the frame a resumed run went on from; ``seconds`` are since then)

    @property
    def frames_per_second(self) -> float:
        """Env frames per second of the run (of a resumed run: since it resumed)."""
        return (self.frames - self.resumed_at) / self.seconds if self.seconds else 0.0

    def mean_return(self, last: int = 100) -> float:
        """Mean of the last ``last`` training returns (``nan`` before the first)."""
        return mean_return(self.returns, last)


@dataclass
class ControllerState:
    """What ``controller_checkpoint.pt`` holds."""

    logger: Any
    result: DistributedResult
    trainer_counts: dict[str, Any] = field(default_factory=dict)
    agent_loggers: dict[str, Any] = field(default_factory=dict)
    #: each actor's step hooks' state (``ActorWorker.components_state``), by actor index
    actors_meta: dict[int, Any] = field(default_factory=dict)
    budget: int = 0  # the frames its schedules were planned over (its first run's)
    #: each actor's and policy worker's exploration schedules' steps (``WorkerPool.schedules``)
    schedules: dict[str, list[int]] = field(default_factory=dict)
    #: the train step of the trainer checkpoint beside it (``None``: older, ``result``'s)
    checkpoint_steps: int | None = None
    #: the training actors' normalizers' statistics (``WorkerPool.normalization``; ``None``:
    #: none handed over, or older), which a resumed run's actors go on from
    normalization: list[Any] | None = None
    checkpoint_every: int | None = None  # the run's (``None``: older), which a resume keeps


def find_controller_checkpoint(run_dir: str | Path) -> Path:
    """The one ``controller_checkpoint.pt`` in or under ``run_dir``."""
    return find_one(run_dir, CONTROLLER_CHECKPOINT,
                    f"No distributed run to resume in {Path(run_dir)}: no {CONTROLLER_CHECKPOINT} "
                    "(runs write one every checkpoint_every frames)",
                    f"distributed runs in {Path(run_dir)}; resume one at a time")


def trainer_checkpoint_steps(state: Any) -> int:
    """The train step of the trainer checkpoint beside ``state`` (a ``ControllerState``); a
    one-line ``FileNotFoundError`` where it has one and the file is gone (was: the run went on
    silently with a new, untrained trainer)."""
    steps = getattr(state, "checkpoint_steps", None)  # (older: the steps counted then)
    steps = state.result.train_steps if steps is None else steps
    path = Path(state.logger.log_dir) / TRAINER_CHECKPOINT
    if steps and not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the run would go on from frame "
                                f"{state.result.frames} with a new, untrained trainer; put the "
                                "file back, or start a new run")
    return steps


class SampleCounts:
    """Each trainer's sample counts (received, dropped) across its processes and resumptions."""

    def __init__(self, saved: dict[str, Any] | None = None) -> None:
        self._current: dict[str, Any] = dict(saved or {})
        self._earlier: dict[str, Any] = {}

    def polled(self, name: str, received: int, dropped: int) -> None:
        """Trainer ``name``'s current process's counts."""
        self._current[name] = np.array([received, dropped])

    def started(self, name: str, counts: Any) -> None:
        """Trainer ``name`` starts a new process from ``counts`` (its checkpoint's)."""
        start = np.array(counts)
        self._earlier[name] = self._earlier.get(name, 0) + self._current.get(name, start) - start
        self._current[name] = start

    def total(self, names: list[str]) -> tuple[int, int]:
        """Samples received and dropped by the trainers ``names``."""
        received, dropped = sum(self._earlier.get(name, 0) + self._current.get(name, 0)
                                for name in names)
        return int(received), int(dropped)

    def saved(self) -> dict[str, Any]:
        """Each trainer's counts so far."""
        return {name: self._earlier.get(name, 0) + count for name, count in self._current.items()}


class ControllerCheckpoint:
    """Saves a ``ControllerState`` in the run directory of ``log`` (``None``: never), and first
    the trainer's checkpoint beside it, the latest it asked for, which ``trainer(steps)``
    returns as ``(steps, bytes)`` if taken at ``steps`` or later: at the first poll past each
    multiple of ``every`` env steps (a run's ``checkpoint_every``; ``None``: never), once the
    trainer has checkpointed after the poll (``request()`` asks it to); ``keep``: also keep the
    ``keep`` latest as ``*_<frame>.pt`` (``keep_checkpoints``)."""

    def __init__(self, every: int | None, log: Any, result: DistributedResult,
                 counts: SampleCounts, agent_logs: dict[str, Any] | None = None,
                 actors_meta: Callable[[], dict[int, Any]] | None = None,
                 budget: int = 0, schedules: dict[str, list[int]] | None = None,
                 trainer: Callable[[int], tuple[int, bytes] | None] = lambda steps: None,
                 normalization: Callable[[], list[Any] | None] = lambda: None,
                 keep: int | None = None, request: Callable[[], None] = lambda: None) -> None:
        self.every, self.log, self.result, self.counts = every, log, result, counts
        self.trainer, self.normalization = trainer, normalization
        self.agent_logs = {} if agent_logs is None else agent_logs
        self.actors_meta, self.budget = actors_meta, budget
        self.schedules = {} if schedules is None else schedules
        self.keep, self.request = keep, request
        self._saved = result.frames // every if every else 0  # (multiples saved: resumed too)
        self._after: int | None = None  # (the trainer step a due save's checkpoint follows)

    def save(self, final: bool = False, statistics: list[Any] | None = None) -> None:
        """Save if due (above), or if ``final``."""
        if not self.every or self.log is None:
            return
        if not final and self.result.frames // self.every <= self._saved:
            return
        if self._after is None:
            self._after = self.result.train_steps + 1
        trainer = self.trainer(0 if final else self._after)
        if not final and trainer is None:  # (its checkpoint not handed over yet: asked at
            self.request()  # each poll until then, as a restarted trainer forgot it)
            return
        from looprl.experiments.checkpoint import keep_checkpoints, save_checkpoint
        self._saved, self._after = self.result.frames // self.every, None
        steps, run_dir = trainer[0] if trainer is not None else 0, Path(self.log.log_dir)
        if trainer is not None:
            write_atomically(run_dir / TRAINER_CHECKPOINT,
                             lambda temporary: temporary.write_bytes(trainer[1]))
        save_checkpoint(ControllerState(
            self.log, self.result, self.counts.saved(), self.agent_logs,
            self.actors_meta() if self.actors_meta else {}, self.budget, dict(self.schedules),
            steps, self.normalization() if statistics is None else statistics, self.every),
            run_dir / CONTROLLER_CHECKPOINT)
        for name in (TRAINER_CHECKPOINT, CONTROLLER_CHECKPOINT) if self.keep else ():
            if (run_dir / name).is_file():
                keep_checkpoints(run_dir / name, self.result.frames, self.keep)


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
        for key, value in polled.items():  # (moving averages; the log has this poll's values)
            if math.isnan(value):
                continue
            old = self.latest[key]
            self.latest[key] = value if math.isnan(old) else (
                SMOOTHING * value + (1 - SMOOTHING) * old)
            if self.log is not None:
                self.log.add_runtime(key, value)
        if self.log is not None:
            self.log.add_runtime("restarts", self.restarts)
        self._write_rows(stats, trainers, seconds)

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


def open_run_log(name: str, spec: AlgorithmSpec, logdir: str, verbose: bool = True,
                 run_info: dict[str, Any] | None = None, wandb: dict[str, Any] | None = None
                 ) -> Any:
    """The ``ExperimentLogger`` of a new run directory ``{logdir}/{name}/{env}`` (``wandb``:
    ``wandb.init``'s arguments, to log to W&B too)."""
    from looprl.experiments.logger import ExperimentLogger
    log = ExperimentLogger(name, spec.env_label, logdir, verbose=verbose, run_info=run_info,
                           wandb=wandb)
    save_spec(spec, log.log_dir)
    (Path(log.log_dir) / "throughput.csv").write_text(THROUGHPUT_HEADER + "\n")
    return log


class RunMonitor:
    """Records each poll of the workers' ``stats()`` in ``result`` and ``log`` (``None``:
    nothing written); ``trainers``: rank 0 first; ``frames``: the budget (``None``: unknown);
    ``agents``: a multi-agent env's agents, each logged in its own run directory."""

    def __init__(self, result: DistributedResult, counts: SampleCounts, log: Any,
                 trainers: list[str], frames: int | None = None, agents: Sequence[str] = (),
                 agent_logs: dict[str, Any] | None = None) -> None:
        self.result, self.counts, self.log, self.trainers = result, counts, log, trainers
        self.frames, self.agents = frames, list(agents)
        self.agent_logs = None if log is None else AgentLoggers(log, loggers=agent_logs)
        self.throughput = Throughput(
            Path(log.log_dir) / "throughput.csv" if log is not None else None, log)
        self.last_losses: dict[str, float] = {}
        self.hyperparameters: dict[str, Hyperparameter] = {}
        self.actors_finished: dict[str, bool] = {}
        self._acting: dict[str, Any] = {}  # actor 0's exploration ``hp/*`` (``acting_values``)
        self._read: dict[str, Any] = {}  # the ``hp/*`` values last read (``_record_trainer``)
        self.cuts: tuple[int, str, int | None] = (0, "", None)  # (``log_cuts``' arguments)

    def record(self, stats: dict[str, dict[str, Any]], seconds: float) -> None:
        """Log one poll's ``stats`` by worker name, ``seconds`` after the last."""
        self.record_warnings(stats)
        actors = {name: s for name, s in stats.items() if name.startswith("actor")}
        self._record_episodes(actors)
        self.actors_finished.update({name: s["finished"] for name, s in actors.items()})
        for cut, *where in (s.get("cuts", (0,)) for s in actors.values()):
            if cut:  # (the actors' episodes cut at their cap: each warned at its first)
                self.cuts = (self.cuts[0] + cut, *where)
        self._acting.update(stats.get("policy0", actors.get("actor0", {})).get("hp", {}))
        for name, s in stats.items():
            if name.startswith("eval") and s["episodes"]:
                returns = [ret for ret, *_ in s["episodes"]]
                self.result.eval_returns += returns
                if self.log is not None:
                    self.log.add_eval("returns/mean", float(np.mean(returns)))
        self._record_trainer(stats)
        last = self.frames is not None and self.result.frames >= self.frames
        self.throughput.record(stats, {name: stats[name] for name in self.trainers
                                       if name in stats}, seconds, len(self.result.restarts), last)

    def record_warnings(self, stats: dict[str, dict[str, Any]]) -> None:
        """Log the workers' warnings of a poll's ``stats`` here, each line once in the run."""
        for s in stats.values():
            log_worker_warnings(s.get("warnings", ()))

    def status(self) -> list[str]:
        """The lines under the progress bar."""
        from looprl.experiments.episodes import dashboard
        agents = self.result.agent_returns
        return [*dashboard(self, self.hyperparameters, lambda: {
            agent: mean_return(returns, 100) for agent, returns in agents.items()})(),
            self.throughput.line()]

    def close(self) -> None:
        """Close the agents' loggers (the controller closes the run's)."""
        if self.agent_logs is not None:
            self.agent_logs.close()


    def _record_episodes(self, actors: dict[str, dict[str, Any]]) -> None:
        """Log one poll's training episodes and the actors' meta values at their frames."""
        base = self.result.frames
        total = sum(s["frames"] for s in actors.values())

        def frame(s: dict[str, Any], at: int) -> float:
            return base + total * at / max(s["frames"], 1)

        ended = sorted(((frame(s, at), ret, tuple(each)) for s in actors.values()
                        for ret, _, at, *each in s["episodes"]), key=lambda e: e[0])
        points = sorted(((frame(s, at), name, values) for name, s in actors.items()
                         for at, values in s.get("meta", ())), key=lambda p: p[0])
        self.result.frames = base + total
        for frame_then, ret, each in ended:
            self.result.returns.append(ret)
            if self.log is not None:
                self.log.frame = round(frame_then)
                self.log.add_episode_return(ret)
                self.log.episode += 1
                hp = each[1] if len(each) > 1 and each[1] is not None else self._read
                if hp:  # (the actor's at the episode's end, as a local run's; else the latest)
                    self.log.add_hyperparameters(hp)
            if each and each[0]:  # (several agents: each one's return, in its own run directory)
                named = {self.agents[index] if index < len(self.agents) else f"agent{index}": ret
                         for index, ret in enumerate(each[0])}
                for agent, ret in named.items():
                    self.result.agent_returns.setdefault(agent, []).append(ret)
                if self.agent_logs is not None:
                    self.agent_logs.add_episode(named, round(frame_then))
        for frame_then, name, values in points:
            self._record_meta(name, values, round(frame_then))
        if self.log is not None:
            self.log.frame = self.result.frames

    def _record_meta(self, name: str, values: dict[str, float], frame: int) -> None:
        """Log the ``log/*`` values of worker ``name``'s meta components at ``frame``."""
        if not values:
            return
        self.result.meta.setdefault(name, {}).update(values)
        if self.log is None:
            return
        for key, value in values.items():
            tag, _, agent = key.rpartition("/")
            log = self.agent_logs[agent] if agent in self.agents else self.log
            log.frame = frame
            log.add_log((tag if log is not self.log else key)[len("log/"):], value)

    def _record_trainer(self, stats: dict[str, Any]) -> None:
        """The run's sample counts; trainer 0's step count, ``hp/*`` values and what its
        learners logged, with every trainer's lags."""
        for name in self.trainers:
            if name in stats:
                self.counts.polled(name, stats[name]["received"], stats[name]["dropped"])
        trainer = stats.get(self.trainers[0])
        if trainer is None:
            return
        for name in self.trainers[1:]:
            trainer["lags"] = trainer["lags"] + stats.get(name, {}).get("lags", [])
        trainer["received"], trainer["dropped"] = self.counts.total(self.trainers)
        self.result.train_steps = trainer["steps"]
        self._record_meta(self.trainers[0], trainer["meta"], self.result.frames)
        # the exploration's values are actor 0's: the trainer's copy of the policy never acts
        values = trainer.get("hp", {})
        values = {**values, **{k: v for k, v in self._acting.items() if k in values}}
        self.hyperparameters.update({key: _reading(value) for key, value in values.items()})
        self._read = values
        logged = trainer.get("logged", [])  # ``LossRecorder``'s
        self.last_losses.update((name, value) for agent, kind, name, value, _ in logged
                                if kind == "loss" and agent is None)  # (an agent's: its logs)
        if self.log is None:
            return
        for agent, kind, name, value, frame in logged:
            log = self.log if agent is None else self.agent_logs[agent]
            before, log.frame = log.frame, frame
            getattr(log, f"add_{kind}")(name, value)
            log.frame = before
        self.log.frame = self.result.frames


def _reading(value: Any) -> Hyperparameter:
    """A polled ``hp/*`` value as a read-only ``Hyperparameter`` (for the dashboard)."""

    def refuse(_: Any) -> None:
        raise TypeError("a Ray run's hp/* values are set in its trainer, not the monitor")

    return Hyperparameter(lambda: value, refuse)
