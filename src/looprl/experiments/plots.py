"""``plot_returns_100``: one subplot per environment, one line per run (matplotlib's Agg)."""

from __future__ import annotations

import csv
import json
import logging
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from looprl.core.suggest import check_count, check_finite
from looprl.experiments.run_files import check_header

if TYPE_CHECKING:  # matplotlib is imported when a plot is drawn (0.5 s, e.g. in each Ray worker)
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_returns_100", "rolling_mean_std"]

logger = logging.getLogger(__name__)

_MAX_COLUMNS = 3
_LINESTYLES = ("-", "--", ":", "-.")
_SPREAD_RUNS = 4  # a panel of more runs draws their means only (no raw returns, no std bands)
_WINDOW = 100
_REMEDY = "move it away (or its run directory) and plot again"


@dataclass
class _Run:
    """A run's curve: rolling mean and std at ``frame``, and the raw returns (or ``None``)."""

    agent: str
    env: str
    path: Path
    frame: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    raw: np.ndarray | None


def rolling_mean_std(values: np.ndarray, window: int = _WINDOW) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, std)`` of the last (up to) ``window`` values at every index of ``values``."""
    check_count(window=window)
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        return x.copy(), x.copy()
    offset = x.mean()
    x = x - offset  # (centred: the sum-of-squares formula stays accurate)
    sums = np.concatenate(([0.0], np.cumsum(x)))
    squares = np.concatenate(([0.0], np.cumsum(x * x)))
    end = np.arange(1, x.size + 1)
    start = np.maximum(end - int(window), 0)
    mean = (sums[end] - sums[start]) / (end - start)
    var = (squares[end] - squares[start]) / (end - start) - mean**2
    return mean + offset, np.sqrt(np.maximum(var, 0.0))


def _read_rows(csv_path: Path, width: int) -> np.ndarray:
    """The numeric rows (``width`` columns) of a CSV file (malformed ones: with a warning)."""
    rows = []
    with open(csv_path, newline="", encoding="utf-8", errors="replace") as file:
        for line_no, row in enumerate(csv.reader(file), start=1):
            if line_no == 1 or not "".join(row).strip():
                continue
            try:
                values = [float(v) for v in row[:width]]
            except ValueError:
                values = []
            if len(values) == width:
                rows.append(values)
            else:
                logger.warning("%s: skipping malformed line %d", csv_path, line_no)
    return np.asarray(rows, dtype=np.float64).reshape(-1, width)


def _load_run(path: Path) -> _Run | None:
    """One run from its ``returns100.csv`` path, preferring the sibling ``results.csv``; its
    agent and env from the sibling ``run.json``, else from the path."""
    try:
        meta = json.loads((path.parent / "run.json").read_text())
        agent, env = str(meta["agent"]), str(meta["env"])
    except (OSError, ValueError, KeyError, TypeError):
        agent, env = path.parent.parent.name, path.parent.name
    check_header(path, _REMEDY)  # (damaged, even where results.csv is drawn instead)
    episodes_path = path.parent / "results.csv"
    if episodes_path.is_file():
        check_header(episodes_path, _REMEDY)
        episodes = _read_rows(episodes_path, 3)
        finite = np.isfinite(episodes).all(axis=1)
        if not finite.all():
            logger.warning("%s: leaving out %d of %d episodes, whose frame or return is not "
                           "finite (nan, inf)", episodes_path, (~finite).sum(), finite.size)
        episodes = episodes[finite]
        if episodes.shape[0]:
            mean, std = rolling_mean_std(episodes[:, 2])
            return _Run(agent, env, path, episodes[:, 0], mean, std, episodes[:, 2])
    data = _read_rows(path, 5)
    if data.shape[0] == 0:
        return None
    return _Run(agent, env, path, data[:, 0], data[:, 1], data[:, 2], None)


def _load_runs(runs_dir: Path) -> list[_Run]:
    """Every run under ``runs_dir`` that has data."""
    if runs_dir.is_file():
        raise NotADirectoryError(f"{runs_dir!s} is a file: give the directory of runs (or of "
                                 f"one run, {runs_dir.parent!s}) that looprl train or looprl "
                                 "run wrote")
    if not runs_dir.is_dir():
        raise FileNotFoundError(f"no directory {runs_dir!s}: give the one looprl train or "
                                "looprl run wrote its runs in (by default runs)")
    paths = sorted(runs_dir.rglob("returns100.csv"))
    if not paths:
        raise FileNotFoundError(f"no returns100.csv found under runs directory {runs_dir!s}")
    runs = []
    for path in paths:
        run = _load_run(path)
        if run is None and (path.parent / "test_returns.csv").is_file():  # (ES's best/)
            logger.info("%s holds an evaluation (test_returns.csv) and no training episode: "
                        "not plotted", path.parent)
        elif run is None:
            logger.warning("%s has no data rows yet (and no episodes in results.csv); "
                           "skipping it", path)
        else:
            runs.append(run)
    if not runs:
        raise ValueError(f"every run under {runs_dir!s} is empty (returns100.csv header "
                         "only, no episodes in results.csv)")
    return runs


def _up_to(runs: list[_Run], timesteps: int, runs_dir: Path) -> list[_Run]:
    """``runs`` cut at frame ``timesteps`` (if positive); runs with no point left are left out."""
    if timesteps <= 0:
        return runs
    keeps = [run.frame <= timesteps for run in runs]
    if not any(keep.any() for keep in keeps):
        first = min(run.frame.min() for run in runs)
        raise ValueError(f"no run under {runs_dir!s} has a point by frame {timesteps:g} (the "
                         f"first is at frame {first:g}): give timesteps (--timesteps) above "
                         "it, or none")
    kept = []
    for run, keep in zip(runs, keeps, strict=True):
        if keep.any():
            kept.append(replace(run, frame=run.frame[keep], mean=run.mean[keep],
                                std=run.std[keep], raw=None if run.raw is None else run.raw[keep]))
        else:
            logger.warning("%s has no point by frame %g (its first is at frame %g): not "
                           "plotted", run.path.parent, timesteps, run.frame.min())
    return kept


def _run_label(run: _Run, runs: list[_Run]) -> str:
    """The end of ``run``'s directory path that tells it from the other ``runs``'."""
    parts = run.path.parent.parts
    for depth in range(1, len(parts)):
        if sum(other.path.parent.parts[-depth:] == parts[-depth:] for other in runs) == 1:
            return "/".join(parts[-depth:])
    return str(run.path.parent)


def _draw_env(ax: Axes, env: str, runs: list[_Run], colors: dict[str, str], timesteps: int) -> None:
    """Draw one environment's runs: raw returns and std band (up to ``_SPREAD_RUNS`` runs) and
    mean line of each; ``colors``: by agent, or by run path where the plot has one agent."""
    seen: dict[str, int] = {}
    for run in runs:
        repeat = seen[run.agent] = seen.get(run.agent, -1) + 1
        same = [r for r in runs if r.agent == run.agent and r.env == run.env]
        label = run.agent if len(same) == 1 else f"{run.agent} ({_run_label(run, same)})"
        color = colors.get(run.agent) or colors[str(run.path)]
        frame, mean, std = run.frame, run.mean, run.std
        # every point at one frame (one episode; episodes ending together): no line to draw
        dot = {"marker": "o", "markersize": 5} if np.ptp(frame) == 0 else {}
        if len(runs) <= _SPREAD_RUNS:  # (more: a thicket over the means)
            if run.raw is not None:
                ax.plot(frame, run.raw, color=color, alpha=0.25, linewidth=0.6, zorder=1)
            ax.fill_between(frame, mean - std, mean + std, color=color, alpha=0.15,
                            linewidth=0, zorder=2)
        ax.plot(frame, mean, label=label, color=color, linewidth=1.8, zorder=3,
                linestyle=_LINESTYLES[repeat % len(_LINESTYLES)], **dot)
    if timesteps > 0:
        ax.set_xlim(0, timesteps)
    ax.set_title(env)
    ax.set_xlabel("frame")
    ax.set_ylabel("mean return (last 100 episodes)")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")


def _figure(runs: list[_Run], timesteps: int) -> Figure:
    """One subplot per environment."""
    envs = sorted({run.env for run in runs})
    ncols = min(len(envs), _MAX_COLUMNS)
    nrows = math.ceil(len(envs) / ncols)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    legend = max(sum(run.env == env for run in runs) for env in envs)  # (its lines)
    height = max(4.0, 1.5 + 0.2 * legend)  # (a sweep's: the axes keep room beside it)
    fig = Figure(figsize=(5.5 * ncols, height * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    agents = sorted({run.agent for run in runs})  # one color each, the same in every subplot
    colors = {agent: f"C{i % 10}" for i, agent in enumerate(agents)}
    if len(agents) == 1:  # (one agent's seeds, trials or members: one color each)
        colors = {str(run.path): f"C{i % 10}" for i, run in enumerate(runs)}
    for ax, env in zip(axes, envs):
        _draw_env(ax, env, [r for r in runs if r.env == env], colors, timesteps)
    for ax in axes[len(envs) :]:
        ax.set_visible(False)
    return fig


def plot_returns_100(runs_dir: str = "runs", timesteps: int = -1,
                     filename: str | None = None) -> str:
    """Plot the 100-episode mean returns of every run under ``runs_dir`` (with a
    ``results.csv``: at every episode, over the raw returns), up to ``timesteps`` frames if
    positive, into ``filename`` (default: ``{runs_dir}/returns100.png``; in the format its
    suffix names, else PNG); return its path. No run to plot is one error line."""
    check_finite("plot_returns_100's ", timesteps=timesteps)
    runs_dir = Path(runs_dir).expanduser()  # (``~/runs``, as the loggers take it)
    runs = _up_to(_load_runs(runs_dir), timesteps, runs_dir)
    out = Path(filename).expanduser() if filename is not None else runs_dir / "returns100.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, kind = _figure(runs, timesteps), out.suffix[1:].lower()
    fig.savefig(out, dpi=100,
                format=kind if kind in fig.canvas.get_supported_filetypes() else "png")
    return str(out)
