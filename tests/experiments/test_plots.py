"""Tests of ``looprl.experiments.plots.plot_returns_100``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

from looprl.experiments.logger import ExperimentLogger
from looprl.experiments.plots import plot_returns_100, rolling_mean_std

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


def test_a_tilde_runs_directory_is_the_home_directorys_as_for_the_loggers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    _fake_run(tmp_path / "runs", "dqn", "CartPole-v1", rows=3)
    out = plot_returns_100("~/runs", filename="~/plots/curve.png")
    assert out == str(tmp_path / "plots" / "curve.png")
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


def test_an_es_best_directory_is_left_out_without_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """ES's ``best/`` holds an evaluation only (was: warned of as having "no data rows yet")."""
    _fake_run(tmp_path, "ppo", "CartPole-v1", rows=4)
    best = _fake_run(tmp_path / "ppo" / "CartPole-v1", "", "best", rows=0, meta=False)
    (best / "test_returns.csv").write_text("return\n31.0\n")
    with caplog.at_level(logging.INFO, logger="looprl.experiments.plots"):
        _assert_png(plot_returns_100(str(tmp_path)))
    assert [(record.levelno, record.getMessage()) for record in caplog.records] == [
        (logging.INFO, f"{best} holds an evaluation (test_returns.csv) and no training "
                       "episode: not plotted")]


def test_only_header_only_runs_raise(tmp_path: Path) -> None:
    _fake_run(tmp_path, "ppo", "CartPole-v1", rows=0)
    with pytest.raises(ValueError, match="empty"):
        plot_returns_100(str(tmp_path))


def test_no_csv_raises_file_not_found(tmp_path: Path) -> None:
    (tmp_path / "dqn").mkdir()
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        plot_returns_100(str(tmp_path))


@pytest.fixture
def saved_figures(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """Collect every figure that ``plot_returns_100`` saves (the PNG is still written)."""
    figures: list[Figure] = []
    original = Figure.savefig

    def savefig(self: Figure, *args: object, **kwargs: object) -> None:
        figures.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return figures


def _episode_run(root: Path, agent: str, env: str, returns: list[float]) -> str:
    """Log ``returns`` (one episode every 10 frames) through a real ExperimentLogger."""
    logger = ExperimentLogger(agent, env, logdir=str(root))
    for i, ret in enumerate(returns):
        logger.frame = 10 * (i + 1)
        logger.add_episode_return(ret)
    logger.close()
    return logger.log_dir


def test_rolling_mean_std_hand_computed() -> None:
    mean, std = rolling_mean_std([1.0, 2.0, 3.0, 4.0, 5.0], window=3)
    np.testing.assert_allclose(mean, [1.0, 1.5, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(std, [0.0, 0.5, np.sqrt(2 / 3), np.sqrt(2 / 3), np.sqrt(2 / 3)])
    mean, std = rolling_mean_std([4.0, 0.0, 8.0])  # default window 100: expanding mean
    np.testing.assert_allclose(mean, [4.0, 2.0, 4.0])
    np.testing.assert_allclose(std, [0.0, 2.0, np.sqrt(32 / 3)])


def test_rolling_mean_std_matches_windows_of_100() -> None:
    values = np.random.default_rng(0).normal(500.0, 3.0, size=350)
    mean, std = rolling_mean_std(values)
    for i in (0, 57, 99, 100, 101, 349):
        window = values[max(0, i - 99) : i + 1]
        assert mean[i] == pytest.approx(window.mean(), rel=1e-12)
        assert std[i] == pytest.approx(window.std(), rel=1e-6)


def test_rolling_mean_std_edge_cases() -> None:
    mean, std = rolling_mean_std([])
    assert mean.shape == std.shape == (0,)
    mean, std = rolling_mean_std([7.0, 7.0, 7.0], window=1)
    np.testing.assert_array_equal(mean, [7.0, 7.0, 7.0])
    np.testing.assert_array_equal(std, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="window"):
        rolling_mean_std([1.0], window=0)


def test_plot_draws_rolling_mean_of_returns_csv(
    tmp_path: Path, saved_figures: list[Figure]
) -> None:
    _episode_run(tmp_path, "dqn", "CartPole-v1", [2.0, 4.0, 9.0, 1.0])
    _assert_png(plot_returns_100(str(tmp_path)))
    (ax,) = [ax for ax in saved_figures[0].axes if ax.get_visible()]
    raw, mean = ax.get_lines()
    assert mean.get_label() == "dqn"
    np.testing.assert_allclose(mean.get_xdata(), [10, 20, 30, 40])
    np.testing.assert_allclose(mean.get_ydata(), [2.0, 3.0, 5.0, 4.0])
    np.testing.assert_allclose(raw.get_ydata(), [2.0, 4.0, 9.0, 1.0])
    assert raw.get_color() == mean.get_color()
    assert raw.get_alpha() < 0.5 and raw.get_linewidth() < mean.get_linewidth()
    assert len(ax.collections) == 1  # the std band
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["dqn"]


def test_runs_of_a_multirun_have_labels_that_tell_them_apart(
    tmp_path: Path, saved_figures: list[Figure]
) -> None:
    for job in ("0", "1"):  # (looprl run -m: one Hydra job directory each)
        _episode_run(tmp_path / job, "dqn", "CartPole-v1", [1.0, 2.0])
    _episode_run(tmp_path / "1", "dqn", "CartPole-v1", [3.0])  # (its CartPole-v1_2)
    plot_returns_100(str(tmp_path))
    (ax,) = [ax for ax in saved_figures[0].axes if ax.get_visible()]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "dqn (0/dqn/CartPole-v1)", "dqn (1/dqn/CartPole-v1)", "dqn (CartPole-v1_2)"]


def test_one_agents_runs_have_a_color_each_and_many_runs_only_their_means(
    tmp_path: Path, saved_figures: list[Figure]
) -> None:
    """A sweep of one agent (seeds, ES individuals, trials) was drawn in one color, its runs
    told apart by four line styles only, under every run's raw returns and band."""
    for job in range(3):
        _episode_run(tmp_path / str(job), "dqn", "CartPole-v1", [1.0, 2.0, 3.0])
    plot_returns_100(str(tmp_path))
    (ax,) = [ax for ax in saved_figures[0].axes if ax.get_visible()]
    means = [line for line in ax.get_lines() if line.get_label().startswith("dqn")]
    assert len({line.get_color() for line in means}) == 3
    assert len(ax.get_lines()) == 6 and len(ax.collections) == 3  # (raw and band: 3 runs)
    for job in range(3, 6):
        _episode_run(tmp_path / str(job), "dqn", "CartPole-v1", [1.0, 2.0, 3.0])
    plot_returns_100(str(tmp_path))
    (ax,) = [ax for ax in saved_figures[1].axes if ax.get_visible()]
    assert len(ax.get_lines()) == 6 and not ax.collections  # (6 runs: the means only)
    assert len({line.get_color() for line in ax.get_lines()}) == 6
    _episode_run(tmp_path / "0", "ppo", "CartPole-v1", [1.0, 2.0])  # (two agents: by agent)
    plot_returns_100(str(tmp_path))
    (ax,) = [ax for ax in saved_figures[2].axes if ax.get_visible()]
    assert len({line.get_color() for line in ax.get_lines()}) == 2


def test_a_large_sweep_in_one_panel_keeps_its_axes(tmp_path: Path,
                                                   saved_figures: list[Figure]) -> None:
    """30 runs of one environment (``looprl plot`` of a multirun): their legend was taller
    than the panel, matplotlib warned "constrained_layout not applied because axes sizes
    collapsed to zero" and drew the axes squashed under it."""
    import warnings
    for job in range(30):
        _fake_run(tmp_path / str(job), "dqn", "CartPole-v1", 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plot_returns_100(str(tmp_path))
    assert not [str(w.message) for w in caught]
    (ax,) = [ax for ax in saved_figures[0].axes if ax.get_visible()]
    assert len(ax.get_legend().get_texts()) == 30
    assert ax.get_position().height > 0.3  # (of the figure)


def test_fewer_than_100_episodes_are_plotted(tmp_path: Path, saved_figures: list[Figure]) -> None:
    log_dir = _episode_run(tmp_path, "ppo", "CartPole-v1", [float(i) for i in range(30)])
    assert (Path(log_dir) / "returns100.csv").read_text() == "frame,mean,std,max,min\n"
    _assert_png(plot_returns_100(str(tmp_path)))
    mean = saved_figures[0].axes[0].get_lines()[1]
    assert len(mean.get_ydata()) == 30
    assert mean.get_ydata()[-1] == pytest.approx(14.5)


def test_timesteps_cap_applies_to_episode_curves(
    tmp_path: Path, saved_figures: list[Figure]
) -> None:
    _episode_run(tmp_path, "dqn", "CartPole-v1", [float(i) for i in range(250)])
    plot_returns_100(str(tmp_path), timesteps=1000)
    ax = saved_figures[0].axes[0]
    for line in ax.get_lines():
        assert max(line.get_xdata()) == 1000
    assert ax.get_xlim() == (0.0, 1000.0)


def test_a_run_of_one_episode_is_a_dot(tmp_path: Path, saved_figures: list[Figure]) -> None:
    """Was: a line through one point, which matplotlib draws as nothing (an empty panel)."""
    _episode_run(tmp_path, "dqn", "CartPole-v1", [7.0])
    _episode_run(tmp_path, "ppo", "CartPole-v1", [1.0, 2.0])
    plot_returns_100(str(tmp_path))
    ax = saved_figures[0].axes[0]
    markers = {line.get_label(): line.get_marker() for line in ax.get_lines()}
    assert markers["dqn"] == "o" and markers["ppo"] in ("None", "", None)


def test_timesteps_before_every_episode_is_one_line(
    tmp_path: Path, saved_figures: list[Figure], caplog: pytest.LogCaptureFixture
) -> None:
    """Was: an empty panel, written without a word."""
    _episode_run(tmp_path, "dqn", "CartPole-v1", [1.0, 2.0, 3.0])  # (frames 10, 20, 30)
    _fake_run(tmp_path, "ppo", "Pendulum-v1", rows=2)  # (frames 1000, 2000)
    with pytest.raises(ValueError, match=r"no run .* by frame 5 \(the first is at frame 10\)"):
        plot_returns_100(str(tmp_path), timesteps=5)
    assert not (tmp_path / "returns100.png").exists() and not caplog.records
    plot_returns_100(str(tmp_path), timesteps=10)
    (ax,) = [ax for ax in saved_figures[0].axes if ax.get_visible()]
    assert ax.get_title() == "CartPole-v1"  # (the run with a point by frame 10)
    assert [line.get_marker() for line in ax.get_lines()][-1] == "o"
    assert "Pendulum-v1 has no point by frame 10 (its first is at frame 1000)" in caplog.text


def test_fallback_to_returns100_without_returns_csv(
    tmp_path: Path, saved_figures: list[Figure]
) -> None:
    run_dir = _fake_run(tmp_path, "dqn", "CartPole-v1", rows=4)
    assert not (run_dir / "results.csv").exists()
    _assert_png(plot_returns_100(str(tmp_path)))
    ax = saved_figures[0].axes[0]
    (mean,) = ax.get_lines()  # no raw line
    np.testing.assert_allclose(mean.get_xdata(), [1000, 2000, 3000, 4000])
    np.testing.assert_allclose(mean.get_ydata(), [0.0, 1.5, 3.0, 4.5])


def test_header_only_returns_csv_falls_back_to_returns100(
    tmp_path: Path, saved_figures: list[Figure]
) -> None:
    run_dir = _fake_run(tmp_path, "dqn", "CartPole-v1", rows=3)
    (run_dir / "results.csv").write_text("frame,episode,return\n")
    _assert_png(plot_returns_100(str(tmp_path)))
    np.testing.assert_allclose(saved_figures[0].axes[0].get_lines()[0].get_ydata(), [0, 1.5, 3])
    (run_dir / "returns100.csv").write_text("frame,mean,std,max,min\n")
    with pytest.raises(ValueError, match="empty"):
        plot_returns_100(str(tmp_path))


@pytest.mark.parametrize("timesteps", ["1000", float("nan"), None])
def test_timesteps_that_is_no_number_is_one_line(tmp_path: Path, timesteps: object) -> None:
    _fake_run(tmp_path, "dqn", "CartPole-v1", rows=2)
    with pytest.raises(ValueError, match="timesteps must be a finite number"):
        plot_returns_100(str(tmp_path), timesteps=timesteps)  # type: ignore[arg-type]
    assert not (tmp_path / "returns100.png").exists()


def test_a_file_instead_of_the_runs_directory_says_so(tmp_path: Path) -> None:
    run_dir = _fake_run(tmp_path, "dqn", "CartPole-v1", rows=2)
    with pytest.raises(NotADirectoryError, match=f"is a file: .*{run_dir}"):
        plot_returns_100(str(run_dir / "returns100.csv"))


def test_non_finite_returns_left_out_with_a_warning(
    tmp_path: Path, saved_figures: list[Figure], caplog: pytest.LogCaptureFixture
) -> None:
    _episode_run(tmp_path, "dqn", "CartPole-v1", [2.0, float("nan"), 4.0, float("inf")])
    with caplog.at_level(logging.WARNING, logger="looprl.experiments.plots"):
        plot_returns_100(str(tmp_path))
    np.testing.assert_allclose(saved_figures[0].axes[0].get_lines()[1].get_ydata(), [2.0, 3.0])
    assert any("leaving out 2 of 4 episodes" in record.getMessage() for record in caplog.records)


def test_short_hand_edited_rows_are_skipped_with_a_warning(
    tmp_path: Path, saved_figures: list[Figure], caplog: pytest.LogCaptureFixture
) -> None:
    run_dir = _fake_run(tmp_path, "dqn", "CartPole-v1", rows=2)
    with open(run_dir / "returns100.csv", "a") as file:
        file.write("\n3000,7.5\n")  # (a blank line, then a cut one)
    with caplog.at_level(logging.WARNING, logger="looprl.experiments.plots"):
        plot_returns_100(str(tmp_path))
    np.testing.assert_allclose(saved_figures[0].axes[0].get_lines()[0].get_ydata(), [0.0, 1.5])
    assert [r.getMessage() for r in caplog.records] == [
        f"{run_dir / 'returns100.csv'}: skipping malformed line 5"]


def test_filename_suffix_chooses_the_format(tmp_path: Path) -> None:
    _fake_run(tmp_path, "dqn", "CartPole-v1", rows=2)
    assert Path(plot_returns_100(str(tmp_path), filename=str(tmp_path / "a.pdf"))).read_bytes(
        ).startswith(b"%PDF")
    _assert_png(plot_returns_100(str(tmp_path), filename=str(tmp_path / "curve")))
