"""What a distributed run has done so far (``DistributedResult``), and the controller's
checkpoint (``controller_checkpoint.pt``) from which a run whose controller died continues
(``DistributedRun(..., resume_from=RUN_DIR)``). No Ray import here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CONTROLLER_CHECKPOINT", "ControllerState", "DistributedResult",
           "find_controller_checkpoint"]

CONTROLLER_CHECKPOINT = "controller_checkpoint.pt"


@dataclass
class DistributedResult:
    """What a distributed run did.

    Attributes:
        frames: env steps taken by the actor workers.
        returns: every training episode's return, in the order they were reported.
        train_steps: ``Trainer.step`` calls.
        seconds: wall time of the training loop.
        restarts: worker deaths the run recovered from, as ``(worker, frame)``.
        eval_returns: the evaluation workers' episode returns.
        log_dir: the run directory (``None`` without one).
        nodes: the Ray node each worker ran on.
        trainer_steps: each trainer's ``Trainer.step`` calls at the end.
        trainers_in_sync: whether all trainers ended with the same parameters (``None``:
            unknown).
    """

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

    @property
    def frames_per_second(self) -> float:
        """Env frames per second of the whole run."""
        return self.frames / self.seconds if self.seconds else 0.0

    def mean_return(self, last: int = 100) -> float:
        """Mean of the last ``last`` training returns (``nan`` before the first)."""
        return float(np.mean(self.returns[-last:])) if self.returns else math.nan


@dataclass
class ControllerState:
    """What ``controller_checkpoint.pt`` holds (``save_checkpoint`` flushes the logger):
    the logger, the result so far, and each trainer's sample counts (received, dropped)."""

    logger: Any
    result: DistributedResult
    trainer_counts: dict[str, Any] = field(default_factory=dict)


def find_controller_checkpoint(run_dir: str | Path) -> Path:
    """The one ``controller_checkpoint.pt`` in or under ``run_dir``.

    Raises:
        FileNotFoundError: none there (the message says how runs write them).
        ValueError: several (resume one run at a time).
    """
    run_dir = Path(run_dir)
    found = sorted(run_dir.glob(f"**/{CONTROLLER_CHECKPOINT}"))
    if not found:
        raise FileNotFoundError(f"No distributed run to resume in {run_dir}: no "
                                f"{CONTROLLER_CHECKPOINT} (runs write one every "
                                "runtime.checkpoint_every trainer steps)")
    if len(found) > 1:
        raise ValueError(f"{len(found)} distributed runs in {run_dir}; resume one at a time: "
                         f"{', '.join(map(str, found))}")
    return found[0]
