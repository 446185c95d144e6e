"""Plot the ``returns100.csv`` files of a whole ``runs`` directory.

``plot_returns_100`` draws one subplot per environment and one line per run (the mean
return of the last 100 episodes, shaded by one standard deviation) and saves a PNG. It
uses matplotlib's Agg canvas directly, so it works without a display and leaves the
pyplot backend untouched.
"""

from __future__ import annotations

import csv
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["plot_returns_100"]

logger = logging.getLogger(__name__)

_MAX_COLUMNS = 3
_LINESTYLES = ("-", "--", ":", "-.")


@dataclass
class _Run:
    """The returns100 curve of one run."""

    agent: str
    env: str
    path: Path
    data: np.ndarray  # shape (rows, 5): frame, mean, std, max, min


def _run_names(csv_path: Path) -> tuple[str, str]:
    """Return ``(agent, env)`` from the sibling ``run.json`` or from the path."""
    meta_path = csv_path.parent / "run.json"
    try:
        meta = json.loads(meta_path.read_text())
        return str(meta["agent"]), str(meta["env"])
    except (OSError, ValueError, KeyError, TypeError):
        return csv_path.parent.parent.name, csv_path.parent.name


def _read_rows(csv_path: Path) -> np.ndarray:
    """Read the numeric rows of a returns100 csv; malformed rows are skipped."""
    rows = []
    with open(csv_path, newline="", encoding="utf-8") as file:
        for line_no, row in enumerate(csv.reader(file), start=1):
            if line_no == 1 or not row:
                continue
            try:
                rows.append([float(v) for v in row[:5]])
            except ValueError:
                logger.warning("%s: skipping malformed line %d", csv_path, line_no)
    rows = [r for r in rows if len(r) == 5]
    return np.asarray(rows, dtype=np.float64).reshape(-1, 5)


def _load_runs(runs_dir: Path) -> list[_Run]:
    """Load every non-empty ``returns100.csv`` under ``runs_dir``."""
    paths = sorted(runs_dir.rglob("returns100.csv"))
    if not paths:
        raise FileNotFoundError(f"no returns100.csv found under runs directory {runs_dir!s}")
    runs = []
    for path in paths:
        data = _read_rows(path)
        if data.shape[0] == 0:
            logger.warning("%s has no data rows yet; skipping it", path)
            continue
        agent, env = _run_names(path)
        runs.append(_Run(agent, env, path, data))
    if not runs:
        raise ValueError(f"every returns100.csv under {runs_dir!s} is empty (header only)")
    return runs


def _label(run: _Run, runs: list[_Run]) -> str:
    """Label a run by its agent, plus its directory name when the agent repeats."""
    same = [r for r in runs if r.agent == run.agent and r.env == run.env]
    return run.agent if len(same) == 1 else f"{run.agent} ({run.path.parent.name})"


def _draw_env(ax: Axes, env: str, runs: list[_Run], colors: dict[str, str], timesteps: int) -> None:
    """Draw all runs of one environment on ``ax``."""
    seen: dict[str, int] = {}
    for run in runs:
        data = run.data if timesteps <= 0 else run.data[run.data[:, 0] <= timesteps]
        frame, mean, std = data[:, 0], data[:, 1], data[:, 2]
        repeat = seen[run.agent] = seen.get(run.agent, -1) + 1
        color = colors[run.agent]
        ax.plot(
            frame,
            mean,
            label=_label(run, runs),
            color=color,
            linestyle=_LINESTYLES[repeat % len(_LINESTYLES)],
        )
        ax.fill_between(frame, mean - std, mean + std, color=color, alpha=0.15)
    if timesteps > 0:
        ax.set_xlim(0, timesteps)
    ax.set_title(env)
    ax.set_xlabel("frame")
    ax.set_ylabel("mean return (last 100 episodes)")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")


def _agent_colors(runs: list[_Run]) -> dict[str, str]:
    """Give every agent one color, the same in every subplot."""
    agents = sorted({run.agent for run in runs})
    return {agent: f"C{i % 10}" for i, agent in enumerate(agents)}


def _figure(runs: list[_Run], timesteps: int) -> Figure:
    """Build the figure: one subplot per environment."""
    envs = sorted({run.env for run in runs})
    ncols = min(len(envs), _MAX_COLUMNS)
    nrows = math.ceil(len(envs) / ncols)
    fig = Figure(figsize=(5.5 * ncols, 4.0 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    colors = _agent_colors(runs)
    for ax, env in zip(axes, envs):
        _draw_env(ax, env, [r for r in runs if r.env == env], colors, timesteps)
    for ax in axes[len(envs) :]:
        ax.set_visible(False)
    return fig


def plot_returns_100(
    runs_dir: str = "runs", timesteps: int = -1, filename: str | None = None
) -> str:
    """Plot the 100-episode mean returns of every run under ``runs_dir``.

    Args:
        runs_dir: Directory searched recursively for ``returns100.csv`` files.
        timesteps: When positive, only frames up to ``timesteps`` are drawn.
        filename: Where to save the PNG; defaults to ``{runs_dir}/returns100.png``.

    Returns:
        The path of the saved PNG.

    Raises:
        FileNotFoundError: If no ``returns100.csv`` exists under ``runs_dir``.
        ValueError: If every ``returns100.csv`` found holds only its header.
    """
    runs = _load_runs(Path(runs_dir))
    out = Path(filename) if filename is not None else Path(runs_dir) / "returns100.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig = _figure(runs, timesteps)
    fig.savefig(out, dpi=100, format="png")
    return str(out)
