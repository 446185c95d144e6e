"""The ``Logger`` interface; values may be floats or 0-d tensors, converted lazily."""

from __future__ import annotations

import math
from typing import Any


class Logger:
    """Interface of experiment loggers; every method is a no-op here. ``step``: log at the
    current ``'frame'`` or ``'episode'``, or at that whole number (as in ALL)."""

    #: When False, ``add_loss``/``add_info``/``add_schedule`` may be skipped by callers.
    verbose: bool = False
    #: the counters an experiment advances (environment steps, training episodes), where its
    #: files go (``None``: none) and the mean return of the last 100 episodes (NaN: unknown)
    frame: int = 0
    episode: int = 0
    log_dir: str | None = None
    mean_return100: float = math.nan

    def add_loss(self, name: str, value: Any, step: str | int = "frame") -> None:
        """Log a training loss (``loss/<name>``)."""

    def add_schedule(self, name: str, value: Any, step: str | int = "frame") -> None:
        """Log a scheduled hyperparameter (``schedule/<name>``)."""

    def add_info(self, name: str, value: Any, step: str | int = "frame") -> None:
        """Log any debugging statistic (``info/<name>``)."""

    def add_eval(self, name: str, value: Any, step: str | int = "frame") -> None:
        """Log an evaluation statistic (``eval/<name>``), e.g. evaluation returns."""

    def add_log(self, name: str, value: float) -> None:
        """Log a meta component's scalar (``log/<name>``, at the current frame)."""

    def add_summary(self, name: str, values: Any, step: str | int = "frame") -> None:
        """Log mean/std/min/max of a list of values (``summary/<name>/...``)."""

    def add_hyperparameters(self, values: dict[str, Any]) -> None:
        """Record the agent's current ``hp/*`` values (one row of a trajectory)."""

    def add_hparams(self, hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
                    step: str | int = "frame") -> None:
        """ALL's: log hyperparameters with the metrics they reached (TensorBoard's HParams)."""

    def add_episode_return(self, ret: float) -> None:
        """Record the return of one finished training episode (at ``frame``)."""

    def add_test_returns(self, returns: list[float]) -> None:
        """Record the returns of the evaluation episodes after training."""

    def close(self) -> None:
        """Flush and release files."""

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class DummyLogger(Logger):
    """A logger that records nothing but the counters ``frame`` and ``episode``."""
