"""Schedules of hyperparameters (exploration rates, learning rates).

* ``linear_schedule(initial, final, start, end, step)`` -- a pure function.
* ``Schedule`` -- a schedule is a function of a step (``schedule(step)``) that also keeps
  its own counter: reading ``schedule.value`` returns the value at the counter and then
  advances it by one, exactly like ``all.optim.LinearScheduler`` (so a ``GreedyPolicy``
  whose ``epsilon`` is a schedule advances it once per action). ``current`` peeks
  without advancing.
* ``LinearScheduler`` / ``ConstantSchedule`` -- the usual schedules.
* ``Schedulable`` -- a base class (``all.optim.Schedulable``) whose attributes holding a
  ``Schedule`` read as its current ``value``: ``self.epsilon = LinearScheduler(1, 0.1, 0,
  100)`` makes every read of ``self.epsilon`` a float, advancing the schedule by one.
* ``LinearLR(optimizer, total_updates)`` -- a ``LambdaLR`` that anneals the learning rate
  linearly to ``final_fraction`` of its initial value (PPO's linear lr annealing). Its
  multiplier is a ``functools.partial`` of ``linear_schedule``, so presets holding it can be
  ``torch.save``-d.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR

from looprl.core.suggest import check_positive

__all__ = ["ConstantSchedule", "LinearLR", "LinearScheduler", "Schedulable", "Schedule",
           "linear_schedule"]


def linear_schedule(initial: float, final: float, start: int, end: int, step: int) -> float:
    """The value at ``step`` of a linear interpolation from ``initial`` (up to step
    ``start``) to ``final`` (from step ``end`` on)."""
    if step <= start:
        return initial
    if step >= end:
        return final
    alpha = (step - start) / (end - start)
    return initial + alpha * (final - initial)


class Schedule:
    """A hyperparameter that changes with a step count (see the module docstring).

    Args:
        name: the name under which the value is logged (``schedule/<name>``).
        logger: optional ``Logger``; the value is logged every ``log_every`` reads.
        log_every: how many ``value`` reads between two log entries.
    """

    def __init__(self, name: str = "variable", logger: Any = None, log_every: int = 100):
        self.name = name
        self.step = 0
        self._logger = logger
        self._log_every = log_every

    def at(self, step: int) -> float:
        """The value at ``step``; subclasses override this."""
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


class ConstantSchedule(Schedule):
    """A schedule that always returns ``constant`` (``**kwargs``: see ``Schedule``)."""

    def __init__(self, constant: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.constant = constant

    def at(self, step: int) -> float:
        return self.constant


class LinearScheduler(Schedule):
    """Linear decay from ``initial_value`` (up to read ``decay_start``) to ``final_value``
    (from read ``decay_end`` on); ``name`` and ``**kwargs``: see ``Schedule``.

    Example:
        >>> epsilon = LinearScheduler(1.0, 0.1, 0, 10)
        >>> [round(epsilon.value, 2) for _ in range(3)]
        [1.0, 0.91, 0.82]
    """

    def __init__(self, initial_value: float, final_value: float, decay_start: int,
                 decay_end: int, name: str = "variable", **kwargs: Any):
        if decay_end < decay_start:
            raise ValueError(f"decay_end ({decay_end}) must be >= decay_start ({decay_start})")
        super().__init__(name=name, **kwargs)
        self.initial_value = initial_value
        self.final_value = final_value
        self.decay_start = decay_start
        self.decay_end = decay_end

    def at(self, step: int) -> float:
        return linear_schedule(self.initial_value, self.final_value, self.decay_start,
                               self.decay_end, step)


class Schedulable:
    """Mixin whose instance attributes holding a ``Schedule`` read as the schedule's
    ``value`` (each read advances it by one), as ``all.optim.Schedulable``.

    Example:
        >>> class Explorer(Schedulable):
        ...     def __init__(self):
        ...         self.epsilon = LinearScheduler(1.0, 0.0, 0, 2)
        >>> explorer = Explorer()
        >>> [explorer.epsilon for _ in range(3)]
        [1.0, 0.5, 0.0]
    """

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        return value.value if isinstance(value, Schedule) else value


class LinearLR(LambdaLR):
    """Anneal every learning rate of ``optimizer`` linearly to ``final_fraction`` of its
    initial value over ``total_updates`` calls of ``step()``, then keep it there
    (``last_epoch``: ``LambdaLR``'s, for resuming)."""

    def __init__(self, optimizer: Optimizer, total_updates: int, final_fraction: float = 0.0,
                 last_epoch: int = -1):
        check_positive(total_updates=total_updates)
        decay = partial(linear_schedule, 1.0, final_fraction, 0, total_updates)
        super().__init__(optimizer, decay, last_epoch)
