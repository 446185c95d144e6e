"""Schedules of hyperparameters, as ``all.optim``'s (reading ``value`` advances the counter)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from torch.optim import Optimizer

from looprl.core.ranges import FINITE
from looprl.core.suggest import check_positive, did_you_mean, is_number

__all__ = ["LR_SCHEDULES", "LinearScheduler", "ProgressLR", "Schedulable", "Schedule", "Warmup",
           "anneal", "check_lr_schedule", "linear_schedule"]

#: a preset's ``lr_schedule``: its learning rates over the budget's updates (``anneal``'s shapes)
LR_SCHEDULES = ("constant", "linear", "cosine")


def linear_schedule(initial: float, final: float, start: int, end: int, step: int) -> float:
    """At ``step``: ``initial`` before ``start``, linearly to ``final`` at ``end``, ``final`` on.
    As ALL's, an ``end`` before ``start`` holds ``initial`` until ``start``, then ``final``."""
    if step < start:
        return initial
    if step >= end:
        return final
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
    """Linear decay from ``initial_value`` (at ``decay_start``) to ``final_value`` (at
    ``decay_end``); as ALL's, a ``decay_end`` before ``decay_start`` jumps at ``decay_start``
    (ALL's DQN presets pass ``final_exploration_step - replay_start_size``)."""

    def __init__(self, initial_value: float, final_value: float, decay_start: int,
                 decay_end: int, name: str = "variable", logger: Any = None, **kwargs: Any):
        FINITE.check("initial_value", initial_value, "LinearScheduler")  # (text was met at
        FINITE.check("final_value", final_value, "LinearScheduler")  # the first read)
        for key, step in (("decay_start", decay_start), ("decay_end", decay_end)):
            if not is_number(step):
                raise ValueError(f"LinearScheduler's {key} is a step count, a number, got "
                                 f"{step!r:.40}")
        super().__init__(name=name, logger=logger, **kwargs)
        self.initial_value = initial_value
        self.final_value = final_value
        self.decay_start = decay_start
        self.decay_end = decay_end

    def at(self, step: int) -> float:
        return linear_schedule(self.initial_value, self.final_value, self.decay_start,
                               self.decay_end, step)


class Warmup(Schedule):
    """``initial_value`` for the first ``steps`` steps, then ``then``: a float, or a schedule
    whose own counter starts there (each read of ``value`` past the warm-up reads its ``value``,
    logging as it logs): ALL's C51 explores at random until ``replay_start_size``, then reads its
    ``exploration``, a float or a ``LinearScheduler``."""

    def __init__(self, steps: int, then: Any, initial_value: float = 1.0,
                 name: str = "variable", logger: Any = None, **kwargs: Any):
        if not (isinstance(then, int | float) or hasattr(type(then), "value")):
            raise TypeError(f"Warmup's value after the warm-up ({name}) is a float or a "
                            f"schedule (LinearScheduler(...)), got {type(then).__name__}")
        super().__init__(name=name, logger=logger, **kwargs)
        self.steps, self.then, self.initial_value = steps, then, initial_value

    def at(self, step: int) -> float:
        if step < self.steps:
            return self.initial_value
        then = self.then
        if isinstance(then, int | float):
            return float(then)
        if not callable(getattr(then, "at", None)):  # (a schedule of the user's own)
            raise TypeError(f"Warmup ({self.name}) cannot read its {type(then).__name__} at "
                            "a step without advancing it: give that schedule an at(step) "
                            "method, or read Warmup's value")
        return float(then.at(step - self.steps))

    @property
    def value(self) -> float:
        """As ``Schedule.value``; past the warm-up, a schedule's ``value`` (advancing it)."""
        if self.step < self.steps or isinstance(self.then, int | float):
            return super().value
        self.step += 1
        return float(self.then.value)


class Schedulable:
    """Mixin whose attributes holding a ``Schedule`` read as its ``value`` (advancing it)."""

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        return value.value if isinstance(value, Schedule) else value


def check_lr_schedule(name: Any, owner: str) -> str:
    """``name`` if it is one of ``LR_SCHEDULES``, else a one-line ``ValueError``."""
    if name in LR_SCHEDULES:
        return name
    hint = did_you_mean(str(name), list(LR_SCHEDULES))
    raise ValueError(f"Unknown lr_schedule {name!r} of {owner}.{hint} It takes: "
                     f"{', '.join(LR_SCHEDULES)}")


class anneal:  # noqa: N801 -- used like a function: anneal(3e-4, "cosine")
    """A schedule of training progress ``p`` in ``[0, 1]`` from ``initial`` to 0: ``linear``
    ``initial * (1 - p)``; ``cosine`` ``initial * (1 + cos(pi p)) / 2``, the rates of ALL's
    ``CosineAnnealingLR(optimizer, n_updates)`` over the budget's updates (picklable: the
    rates of ``ProgressLR``, PPO's clip range)."""

    def __init__(self, initial: float, shape: str = "linear"):
        if shape not in LR_SCHEDULES[1:]:
            raise ValueError(f"anneal's shape must be 'linear' or 'cosine', got {shape!r}")
        self.initial, self.shape = initial, shape

    def __call__(self, progress: float) -> float:
        if self.shape == "cosine":
            return self.initial * (1.0 + math.cos(math.pi * progress)) / 2.0
        return self.initial * (1.0 - progress)


class ProgressLR:
    """An ``Approximation``'s ``lr_scheduler`` setting the learning rate to ``lr(progress)``,
    ``progress`` the fraction of ``total_updates`` done (each optimizer step its share, capped
    at 1); ``start(updates, steps)`` before an update of ``steps`` steps, else one step each.
    ``lr`` gives the first parameter group's rate; the others keep their ratio to it (an
    actor's and a critic's rates)."""

    def __init__(self, optimizer: Optimizer, lr: Callable[[float], float],
                 total_updates: float):
        check_positive(total_updates=total_updates)
        self.optimizer, self.lr, self.total_updates = optimizer, lr, total_updates
        self._updates, self._steps, self._step = 0, 1, 0
        rates = [group["lr"] for group in optimizer.param_groups]
        self._ratios = [rate / rates[0] if rates[0] else 1.0 for rate in rates]

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
        rate = self.lr(progress)
        for group, ratio in zip(self.optimizer.param_groups, self._ratios, strict=True):
            group["lr"] = rate * ratio
