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


class SharesUpdates(MetaComponent):
    """Counts the updates in an update hook (the trainer's copy) and shares the count; a step
    hook logs the count its copy last loaded (a Ray actor's: published with the parameters)
    and ``hp/epsilon`` as it reads it. With ``epsilon``, the update hook (``where="update"``)
    or the step hook (``"step"``) sets ``hp/epsilon``."""

    def __init__(self, epsilon: float | None = None, where: str = "update") -> None:
        super().__init__()
        self.updates, self.epsilon, self.where = 0, epsilon, where
        self.post_update_methods.append(self.count)
        self.post_step_methods.append(self.log)

    def count(self, metrics: dict[str, Any]) -> None:
        self.updates += 1
        if self.epsilon is not None and self.where == "update":
            metrics["hp/epsilon"] = self.epsilon

    def shared_state(self) -> dict[str, Any]:
        return {"updates": self.updates}

    def load_shared_state(self, state: dict[str, Any]) -> None:
        self.updates = state["updates"]

    def log(self, metrics: dict[str, Any]) -> None:
        if self.epsilon is not None and self.where == "step":
            metrics["hp/epsilon"] = self.epsilon
        metrics["log/loaded_updates"] = self.updates
        metrics["log/seen_epsilon"] = metrics["hp/epsilon"]
