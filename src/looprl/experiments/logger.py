"""``ExperimentLogger``: TensorBoard event files plus plain-text return summaries.

One logger per (agent, environment) run owns the run directory ``{logdir}/{agent}/{env}``
(``{env}_2``, ... when a previous run used it) and writes there:

* ``run.json`` -- agent, env, start time and the caller's ``run_info`` (the preset's
  ``hyperparameters``; for runners also the ES individual or Optuna trial and its values);
* TensorBoard events: ``train/returns/{episode,frame}``, ``eval/returns/mean``,
  ``loss/<name>``, ``schedule/<name>``, ``info/<name>``, ``log/<name>``, ``summary/...``,
  ``runtime/<name>`` (a Ray run's throughput, policy lag, restarts);
* ``returns100.csv`` -- every 100 training episodes, ``frame,mean,std,max,min`` of the last
  100 returns;
* ``results.csv`` -- ``frame,episode,return``, one row per training episode;
* ``test_returns.csv`` -- the returns of the final test episodes (with a held-out set, a
  ``set`` column: ``train_set`` / ``test_set``);
* ``losses.csv`` (verbose only) and ``log.csv`` (meta components' ``log/*`` scalars) --
  ``frame,name,value``; ``hyperparameters.csv`` (verbose only) -- ``frame,hp/...`` at the
  end of each training episode.

CSV rows are buffered and appended every 100 episodes, on ``flush``, ``close`` and garbage
collection. TensorBoard scalars are buffered too and handed to the writer in batches (at 256
scalars or after 5 seconds; one at a time cost some 3% of a PPO CartPole run). The loop keeps
the counters ``frame`` and ``episode``; each method's ``step`` picks the x-axis. With
``wandb={...}`` (``wandb.init`` arguments) every scalar also goes to a W&B run.
"""

from __future__ import annotations

import logging
import math
import time
import weakref
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from looprl.core.imports import import_extra
from looprl.core.logger import Logger
from looprl.core.suggest import check_count
from looprl.experiments.run_files import (
    RETURNS100_HEADER,
    RETURNS_HEADER,
    append_lines,
    claim_run_dir,
    keep_events,
    keep_rows,
    safe_component,
    write_run_json,
    write_tables,
)

__all__ = ["ExperimentLogger", "log_test_returns", "moving_runs", "write_test_returns_csv"]

log = logging.getLogger(__name__)

_WINDOW = 100
_OPTIONS = "logdir=..., --logdir"  # what chooses the log directory, for messages
_MOVING: ContextVar[bool] = ContextVar("looprl_moving_runs", default=False)


@contextmanager
def moving_runs() -> Iterator[None]:
    """Loggers unpickled inside this block do not continue their run directory: the caller
    gives each a new one (``start_run``)."""
    token = _MOVING.set(True)
    try:
        yield
    finally:
        _MOVING.reset(token)


def _wandb_run(logger: ExperimentLogger, options: dict[str, Any], run_id: str | None = None) -> Any:
    """A W&B run in the logger's run directory, with ``frame`` as its x-axis."""
    wandb = import_extra("wandb", "W&B logging needs wandb", "wandb")
    options = {"project": "looprl", "name": f"{logger.agent_name}/{logger.env_name}", **options}
    run = wandb.init(dir=logger.log_dir, id=run_id, resume="allow" if run_id else None,
                     reinit="create_new", **options)
    run.define_metric("frame")
    run.define_metric("*", step_metric="frame")
    return run


_SCALAR_BATCH, _SCALAR_SECONDS = 256, 5.0  # buffered TensorBoard scalars: at most, oldest


def _write_scalars(writer: SummaryWriter, scalars: list[tuple[str, float, int, float]]) -> None:
    """Hand ``scalars`` (tag, value, step, wall time) to ``writer``; empty the list."""
    for tag, value, step, walltime in scalars:
        writer.add_scalar(tag, value, step, walltime=walltime)
    scalars.clear()


def _flush_at_exit(path: Path, lines: list[str], writer: SummaryWriter,
                   scalars: list[tuple[str, float, int, float]]) -> None:
    """Finalizer of a logger that was never closed: write what is still buffered."""
    try:
        append_lines(path, lines)
    except OSError as error:
        log.warning("could not write %d buffered rows to %s: %s", len(lines), path, error)
    if scalars and not Path(writer.log_dir).is_dir():  # (removed: the writer would fail)
        log.warning("could not write %d buffered TensorBoard values: %s was removed",
                    len(scalars), writer.log_dir)
    elif scalars:
        _write_scalars(writer, scalars)
        writer.flush()


def _to_array(values: Any) -> np.ndarray:
    """Floats, 0-d tensors, a tensor or an array as a flat float64 array."""
    if isinstance(values, torch.Tensor):
        return values.detach().to("cpu", torch.float64).numpy().ravel()
    return np.asarray([float(v) for v in values], dtype=np.float64).ravel()


def _counter(logger: ExperimentLogger, step: str) -> int:
    """The counter of ``logger`` that ``step`` selects (``"frame"`` or ``"episode"``)."""
    if step not in ("frame", "episode"):
        raise ValueError(f"step must be 'frame' or 'episode', got {step!r}")
    return logger.frame if step == "frame" else logger.episode


def _stats(values: np.ndarray) -> tuple[float, float, float, float]:
    """Return ``(mean, std, max, min)`` of a non-empty array (population std)."""
    return float(values.mean()), float(values.std()), float(values.max()), float(values.min())


class ExperimentLogger(Logger):
    """Logger writing TensorBoard events and return summaries into one run directory
    (``log_dir``, a ``str``); the loop sets its ``frame`` and ``episode`` counters.

    Args:
        agent_name, env_name: the first and second directory level under ``logdir``.
        verbose: when False, ``add_loss``, ``add_schedule`` and ``add_info`` write nothing.
        loss_every: write every ``loss_every``-th ``add_loss`` call per name (the first too).
        wandb: ``wandb.init`` arguments, to log to W&B too (``None``: not).
        run_name: the run directory under ``{logdir}/{agent}/{env}`` (``gen001_ind002``);
            ``None``: ``{logdir}/{agent}/{env}`` itself.
        run_info: more entries of ``run.json`` (non-JSON values as their ``repr``).
    """

    def __init__(self, agent_name: str, env_name: str, logdir: str = "runs",
                 verbose: bool = True, loss_every: int = 1, wandb: dict[str, Any] | None = None,
                 run_name: str | None = None, run_info: dict[str, Any] | None = None) -> None:
        check_count(loss_every=loss_every)
        self.agent_name = agent_name
        self.env_name = env_name
        self.verbose = verbose
        self.loss_every = int(loss_every)
        self.frame = 0
        self.episode = 0
        self._logdir = logdir
        self._wandb_options = wandb
        self._open(run_name, run_info)

    def _open(self, run_name: str | None, run_info: dict[str, Any] | None) -> None:
        """Claim the run directory and start its files."""
        parent = Path(self._logdir) / safe_component(self.agent_name)
        if run_name is not None:
            parent = parent / safe_component(self.env_name)
        run_dir = claim_run_dir(parent, safe_component(run_name or self.env_name))
        self.log_dir = str(run_dir)
        write_run_json(run_dir, {"agent": self.agent_name, "env": self.env_name,
                                 **(run_info or {})})
        self._returns100_path = run_dir / "returns100.csv"
        self._returns100_path.write_text(RETURNS100_HEADER + "\n")
        self._returns: deque[float] = deque(maxlen=_WINDOW)
        self._n_returns = 0
        self._mean100 = math.nan
        self._returns_path = run_dir / "results.csv"
        self._returns_path.write_text(RETURNS_HEADER + "\n")
        self._pending_rows: list[str] = []
        self._loss_calls: dict[str, int] = {}
        self._loss_rows: list[tuple[int, str, Any]] = []
        self._hp_rows: list[tuple[int, dict[str, Any]]] = []
        self._log_rows: list[tuple[int, str, float]] = []
        self._hp_columns: list[str] | None = None
        self.last_losses: dict[str, Any] = {}  # name -> last value (for the dashboard)
        self._episode_tags: set[str] = set()  # tags written with step="episode"
        self._open_writer([])
        self._wandb = None if self._wandb_options is None else _wandb_run(self, self._wandb_options)

    def start_run(self, run_name: str, run_info: dict[str, Any] | None = None) -> None:
        """Go on in a new run directory ``run_name`` under ``{logdir}/{agent}/{env}`` (an ES
        individual on a shared agent, a PBT member after exploit); the counters go on."""
        if getattr(self, "_writer", None) is not None:
            self.close()
        self._open(run_name, run_info)

    # ------------------------------------------------------------- checkpoints
    def _open_writer(self, pending: list[tuple[str, float, int, float]]) -> None:
        """Open the event writer (to hand ``pending`` scalars) and the finalizer that writes
        what is still buffered when an unclosed logger is collected."""
        self._writer = SummaryWriter(log_dir=self.log_dir)
        self._pending_scalars = pending  # (tag, value, step, wall time)
        self._handed = time.monotonic()
        # Holds the files, writer and buffers, never ``self``: the logger stays collectable.
        weakref.finalize(self, _flush_at_exit, self._returns_path, self._pending_rows,
                         self._writer, self._pending_scalars)

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the event writer and the W&B run (reopened on load), after handing
        the buffered scalars to the writer."""
        self._hand_scalars()
        state = dict(self.__dict__)
        del state["_writer"]
        state["_wandb_id"] = self._wandb.id if self._wandb is not None else None
        state["_wandb"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Continue a checkpoint's run directory, dropping the rows and scalars written
        after it was taken."""
        self.__dict__.update(state)
        if _MOVING.get():  # the caller starts a new run directory (``start_run``)
            self._writer, self._wandb = None, None
            return
        written = self._n_returns - len(self._pending_rows)
        keep_rows(self._returns_path, lambda index, _: index < written)
        keep_rows(self._returns100_path, lambda index, _: index < self._n_returns // _WINDOW)
        for table in ("losses.csv", "hyperparameters.csv", "log.csv"):  # rows up to the frame
            keep_rows(Path(self.log_dir) / table,
                       lambda _, line: int(line.split(",")[0]) <= self.frame)
        keep_events(Path(self.log_dir), self.frame, self.episode, self._episode_tags)
        self._open_writer(self._pending_scalars)
        if self._wandb_options is not None:  # the same W&B run goes on
            self._wandb = _wandb_run(self, self._wandb_options, self.__dict__.pop("_wandb_id"))

    # ------------------------------------------------------------------ helpers
    def _scalar(self, tag: str, value: Any, step: str) -> None:
        """Write one scalar; ``float()`` happens here, i.e. only for written values."""
        if step == "episode":
            self._episode_tags.add(tag)  # (trimmed by episode at a resume)
        value = float(value)
        self._buffer_scalar(tag, value, _counter(self, step))
        if self._wandb is not None:
            self._wandb.log({tag: value, "frame": self.frame})

    def _buffer_scalar(self, tag: str, value: float, step: int) -> None:
        """Keep a TensorBoard scalar for the writer (see the module docstring)."""
        pending = self._pending_scalars
        pending.append((tag, value, step, time.time()))
        if len(pending) >= _SCALAR_BATCH or time.monotonic() - self._handed > _SCALAR_SECONDS:
            self._hand_scalars()

    def _hand_scalars(self) -> None:
        """Hand the buffered scalars to the event writer."""
        _write_scalars(self._writer, self._pending_scalars)
        self._handed = time.monotonic()

    # --------------------------------------------------------------- interface
    def add_loss(self, name: str, value: Any, step: str = "frame") -> None:
        """Log a training loss as ``loss/<name>`` (every ``loss_every``-th call); the last
        value of each is kept in ``last_losses``, written or not."""
        self.last_losses[name] = value
        if not self.verbose:
            return
        if self.loss_every > 1:
            calls = self._loss_calls.get(name, 0)
            self._loss_calls[name] = calls + 1
            if calls % self.loss_every:
                return
        self._scalar("loss/" + name, value, step)
        self._loss_rows.append((self.frame, name, value))

    def add_hyperparameters(self, values: dict[str, Any]) -> None:
        """Buffer a ``hyperparameters.csv`` row of ``values`` at this frame (verbose only)."""
        if self.verbose:
            self._hp_rows.append((self.frame, values))

    def add_log(self, name: str, value: float) -> None:
        """Log a meta component's scalar as ``log/<name>`` and buffer a ``log.csv`` row
        (written whatever ``verbose`` says: a component asked for it)."""
        self._scalar("log/" + name, value, "frame")
        self._log_rows.append((self.frame, name, value))

    def add_schedule(self, name: str, value: Any, step: str = "frame") -> None:
        """Log a scheduled hyperparameter as ``schedule/<name>`` (verbose only)."""
        if self.verbose:
            self._scalar("schedule/" + name, value, step)

    def add_info(self, name: str, value: Any, step: str = "frame") -> None:
        """Log a debugging statistic as ``info/<name>`` (verbose only)."""
        if self.verbose:
            self._scalar("info/" + name, value, step)

    def add_eval(self, name: str, value: Any, step: str = "frame") -> None:
        """Log an evaluation statistic as ``eval/<name>`` (always written)."""
        self._scalar("eval/" + name, value, step)

    def add_runtime(self, name: str, value: Any) -> None:
        """Log a statistic of the runtime (a Ray run's throughput) as ``runtime/<name>``."""
        self._scalar("runtime/" + name, value, "frame")

    def add_summary(self, name: str, values: Any, step: str = "frame") -> None:
        """Log ``summary/<name>/{mean,std,max,min}`` of ``values`` (ignored when empty)."""
        array = _to_array(values)
        if array.size == 0:
            return
        x = _counter(self, step)
        for key, stat in zip(("mean", "std", "max", "min"), _stats(array)):
            self._buffer_scalar(f"summary/{name}/{key}", stat, x)

    def flush(self) -> None:
        """Write the buffered CSV rows and flush the event file."""
        self._write_rows()
        self._hand_scalars()
        self._writer.flush()

    def _write_rows(self) -> None:
        append_lines(self._returns_path, self._pending_rows)
        self._hp_columns = write_tables(Path(self.log_dir), self._loss_rows, self._log_rows,
                                        self._hp_rows, self._hp_columns)

    def close(self) -> None:
        """Write the buffered rows, flush and close the event file (safe to call again)."""
        self.flush()
        self._writer.close()
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None

    def __enter__(self) -> ExperimentLogger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ returns
    @property
    def mean_return100(self) -> float:
        """Mean of the last (up to) 100 training-episode returns; ``nan`` if none yet."""
        return self._mean100

    def add_episode_return(self, ret: float) -> None:
        """Record the (undiscounted) return of one finished training episode; every 100
        episodes write the buffered rows and a ``returns100.csv`` row."""
        ret = float(ret)
        self._scalar("train/returns/episode", ret, "episode")
        self._scalar("train/returns/frame", ret, "frame")
        self._returns.append(ret)
        self._mean100 = math.fsum(self._returns) / len(self._returns)
        self._n_returns += 1
        self._pending_rows.append(f"{self.frame},{self._n_returns},{ret!r}\n")
        if self._n_returns % _WINDOW == 0:
            self._write_rows()
            self._write_returns100()

    def _write_returns100(self) -> None:
        """Append one row for the current window to ``returns100.csv`` and TensorBoard."""
        values = np.fromiter(self._returns, dtype=np.float64)
        mean, std, vmax, vmin = _stats(values)
        append_lines(self._returns100_path, [f"{self.frame},{mean!r},{std!r},{vmax!r},{vmin!r}\n"])
        self.add_summary("returns100", values, step="frame")

    def add_test_returns(self, returns: list[float] | dict[str, list[float]]) -> None:
        """Write test returns to ``test_returns.csv``, ``eval/returns/mean`` and summaries
        (named sets, ``{"train_set": [...], ...}``: per set)."""
        sets = dict(returns) if isinstance(returns, dict) else {None: returns}
        for tag, mean in write_test_returns_csv(Path(self.log_dir), sets).items():
            self._scalar(tag, mean, "frame")
        for name, values in sets.items():
            self.add_summary(f"test_returns/{name}" if name else "test_returns", values)
        self.flush()


def write_test_returns_csv(log_dir: Path, sets: dict[str | None, list[float]]
                           ) -> dict[str, float]:
    """Write ``test_returns.csv`` (``return``, or ``set,return``) in ``log_dir``; the
    TensorBoard tags of the non-empty sets' means, with their values."""
    named = None not in sets
    lines, means = ["set,return" if named else "return"], {}
    for name, returns in sets.items():
        array = _to_array(returns)
        lines += [f"{name},{float(r)!r}" if named else repr(float(r)) for r in array]
        if array.size:
            means[f"eval/{name}/returns/mean" if named else "eval/returns/mean"] = float(
                array.mean())
    (log_dir / "test_returns.csv").write_text("\n".join(lines) + "\n")
    return means


def log_test_returns(log_dir: str, sets: dict[str | None, list[float]], frame: int) -> None:
    """``add_test_returns`` for a run whose logger is closed (a Ray run's): the CSV and the
    means at ``frame`` in one more events file."""
    means = write_test_returns_csv(Path(log_dir), sets)
    writer = SummaryWriter(log_dir=log_dir)
    for tag, mean in means.items():
        writer.add_scalar(tag, mean, frame)
    writer.close()
