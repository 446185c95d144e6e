"""Tests of schedules and the learning-rate annealer (``ProgressLR``)."""

from __future__ import annotations

import pickle
from functools import partial

import pytest
from torch import nn, optim
from torch.optim.lr_scheduler import LambdaLR

from looprl.approximation import LinearScheduler, ProgressLR, Warmup, linear_schedule
from looprl.approximation import anneal as linear


def test_linear_schedule_function():
    assert linear_schedule(1.0, 0.0, 10, 20, 0) == 1.0
    assert linear_schedule(1.0, 0.0, 10, 20, 10) == 1.0
    assert linear_schedule(1.0, 0.0, 10, 20, 15) == pytest.approx(0.5)
    assert linear_schedule(1.0, 0.0, 10, 20, 20) == 0.0
    assert linear_schedule(1.0, 0.0, 10, 20, 1000) == 0.0
    assert linear_schedule(2.0, 2.0, 5, 5, 5) == 2.0


def test_linear_scheduler_advances_once_per_value_read():
    epsilon = LinearScheduler(1.0, 0.1, 2, 5, name="epsilon")
    values = [epsilon.value for _ in range(7)]
    assert values == pytest.approx([1.0, 1.0, 1.0, 0.7, 0.4, 0.1, 0.1])
    assert epsilon.step == 7
    assert epsilon.current == pytest.approx(0.1)
    assert epsilon.step == 7  # peeking does not advance
    assert epsilon(3) == pytest.approx(0.7)


def test_linear_scheduler_without_decay_is_final_from_decay_end_as_alls():
    """(was: ``decay_start == decay_end`` read ``initial_value`` once more, at that step: a
    preset's ``final_exploration_step=0`` took its first action at epsilon 1)"""
    epsilon = LinearScheduler(1.0, 0.1, 0, 0)
    assert [epsilon.value for _ in range(2)] == [0.1, 0.1]
    assert [LinearScheduler(1.0, 0.1, 3, 3)(t) for t in range(2, 5)] == [1.0, 0.1, 0.1]


def test_linear_scheduler_ending_before_its_start_jumps_at_the_start_as_alls():
    """ALL's DQN presets decay from ``replay_start_size`` to ``final_exploration_step -
    replay_start_size``, which may come first: ALL holds the initial value, then the final one
    (was: a ValueError, so those preset files failed at the start)."""
    epsilon = LinearScheduler(1.0, 0.1, 4, 2)
    assert [epsilon.value for _ in range(6)] == [1.0, 1.0, 1.0, 1.0, 0.1, 0.1]
    assert linear_schedule(1.0, 0.0, 10, 5, 9) == 1.0


def test_warmup_then_a_float_or_a_schedule_read_from_its_start():
    """C51's epsilon: 1 for the warm-up, then its ``exploration``, whose counter starts there."""
    assert [Warmup(2, 0.1).value for _ in range(1)] == [1.0]
    fixed = Warmup(2, 0.1)
    assert [fixed.value for _ in range(4)] == [1.0, 1.0, 0.1, 0.1]
    then = LinearScheduler(0.5, 0.1, 0, 2)
    warmup = Warmup(2, then, name="epsilon")
    assert [warmup.value for _ in range(5)] == pytest.approx([1.0, 1.0, 0.5, 0.3, 0.1])
    assert then.step == 3 and warmup.step == 5
    assert warmup.at(3) == pytest.approx(0.3) and warmup.current == pytest.approx(0.1)
    with pytest.raises(TypeError, match=r"^Warmup's value after the warm-up \(epsilon\) is a "
                                        r"float or a schedule"):
        Warmup(2, "0.1", name="epsilon")


def test_warmup_peeks_a_schedule_of_the_users_own_through_its_at() -> None:
    """A duck-typed schedule (a ``value`` that advances, an ``at(step)`` that peeks): ``at``
    read it (was: ``float()`` of the object, a TypeError); without ``at``, one line."""
    class Halving:
        def __init__(self) -> None:
            self.step = 0

        def at(self, step: int) -> float:
            return 0.5 ** (step + 1)

        @property
        def value(self) -> float:
            self.step += 1
            return self.at(self.step - 1)

    warmup = Warmup(1, Halving(), name="epsilon")
    assert [warmup.value for _ in range(3)] == [1.0, 0.5, 0.25]
    assert warmup.at(3) == 0.125 and warmup.current == 0.125 and warmup.then.step == 2

    class Unpeekable:
        value = 0.2

    plain = Warmup(1, Unpeekable(), name="epsilon")
    assert [plain.value for _ in range(2)] == [1.0, 0.2]
    with pytest.raises(TypeError, match=r"^Warmup \(epsilon\) cannot read its Unpeekable at a "
                                        r"step without advancing it: give that schedule an "
                                        r"at\(step\) method, or read Warmup's value$"):
        plain.at(5)


def test_schedule_logs_every_log_every_reads():
    class Logger:
        def __init__(self):
            self.calls = []

        def add_schedule(self, name, value, step="frame"):
            self.calls.append((name, value))

    logger = Logger()
    schedule = LinearScheduler(1.0, 0.0, 0, 4, name="eps", logger=logger, log_every=2)
    values = [schedule.value for _ in range(5)]
    assert values == [1.0, 0.75, 0.5, 0.25, 0.0]
    assert logger.calls == [("eps", 1.0), ("eps", 0.5), ("eps", 0.0)]
    logger.calls.clear()  # ALL's positional (..., name, logger)
    assert LinearScheduler(1.0, 0.0, 0, 4, "eps", logger).value == 1.0
    assert logger.calls == [("eps", 1.0)]


def _lrs_of(scheduler, optimizer, steps: int) -> list[float]:
    """The learning rate of each of ``steps`` optimizer steps, ``scheduler`` stepped after each."""
    lrs = []
    for _ in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs


def test_progress_lr_without_start_anneals_per_optimizer_step_as_a_lambda_lr():
    """Each optimizer step one update (VQN's): the rates of torch's ``LambdaLR`` over
    ``linear_schedule`` (the scheduler VQN had), bit for bit, ending at 0."""
    rates = []
    for scheduler_of in (lambda o: ProgressLR(o, linear(0.1), 10),
                         lambda o: LambdaLR(o, partial(linear_schedule, 1.0, 0.0, 0, 10))):
        optimizer = optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
        rates.append(_lrs_of(scheduler_of(optimizer), optimizer, 13))
    assert rates[0] == rates[1]
    assert rates[0][5] == pytest.approx(0.05) and rates[0][10:] == [0.0] * 3


def test_progress_lr_start_shares_an_update_between_its_optimizer_steps():
    optimizer = optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
    scheduler = ProgressLR(optimizer, lambda progress: 1.0 - progress, total_updates=2)
    scheduler.start(1, steps=4)  # update 1 of 2, in 4 optimizer steps
    assert _lrs_of(scheduler, optimizer, 4) == [0.5, 0.375, 0.25, 0.125]
    assert optimizer.param_groups[0]["lr"] == 0.0  # (progress capped at 1)
    restored = pickle.loads(pickle.dumps(ProgressLR(optimizer, linear(0.1), 4)))
    assert restored.lr(0.5) == pytest.approx(0.05) and restored.total_updates == 4
    with pytest.raises(ValueError, match="total_updates must be positive, got 0"):
        ProgressLR(optimizer, linear(0.1), 0)
