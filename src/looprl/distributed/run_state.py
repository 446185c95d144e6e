"""What a distributed run has done so far, and the controller's checkpoint, whence
``DistributedRun(..., resume_from=RUN_DIR)`` continues. No Ray import here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from looprl.core.files import find_one, write_atomically
from looprl.experiments.logger import mean_return

__all__ = ["CONTROLLER_CHECKPOINT", "TRAINER_CHECKPOINT", "ControllerCheckpoint",
           "ControllerState", "DistributedResult", "SampleCounts", "find_controller_checkpoint"]

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


def find_controller_checkpoint(run_dir: str | Path) -> Path:
    """The one ``controller_checkpoint.pt`` in or under ``run_dir``."""
    return find_one(run_dir, CONTROLLER_CHECKPOINT,
                    f"No distributed run to resume in {Path(run_dir)}: no {CONTROLLER_CHECKPOINT} "
                    "(runs write one every runtime.checkpoint_every trainer steps)",
                    f"distributed runs in {Path(run_dir)}; resume one at a time")


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
    """Saves a ``ControllerState`` in the run directory of ``log`` (``None``: never) whenever
    the trainer has checkpointed (every ``every`` steps) since the last save, and first the
    trainer's latest checkpoint beside it, which ``trainer(steps)`` returns as ``(steps,
    bytes)`` if taken at ``steps`` or later; ``taken``: the step a resumed run goes on from."""

    def __init__(self, every: int | None, log: Any, result: DistributedResult,
                 counts: SampleCounts, agent_logs: dict[str, Any] | None = None,
                 actors_meta: Callable[[], dict[int, Any]] | None = None,
                 budget: int = 0, schedules: dict[str, list[int]] | None = None,
                 trainer: Callable[[int], tuple[int, bytes] | None] = lambda steps: None,
                 taken: int = 0,
                 normalization: Callable[[], list[Any] | None] = lambda: None) -> None:
        self.every, self.log, self.result, self.counts = every, log, result, counts
        self.trainer, self.normalization = trainer, normalization
        self.agent_logs = {} if agent_logs is None else agent_logs
        self.actors_meta, self.budget = actors_meta, budget
        self.schedules = {} if schedules is None else schedules
        self._saved = taken // every if every else 0

    def save(self, final: bool = False, statistics: list[Any] | None = None) -> None:
        """Save if the trainer has checkpointed since the last save, or if ``final``."""
        if not self.every or self.log is None:
            return
        if not final and self.result.train_steps // self.every <= self._saved:
            return
        trainer = self.trainer(0 if final else (self._saved + 1) * self.every)
        if not final and trainer is None:  # (its checkpoint not handed over yet)
            return
        from looprl.experiments.checkpoint import save_checkpoint
        steps = trainer[0] if trainer is not None else 0
        self._saved = steps // self.every
        if trainer is not None:
            write_atomically(Path(self.log.log_dir) / TRAINER_CHECKPOINT,
                             lambda temporary: temporary.write_bytes(trainer[1]))
        save_checkpoint(ControllerState(self.log, self.result, self.counts.saved(),
                                        self.agent_logs,
                                        self.actors_meta() if self.actors_meta else {},
                                        self.budget, dict(self.schedules), steps,
                                        self.normalization() if statistics is None
                                        else statistics),
                        Path(self.log.log_dir) / CONTROLLER_CHECKPOINT)
