"""Where a runner's trials run: one after another in this process, or at once on Ray.

A *trial* ``trial(runner, task) -> result`` builds a fresh agent on ``runner``, trains and
evaluates it (an ES individual, an Optuna trial). ``LocalTrials`` (the default) maps trials
here, one after another; ``looprl.distributed.trials.RayTrials`` runs each as a Ray task on a
replica of the runner (``Runner.replica_arguments``), with the same run directories and
results. Both have ``parallel``, ``in_process``, ``map`` (``(result, agent)`` in the tasks'
order; with ``keep=True`` ``agent`` is a ``KeptAgent``) and ``close``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["KeptAgent", "LocalTrials", "Trial"]

Trial = Callable[[Any, Any], Any]  # (runner, task) -> result; a module-level function


class KeptAgent:
    """A trial's trained agent, to be evaluated again later (ES keeps its best one).

    Locally it is the trial's live experiment; from Ray, a checkpoint of it (without replay
    contents, ``looprl.experiments.checkpoint``) that ``restore`` loads.
    """

    def __init__(self, experiment: Any = None, preset: Any = None, saved: bytes | None = None):
        self.experiment, self.preset, self.saved = experiment, preset, saved

    def detach(self, runner: Any) -> None:
        """Keep the agent open: the runner's next agent no longer closes it."""
        if self.experiment is not None and runner.experiment is self.experiment:
            runner.experiment, runner.preset = None, None

    def restore(self, runner: Any) -> None:
        """Make the kept agent the runner's current one (closing the current one)."""
        runner.close()
        if self.saved is not None:
            with tempfile.TemporaryDirectory() as directory:
                path = Path(directory) / "checkpoint.pt"
                path.write_bytes(self.saved)
                from looprl.experiments.checkpoint import load_checkpoint

                self.experiment = load_checkpoint(path)
            self.preset, self.saved = self.experiment.preset, None
        runner.experiment, runner.preset = self.experiment, self.preset

    def close(self, runner: Any) -> None:
        """Let go of the agent (closing a live experiment's logs)."""
        if self.experiment is not None:
            runner.close_experiment(self.experiment)
        self.experiment = self.preset = self.saved = None


class LocalTrials:
    """Trials one after another, on the runner itself (``runtime=local``)."""

    #: trials that run at once
    parallel = 1
    #: trials run in this process, on the runner's own objects
    in_process = True

    def map(self, runner: Any, trial: Trial, tasks: Sequence[Any], keep: bool = False
            ) -> Iterator[tuple[Any, KeptAgent | None]]:
        """Run ``trial(runner, task)`` for each task, yielding each result (and, with
        ``keep``, the trial's agent) before the next trial starts."""
        for task in tasks:
            result = trial(runner, task)
            yield result, KeptAgent(runner.experiment, runner.preset) if keep else None

    def close(self) -> None:
        """Nothing to release."""
