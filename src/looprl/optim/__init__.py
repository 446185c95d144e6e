"""ALL's ``all.optim`` import path: ``Schedulable`` and ``LinearScheduler`` (they live in
``looprl.approximation.schedules``)."""

from looprl.approximation.schedules import LinearScheduler, Schedulable

__all__ = ["LinearScheduler", "Schedulable"]
