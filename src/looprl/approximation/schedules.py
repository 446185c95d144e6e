"""Schedules of hyperparameters, as ``all.optim``'s (reading ``value`` advances the counter)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.optim import Optimizer

from looprl.core.suggest import check_positive

__all__ = ["LinearScheduler", "ProgressLR", "Schedulable", "Schedule", "linear_schedule"]


def linear_schedule(initial: float, final: float, start: int, end: int, step: int) -> float:
    """At ``step``: ``initial`` up to ``start``, linearly to ``final`` at ``end``, ``final`` on."""
    if step >= end:
        return final
    if step <= start:
        return initial
    alpha = (step - start) / (end - start)
    return initial + alpha * (final - initial)


class Schedule:
    """A hyperparameter of a step count: ``schedule(step)``, or ``value`` at its own counter."""

    def __init__(self, name: str = "variable", logger: Any = None, log_every: int = 100):
        self.name = name
        self.step = 0
        self._logger = logger
        self._log_every = log_every

    def at(self, step: int) -> float:
        """The value at ``step``."""
        raise NotImplementedError

    def __call__(self, step: int) -> float:
        return self.at(step)

    @property
    def current(self) -> float:
        """The value at the internal counter, without advancing it."""
        return self.at(self.step)

    @property
    def value(self) -> float:
        """The value at the internal counter; reading it advances the counter by one."""
        result = self.at(self.step)
        if self._logger is not None and self.step % self._log_every == 0:
            self._logger.add_schedule(self.name, result)
        self.step += 1
        return result


class LinearScheduler(Schedule):
    """Linear decay from ``initial_value`` (at ``decay_start``) to ``final_value``."""

    def __init__(self, initial_value: float, final_value: float, decay_start: int,
                 decay_end: int, name: str = "variable", logger: Any = None, **kwargs: Any):
        if decay_end < decay_start:
            raise ValueError(f"decay_end ({decay_end}) must be >= decay_start ({decay_start})")
        super().__init__(name=name, logger=logger, **kwargs)
        self.initial_value = initial_value
        self.final_value = final_value
        self.decay_start = decay_start
        self.decay_end = decay_end

    def at(self, step: int) -> float:
        return linear_schedule(self.initial_value, self.final_value, self.decay_start,
                               self.decay_end, step)


class Schedulable:
    """Mixin whose attributes holding a ``Schedule`` read as its ``value`` (advancing it)."""

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        return value.value if isinstance(value, Schedule) else value


class ProgressLR:
    """An ``Approximation``'s ``lr_scheduler`` setting the learning rate to ``lr(progress)``,
    ``progress`` the fraction of ``total_updates`` done (each optimizer step its share, capped
    at 1); ``start(updates, steps)`` before an update of ``steps`` steps, else one step each."""

    def __init__(self, optimizer: Optimizer, lr: Callable[[float], float],
                 total_updates: float):
        check_positive(total_updates=total_updates)
        self.optimizer, self.lr, self.total_updates = optimizer, lr, total_updates
        self._updates, self._steps, self._step = 0, 1, 0

    def start(self, updates: int, steps: int = 1) -> None:
        """Set the learning rate at ``updates`` updates done, before ``steps`` optimizer steps."""
        self._updates, self._steps, self._step = updates, max(steps, 1), 0
        self._set()

    def step(self) -> None:
        """Set the learning rate of the next optimizer step."""
        self._step += 1
        self._set()

    def _set(self) -> None:
        progress = min((self._updates + self._step / self._steps) / self.total_updates, 1.0)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr(progress)
