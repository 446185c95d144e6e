"""Users' meta components for the Ray tests: their copies run in the workers, which import
them from here."""

from __future__ import annotations

import logging
import warnings
from typing import Any

from looprl.meta import MetaComponent


class Warns(MetaComponent):
    """Warns at every step, through a logger, and at every update, through Python's
    ``warnings``."""

    def __init__(self) -> None:
        super().__init__()
        self.post_step_methods.append(self.warn_step)
        self.post_update_methods.append(self.warn_update)

    def warn_step(self, metrics: dict[str, Any]) -> None:
        logging.getLogger("user.component").warning("the step hook warns")

    def warn_update(self, metrics: dict[str, Any]) -> None:
        warnings.warn("the update hook warns", stacklevel=1)


class SetsLR(MetaComponent):
    """Sets ``hp/lr``, the trainer's, in a step hook (which a Ray actor runs)."""

    def __init__(self) -> None:
        super().__init__()
        self.post_step_methods.append(self.set_lr)

    def set_lr(self, metrics: dict[str, Any]) -> None:
        metrics["hp/lr"] = 0.1


class ReadsLR(MetaComponent):
    """Logs ``hp/lr``, the trainer's, in a step hook (which a Ray actor runs)."""

    def __init__(self) -> None:
        super().__init__()
        self.post_step_methods.append(self.read_lr)

    def read_lr(self, metrics: dict[str, Any]) -> None:
        metrics["log/seen_lr"] = metrics["hp/lr"]


class SchedulesAcross(MetaComponent):
    """Sets ``hp/lr`` (the trainer's) in a step hook and ``hp/epsilon`` (the actors') in an
    update hook: on Ray each write crosses from the worker that runs the hook to the other."""

    def __init__(self) -> None:
        super().__init__()
        self.post_step_methods.append(self.set_lr)
        self.post_update_methods.append(self.set_epsilon)

    def set_lr(self, metrics: dict[str, Any]) -> None:
        metrics["hp/lr"] = 1e-2 * 0.99 ** metrics["step"]

    def set_epsilon(self, metrics: dict[str, Any]) -> None:
        metrics["hp/epsilon"] = 0.5 ** metrics["update"]


class StepsLR(MetaComponent):
    """Sets ``hp/lr`` in a step hook from the step count (each Ray actor its own values)."""

    def __init__(self) -> None:
        super().__init__()
        self.post_step_methods.append(self.set_lr)

    def set_lr(self, metrics: dict[str, Any]) -> None:
        metrics["hp/lr"] = 1e-3 * (1 + metrics["step"] % 5)
