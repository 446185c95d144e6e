"""``ExperimentLogger``: TensorBoard events, ``run.json`` and CSV files in one run directory
``{logdir}/{agent}/{env}`` (``{env}_2``, ... when taken); with ``wandb={...}``, W&B too."""

from __future__ import annotations

import logging
import math
import numbers
import os
import time
import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from looprl.core.files import check_path
from looprl.core.imports import import_extra
from looprl.core.logger import DummyLogger, Logger
from looprl.core.suggest import check_count
from looprl.experiments import run_files as files

__all__ = ["ExperimentLogger", "MemoryLogger", "RecordingLogger", "check_wandb", "checkpoint_dir",
           "mean_return"]

log = logging.getLogger(__name__)

_WINDOW = 100
_CHECKPOINT_DIR: ContextVar[Path | None] = ContextVar("looprl_checkpoint_dir", default=None)
_DIRS = ("_logdir", "log_dir")  # (a logger's paths that move with its checkpoint)


def mean_return(returns: Iterable[float], last: int | None = None) -> float:
    """The mean of ``returns`` (the last ``last`` of them; ``nan``: none), on both runtimes."""
    values = list(returns)[-last:] if last is not None else list(returns)
    return float(np.mean(values)) if values else math.nan


@contextmanager
def checkpoint_dir(directory: str | Path) -> Iterator[None]:
    """Loggers (un)pickled in this block keep their run directory relative to ``directory``."""
    token = _CHECKPOINT_DIR.set(Path(directory))
    try:
        yield
    finally:
        _CHECKPOINT_DIR.reset(token)


def check_wandb(wandb: Any, logdir: Any) -> Any:
    """``wandb`` (``wandb.init``'s arguments, or ``None``), or one line: not a dict, or no
    ``logdir`` to keep its runs in."""
    if wandb is not None and not isinstance(wandb, Mapping):  # ("not a mapping")
        raise TypeError(f"wandb is wandb.init's arguments (a dict; looprl run: "
                        f"logging.wandb={{project: NAME}}) or None, got {wandb!r:.40}")
    if wandb is not None and logdir is None:
        raise ValueError("wandb logging needs a logdir (its runs are stored there)")
    return wandb


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
#: buffered ``losses.csv`` rows at most (a run whose episodes never end keeps no more)
_ROW_BATCH = 4096
#: the event writer's queue: a batch of scalars fits (torch's 10 blocked: 8x slower)
_WRITER_QUEUE = 4 * _SCALAR_BATCH


def _write_scalars(writer: SummaryWriter, scalars: list[tuple[str, float, int, float]]) -> None:
    """Hand ``scalars`` (tag, value, step, wall time) to ``writer``; empty the list."""
    for tag, value, step, walltime in scalars:
        writer.add_scalar(tag, value, step, walltime=walltime)
    scalars.clear()


def _flush_at_exit(path: Path, lines: list[str], writer: SummaryWriter,
                   scalars: list[tuple[str, float, int, float]]) -> None:
    """Finalizer of an unclosed logger: write what is still buffered, close the event writer."""
    try:
        files.append_lines(path, lines)
    except OSError as error:
        log.warning("could not write %d buffered rows to %s: %s", len(lines), path, error)
    if scalars and not Path(writer.log_dir).is_dir():
        log.warning("could not write %d buffered TensorBoard values: %s was removed",
                    len(scalars), writer.log_dir)
        scalars.clear()
    _write_scalars(writer, scalars)
    try:
        writer.close()
    except OSError as error:  # (its thread failed: the folder was removed under it)
        log.warning("could not close the TensorBoard event file in %s: %s", writer.log_dir, error)


def _to_array(values: Any) -> np.ndarray:
    """Floats, 0-d tensors, a tensor or an array as a flat float64 array."""
    if isinstance(values, torch.Tensor):
        return values.detach().to("cpu", torch.float64).numpy().ravel()
    return np.asarray([float(v) for v in values], dtype=np.float64).ravel()


def _stats(values: np.ndarray) -> tuple[float, float, float, float]:
    """``(mean, std, max, min)`` of a non-empty array (population std)."""
    return float(values.mean()), float(values.std()), float(values.max()), float(values.min())


def _step(logger: ExperimentLogger, step: str | int) -> int:
    """``logger.frame``, ``logger.episode`` or ``step`` itself (a whole number, as ALL's)."""
    if step == "frame":
        return logger.frame
    if step == "episode":
        return logger.episode
    if isinstance(step, numbers.Integral) and not isinstance(step, bool) and step >= 0:
        return int(step)
    raise ValueError(f"step must be 'frame', 'episode' or a whole number >= 0, got {step!r}")


class ExperimentLogger(Logger):
    """Logger writing into one run directory (``log_dir``, absolute; ``run_name``: a new one
    under ``{logdir}/{agent}/{env}``); ``verbose=False``: no losses, schedules or info;
    ``loss_every``: one ``add_loss`` call per name in this many; ``wandb``: ``wandb.init``'s."""

    def __init__(self, agent_name: str, env_name: str, logdir: str = "runs",
                 verbose: bool = True, loss_every: int = 1, wandb: dict[str, Any] | None = None,
                 run_name: str | None = None, run_info: dict[str, Any] | None = None) -> None:
        check_count(loss_every=loss_every)
        check_path(logdir, "the experiment's logdir")
        _check_names(agent_name=agent_name, env_name=env_name)
        self.agent_name, self.env_name, self.verbose = agent_name, env_name, verbose
        self.loss_every, self.frame, self.episode = int(loss_every), 0, 0
        self._logdir, self._wandb_options = os.path.abspath(os.path.expanduser(logdir)), wandb
        self._open(run_name, run_info)

    def _open(self, run_name: str | None, run_info: dict[str, Any] | None) -> None:
        """Claim the run directory and start its files."""
        self._resumed, self._saved_at = False, None  # (loaded, nothing written since)
        parent = Path(self._logdir) / files.safe_component(self.agent_name)
        if run_name is not None:
            parent = parent / files.safe_component(self.env_name)
        run_dir = files.claim_run_dir(parent, files.safe_component(run_name or self.env_name))
        self.log_dir, self.run_name = str(run_dir), run_name
        self.describe_run(run_info or {})
        self._returns100_path = run_dir / "returns100.csv"
        self._returns100_path.write_text(files.RETURNS100_HEADER + "\n")
        self._returns: deque[float] = deque(maxlen=_WINDOW)
        self._mean: float | None = math.nan  # (of ``_returns``; ``None``: to compute)
        self._n_returns = 0
        self._returns_path = run_dir / "results.csv"
        self._returns_path.write_text(files.RETURNS_HEADER + "\n")
        self._pending_rows: list[str] = []
        self._loss_calls: dict[str, int] = {}
        self._loss_rows: list[tuple[int, str, Any]] = []
        self._hp_rows: list[tuple[int, dict[str, Any]]] = []
        self._log_rows: list[tuple[int, str, float]] = []
        self._hp_columns: list[str] | None = None
        self.last_losses: dict[str, Any] = {}  # name -> last value (for the dashboard)
        self._episode_tags: set[str] = set()  # tags written with step="episode"
        self._open_writer([])
        self.__dict__.pop("_wandb_id", None)  # (a closed run's: a new run directory, a new run)
        self._wandb = None if self._wandb_options is None else _wandb_run(self, self._wandb_options)

    def start_run(self, run_name: str, run_info: dict[str, Any] | None = None) -> None:
        """Go on in a new run directory ``run_name`` under ``{logdir}/{agent}/{env}``."""
        if getattr(self, "_writer", None) is not None:
            self.close()
        self._open(run_name, run_info)

    def describe_run(self, run_info: dict[str, Any]) -> None:
        """Write ``run.json`` anew: the agent, the env and ``run_info``."""
        files.write_run_json(Path(self.log_dir), {"agent": self.agent_name,
                                                  "env": self.env_name, **run_info})

    def _open_writer(self, pending: list[tuple[str, float, int, float]]) -> None:
        """Open the event writer and the finalizer (which must not hold ``self``)."""
        self._writer = SummaryWriter(log_dir=self.log_dir, max_queue=_WRITER_QUEUE)
        self._pending_scalars = pending  # (tag, value, step, wall time)
        self._handed = time.monotonic()
        weakref.finalize(self, _flush_at_exit, self._returns_path, self._pending_rows,
                         self._writer, self._pending_scalars)

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the event writer and the W&B run (reopened on load); the run directory
        also relative to the checkpoint's (``checkpoint_dir``), if below it."""
        self._hand_scalars()
        state = {key: value for key, value in self.__dict__.items() if key != "_writer"}
        state.update(_wandb=None, _wandb_id=self.__dict__.get("_wandb_id") if self._wandb is None
                     else self._wandb.id)
        folder = _CHECKPOINT_DIR.get()
        if folder is not None and os.path.relpath(self.log_dir, folder).split(os.sep)[0] != "..":
            state["_relative"] = {key: os.path.relpath(state[key], folder) for key in _DIRS}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Continue a checkpoint's run directory (where the checkpoint is now, if it was below
        it), cut back to it at the first write."""
        relative, folder = state.pop("_relative", None), _CHECKPOINT_DIR.get()
        if relative is not None and folder is not None:
            state.update({key: os.path.normpath(folder / relative[key]) for key in _DIRS})
            for key in ("_returns_path", "_returns100_path"):
                state[key] = Path(state["log_dir"]) / state[key].name
        self.__dict__.update({"_mean": None, **state, "_saved_at": state.get("_saved_at") or (
            state["frame"], state["episode"])})
        self._writer, self._wandb, self._resumed = None, None, True

    def _start_writing(self) -> None:
        """Before a resumed run's first write: cut its files back to the checkpoint, reopen them."""
        if not self._resumed:
            return
        self._resumed = False
        files.cut_back(Path(self.log_dir), self._n_returns - len(self._pending_rows),
                       self._n_returns // _WINDOW, *self.__dict__.pop("_saved_at"),
                       self._episode_tags)
        self._open_writer(self._pending_scalars)
        if self._wandb_options is not None:
            self._wandb = _wandb_run(self, self._wandb_options, self.__dict__.pop("_wandb_id"))

    def _scalar(self, tag: str, value: Any, step: str | int) -> None:
        """Write one scalar at ``self.frame``, ``self.episode`` or ``step``."""
        self._start_writing()
        if self._wandb is None and self._wandb_options is not None:  # (written after close)
            self._wandb = _wandb_run(self, self._wandb_options,
                                     self.__dict__.pop("_wandb_id", None))
        count = _step(self, step)
        if step == "episode":
            self._episode_tags.add(tag)
        value = float(value)
        pending = self._pending_scalars
        pending.append((tag, value, count, time.time()))
        if len(pending) >= _SCALAR_BATCH or time.monotonic() - self._handed > _SCALAR_SECONDS:
            self._hand_scalars()
        if self._wandb is not None:
            self._wandb.log({tag: value, "frame": self.frame})

    def _hand_scalars(self) -> None:
        if self._pending_scalars:  # (the writer's thread would fail with a traceback)
            self._check_dir()
        _write_scalars(self._writer, self._pending_scalars)
        self._handed = time.monotonic()

    def add_loss(self, name: str, value: Any, step: str | int = "frame") -> None:
        """Log ``loss/<name>`` (every ``loss_every``-th call); ``last_losses`` keeps the last."""
        self.last_losses[name] = value
        if not self.verbose:
            return
        calls = self._loss_calls[name] = self._loss_calls.get(name, -1) + 1
        if calls % self.loss_every:
            return
        self._scalar("loss/" + name, value, step)
        self._loss_rows.append((self.frame, name, value))
        if len(self._loss_rows) >= _ROW_BATCH:
            self._write_rows()

    def add_hyperparameters(self, values: dict[str, Any]) -> None:
        """Buffer a ``hyperparameters.csv`` row (verbose only)."""
        if self.verbose:
            self._start_writing()
            self._hp_rows.append((self.frame, values))

    def add_hparams(self, hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
                    step: str | int = "frame") -> None:
        """ALL's: the hyperparameters with their metrics, in TensorBoard's HParams tab."""
        count = _step(self, step)
        kinds = (int, float, str, bool, torch.Tensor)
        hparams = {k: v for k, v in hparam_dict.items() if isinstance(v, kinds)}
        metrics = {k: float(v) for k, v in metric_dict.items()}
        self._start_writing()
        self._hand_scalars()
        self._writer.add_hparams(hparams, metrics, run_name=".", global_step=count)

    def add_log(self, name: str, value: float) -> None:
        """Log a meta component's ``log/<name>`` and a ``log.csv`` row (even if not verbose)."""
        self._scalar("log/" + name, value, "frame")
        self._log_rows.append((self.frame, name, value))

    def add_schedule(self, name: str, value: Any, step: str | int = "frame") -> None:
        """Log ``schedule/<name>`` (verbose only)."""
        if self.verbose:
            self._scalar("schedule/" + name, value, step)

    def add_info(self, name: str, value: Any, step: str | int = "frame") -> None:
        """Log ``info/<name>`` (verbose only)."""
        if self.verbose:
            self._scalar("info/" + name, value, step)

    def add_eval(self, name: str, value: Any, step: str | int = "frame") -> None:
        """Log ``eval/<name>``."""
        self._scalar("eval/" + name, value, step)

    def add_runtime(self, name: str, value: Any) -> None:
        """Log ``runtime/<name>`` (a Ray run's throughput)."""
        self._scalar("runtime/" + name, value, "frame")

    def add_summary(self, name: str, values: Any, step: str | int = "frame") -> None:
        """Log ``summary/<name>/{mean,std,max,min}`` of ``values`` (ignored when empty)."""
        array = _to_array(values)
        for key, stat in zip(("mean", "std", "max", "min"), _stats(array) if array.size else ()):
            self._scalar(f"summary/{name}/{key}", stat, step)

    def flush(self) -> None:
        """Write the buffered rows and flush the event file (a resumed run: once it writes)."""
        if self._resumed:
            return
        self._write_rows()
        self._hand_scalars()
        self._writer.flush()

    def _check_dir(self) -> None:
        """One ``FileNotFoundError`` line if the run directory was removed (once: rows go)."""
        if not os.path.isdir(self.log_dir):
            for rows in (self._pending_rows, self._pending_scalars, self._loss_rows,
                         self._log_rows, self._hp_rows):
                rows.clear()
            raise files.removed(self.log_dir)

    def _write_rows(self) -> None:
        if self._pending_rows or self._loss_rows or self._log_rows or self._hp_rows:
            self._check_dir()
        files.append_lines(self._returns_path, self._pending_rows)
        self._hp_columns = files.write_tables(Path(self.log_dir), self._loss_rows, self._log_rows,
                                              self._hp_rows, self._hp_columns)

    def close(self) -> None:
        """Write the buffered rows, flush and close the event file (safe to call again)."""
        if self._resumed:
            return
        self.flush()
        self._writer.close()
        if self._wandb is not None:  # (a later write goes on in the same W&B run)
            self._wandb_id = self._wandb.id
            self._wandb.finish()
            self._wandb = None

    @property
    def mean_return100(self) -> float:
        """Mean of the last (up to) 100 training-episode returns; ``nan`` if none yet."""
        if self._mean is None:  # (read once per env step: computed once per new return)
            self._mean = mean_return(self._returns)
        return self._mean

    def add_episode_return(self, ret: float) -> None:
        """Record the return of a finished training episode (CSV rows every 100)."""
        ret = float(ret)
        self._scalar("train/returns/episode", ret, "episode")
        self._scalar("train/returns/frame", ret, "frame")
        self._returns.append(ret)
        self._mean = None
        self._n_returns += 1
        self._pending_rows.append(f"{self.frame},{self._n_returns},{ret!r}\n")
        if self._n_returns % _WINDOW == 0:
            self._write_rows()
            values = np.fromiter(self._returns, dtype=np.float64)
            mean, std, vmax, vmin = _stats(values)
            files.append_lines(self._returns100_path,
                               [f"{self.frame},{mean!r},{std!r},{vmax!r},{vmin!r}\n"])
            self.add_summary("returns100", values, step="frame")

    def add_test_returns(self, returns: list[float] | dict[str, list[float]]) -> None:
        """Write test returns (or named sets) to ``test_returns.csv``, ``eval/`` and summaries."""
        sets = {name: _to_array(values) for name, values in (
            returns.items() if isinstance(returns, dict) else [(None, returns)])}
        for name, array in sets.items():
            if array.size:
                self._scalar(f"eval/{name}/returns/mean" if name else "eval/returns/mean",
                             float(array.mean()), "frame")
            self.add_summary(f"test_returns/{name}" if name else "test_returns", array)
        files.write_test_returns(Path(self.log_dir), sets)
        self.flush()


def _check_names(**names: Any) -> None:
    """A one-line ``TypeError`` unless ``ExperimentLogger``'s ``names`` are text (ALL's order
    of arguments, the experiment first, is not looprl's)."""
    for key, name in names.items():
        if not isinstance(name, str):
            raise TypeError(f"ExperimentLogger(agent_name, env_name, logdir='runs', ...) "
                            f"takes the names as text, got {key}={name!r:.60}: ALL's "
                            "ExperimentLogger(experiment, agent_name, env_name, ...) is "
                            "ExperimentLogger(agent_name, env_name, logdir=..., verbose=...) "
                            "(the experiment sets the logger's frame and episode)")


class RecordingLogger(ExperimentLogger):
    """An ``ExperimentLogger`` that also keeps every training return (``returns``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.returns: list[float] = []

    def add_episode_return(self, ret: float) -> None:
        """Keep ``ret`` and log it."""
        self.returns.append(float(ret))
        super().add_episode_return(ret)


class MemoryLogger(DummyLogger):
    """A logger that keeps the training returns in memory (``returns``) and writes no file."""

    def __init__(self) -> None:
        super().__init__()
        self.returns: list[float] = []
        self._mean: float | None = math.nan

    @property
    def mean_return100(self) -> float:  # type: ignore[override]
        """Mean of the last (up to) 100 training returns (``nan``: none yet)."""
        if self._mean is None:
            self._mean = mean_return(self.returns[-100:])
        return self._mean

    def add_episode_return(self, ret: float) -> None:
        """Keep ``ret``."""
        self.returns.append(float(ret))
        self._mean = None
