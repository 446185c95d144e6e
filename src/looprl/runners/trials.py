"""Where a runner's trials (an ES individual, an Optuna trial) run: ``LocalTrials`` one after
another here, ``looprl.distributed.trials.RayTrials`` at once on Ray (the same methods)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from looprl.experiments.checkpoint import load_checkpoint

__all__ = ["KEPT", "KeptAgent", "LocalTrials", "Trial"]

Trial = Callable[[Any, Any], Any]  # (runner, task) -> result; a module-level function
KEPT = ".kept_agent.pt"  # a kept agent's checkpoint, briefly, in the run directory it logs in


class KeptAgent:
    """A trial's trained agent, to evaluate later: its live experiment, or from Ray a checkpoint
    (``saved``) that ``restore`` loads in its run directory (``run_dir``; ``None``: no logdir)."""

    def __init__(self, experiment: Any = None, preset: Any = None, saved: bytes | None = None,
                 run_dir: str | None = None):
        self.experiment, self.preset, self.saved, self.run_dir = experiment, preset, saved, run_dir

    def detach(self, runner: Any) -> None:
        """Keep the agent open: the runner's next agent no longer closes it."""
        if self.experiment is not None and runner.experiment is self.experiment:
            runner.experiment, runner.preset = None, None

    def restore(self, runner: Any) -> None:
        """Make the kept agent the runner's current one (closing the current one)."""
        runner.close()
        if self.saved is not None:  # (saved in the trial's run directory: loaded in its copy)
            with tempfile.TemporaryDirectory() as directory:
                path = Path(self.run_dir or directory) / KEPT
                path.write_bytes(self.saved)
                try:
                    self.experiment = load_checkpoint(path)
                finally:
                    path.unlink()
            self.preset, self.saved = self.experiment.preset, None
        runner.experiment, runner.preset = self.experiment, self.preset

    def close(self, runner: Any) -> None:
        """Let go of the agent (closing a live experiment's logs)."""
        if self.experiment is not None:
            runner.close_experiment(self.experiment)
        self.experiment = self.preset = self.saved = None


class LocalTrials:
    """Trials one after another, on the runner itself (``runtime=local``)."""

    parallel = 1  # trials that run at once
    in_process = True  # on the runner's own objects

    def map(self, runner: Any, trial: Trial, tasks: Sequence[Any], keep: bool = False
            ) -> Iterator[tuple[Any, KeptAgent | None]]:
        """``(trial(runner, task), agent)`` for each task (``agent``: with ``keep``)."""
        for task in tasks:
            result = trial(runner, task)
            yield result, KeptAgent(runner.experiment, runner.preset) if keep else None

    def close(self) -> None:
        """Nothing to release."""
