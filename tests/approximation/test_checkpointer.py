"""Tests of checkpointers."""

from __future__ import annotations

import os

import torch
from torch import nn, optim

from looprl.approximation import Approximation, DummyCheckpointer, PeriodicCheckpointer
from looprl.core import DummyLogger


def test_periodic_checkpointer_writes_every_frequency_updates(tmp_path):
    filename = str(tmp_path / "model.pt")
    model = nn.Linear(2, 1)
    checkpointer = PeriodicCheckpointer(3)
    checkpointer.init(model, filename)
    checkpointer()
    checkpointer()
    assert not os.path.exists(filename)
    checkpointer()
    assert os.path.exists(filename)
    loaded = torch.load(filename, weights_only=False)
    assert torch.equal(loaded.weight, model.weight)


def test_approximation_checkpoints_into_logger_log_dir(tmp_path):
    class Logger(DummyLogger):
        log_dir = str(tmp_path / "run")

    model = nn.Linear(2, 1)
    f = Approximation(
        model,
        optim.SGD(model.parameters(), lr=0.1),
        name="q",
        checkpointer=PeriodicCheckpointer(1),
        logger=Logger(),
    )
    f.reinforce(f(torch.ones(1, 2)).sum())
    saved = torch.load(tmp_path / "run" / "q.pt", weights_only=False)
    assert torch.equal(saved.weight, model.weight)


def test_explicit_filename_wins_and_dummy_writes_nothing(tmp_path):
    filename = str(tmp_path / "explicit.pt")
    checkpointer = PeriodicCheckpointer(1, filename=filename)
    checkpointer.init(nn.Linear(1, 1), str(tmp_path / "other.pt"))
    checkpointer()
    assert os.listdir(tmp_path) == ["explicit.pt"]
    dummy = DummyCheckpointer()
    dummy.init(nn.Linear(1, 1), str(tmp_path / "dummy.pt"))
    dummy()
    assert not os.path.exists(tmp_path / "dummy.pt")
