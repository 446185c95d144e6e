"""Tests of ``looprl.experiments.plots.plot_returns_100``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from looprl.experiments.logger import ExperimentLogger
from looprl.experiments.plots import plot_returns_100

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _fake_run(root: Path, agent: str, env: str, rows: int, meta: bool = True) -> Path:
    """Write a returns100.csv (and run.json) with ``rows`` data rows."""
    run_dir = root / agent / env
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = ["frame,mean,std,max,min"]
    lines += [f"{1000 * (i + 1)},{i * 1.5},{0.5 + i % 3},{i * 2.0},{-1.0}" for i in range(rows)]
    (run_dir / "returns100.csv").write_text("\n".join(lines) + "\n")
    if meta:
        (run_dir / "run.json").write_text(json.dumps({"agent": agent, "env": env}))
    return run_dir


def _assert_png(path: str) -> None:
    data = Path(path).read_bytes()
    assert len(data) > 1000
    assert data.startswith(PNG_SIGNATURE)


def test_two_runs_in_two_envs(tmp_path: Path) -> None:
    _fake_run(tmp_path, "dqn", "CartPole-v1", rows=5)
    _fake_run(tmp_path, "ppo", "Acrobot-v1", rows=3, meta=False)
    out = plot_returns_100(str(tmp_path))
    assert out == str(tmp_path / "returns100.png")
    _assert_png(out)


def test_custom_filename_and_timesteps(tmp_path: Path) -> None:
    _fake_run(tmp_path / "runs", "dqn", "CartPole-v1", rows=10)
    _fake_run(tmp_path / "runs", "ddqn", "CartPole-v1", rows=10)
    target = tmp_path / "plots" / "curve.png"
    out = plot_returns_100(str(tmp_path / "runs"), timesteps=4000, filename=str(target))
    assert out == str(target)
    _assert_png(out)


def test_repeated_runs_of_one_agent(tmp_path: Path) -> None:
    for _ in range(2):
        logger = ExperimentLogger("dqn", "CartPole-v1", logdir=str(tmp_path))
        for i in range(200):
            logger.frame = i
            logger.add_episode_return(float(i))
        logger.close()
    _assert_png(plot_returns_100(str(tmp_path)))


def test_header_only_runs_are_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _fake_run(tmp_path, "dqn", "CartPole-v1", rows=4)
    _fake_run(tmp_path, "ppo", "CartPole-v1", rows=0)
    with caplog.at_level(logging.WARNING, logger="looprl.experiments.plots"):
        out = plot_returns_100(str(tmp_path))
    _assert_png(out)
    assert any("ppo" in record.getMessage() for record in caplog.records)


def test_only_header_only_runs_raise(tmp_path: Path) -> None:
    _fake_run(tmp_path, "ppo", "CartPole-v1", rows=0)
    with pytest.raises(ValueError, match="empty"):
        plot_returns_100(str(tmp_path))


def test_no_csv_raises_file_not_found(tmp_path: Path) -> None:
    (tmp_path / "dqn").mkdir()
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        plot_returns_100(str(tmp_path))
