"""Tests of schedules and the linear learning-rate scheduler."""

from __future__ import annotations

import pickle

import pytest
import torch
from torch import nn, optim

from looprl.approximation import ConstantSchedule, LinearLR, LinearScheduler, linear_schedule


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


def test_constant_schedule():
    schedule = ConstantSchedule(0.3)
    assert [schedule.value for _ in range(3)] == [0.3, 0.3, 0.3]


def test_linear_lr_anneals_to_zero_and_pickles():
    model = nn.Linear(2, 1)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    scheduler = LinearLR(optimizer, total_updates=10)
    lrs = []
    for _ in range(12):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert lrs[0] == pytest.approx(0.1)
    assert lrs[5] == pytest.approx(0.05)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))
    restored = pickle.loads(pickle.dumps(scheduler.lr_lambdas[0]))
    assert restored(5) == pytest.approx(0.5)


def test_linear_lr_final_fraction():
    optimizer = optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    scheduler = LinearLR(optimizer, total_updates=4, final_fraction=0.25)
    for _ in range(10):
        optimizer.step()
        scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.25)
