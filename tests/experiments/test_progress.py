"""Tests of ``looprl.experiments.progress.TrainingProgress``."""

from __future__ import annotations

import io
import math

import pytest
from rich.console import Console

from looprl.experiments.progress import TrainingProgress


def test_quiet_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with TrainingProgress(1000, "dqn CartPole-v1", quiet=True) as bar:
        for frame in range(1000):
            bar.update(frame + 1, frame // 10, 12.5)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ""


def test_default_console_completes(capsys: pytest.CaptureFixture[str]) -> None:
    with TrainingProgress(500, "dqn CartPole-v1") as bar:
        for frame in range(500):
            bar.update(frame + 1, frame // 50, None if frame < 100 else 3.0)
    assert capsys.readouterr().out == ""  # rich writes to stderr, never stdout


def test_bar_shows_frames_episodes_and_return() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200, color_system=None)
    with TrainingProgress(2000, "dqn CartPole-v1", console=console) as bar:
        for frame in range(2000):
            bar.update(frame + 1, 17, 123.456)
    text = buffer.getvalue()
    assert "dqn CartPole-v1" in text
    assert "2000/2000" in text
    assert "fps" in text
    assert "episodes 17" in text
    assert "return(100) 123.5" in text


def test_nan_return_and_update_outside_context() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200, color_system=None)
    bar = TrainingProgress(10, "ppo", console=console)
    bar.update(5, 1, 1.0)  # before start: ignored
    bar.start()
    bar.update(10, 2, math.nan)
    bar.close()
    bar.close()  # idempotent
    assert "return(100) -" in buffer.getvalue()
