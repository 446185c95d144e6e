"""Checkpoints: the experiment and the global random states in ``checkpoint.pt`` (and the K
latest ``checkpoint_<frame>.pt``); on CPU a resumed run equals an uninterrupted one."""

from __future__ import annotations

import errno
import json
import logging
import os
import pickle
import random
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from looprl.core.files import load_file, save_atomically
from looprl.core.suggest import a_type, check_count, check_flag, warn_once
from looprl.experiments.logger import checkpoint_dir
from looprl.experiments.run_files import CSV_HEADERS, check_header, removed
from looprl.memory.replay import replay_contents_saved

__all__ = ["CHECKPOINT", "check_checkpointing", "check_run_files", "check_same_config",
           "check_unfinished", "keep_checkpoints", "load_checkpoint", "load_saved",
           "numbered_checkpoints", "resumable", "save_checkpoint"]

CHECKPOINT = "checkpoint.pt"
#: the bytes of replay buffer from which a checkpoint warns
LARGE_REPLAY = 2**30
log = logging.getLogger(__name__)
_NUMBERED = re.compile(r"checkpoint_(\d+)\.pt")


def check_checkpointing(every: int | None, keep: int | None, replay: bool,
                        parts: Sequence[Any] = (), logdir: Any = "") -> int | None:
    """``keep``, checked with ``every``, ``replay`` and the ``logdir`` checkpoints go in (a
    runner's, a ``DistributedRun``'s); an error for ``parts`` not pickling."""
    check_count(optional=True, checkpoint_every=every, keep_checkpoints=keep)
    check_flag("checkpoint_replay", replay)
    if every is not None and logdir is None:
        raise ValueError("checkpoint_every needs a logdir to write checkpoints into")
    if keep is not None and every is None:
        raise ValueError(f"keep_checkpoints={keep} keeps the checkpoints checkpoint_every "
                         "saves: set checkpoint_every too")
    for part in parts if every is not None else ():
        try:
            pickle.dumps(part)
        except (TypeError, AttributeError, pickle.PicklingError) as error:
            name = f"{type(part).__name__} {getattr(part, 'name', '')}".strip()
            raise TypeError(f"checkpoint_every is set, but the {name} cannot be checkpointed: "
                            f"{error}; drop checkpoint_every, or use parts that pickle (a lambda "
                            "or a local function, in a wrapper or a component, does not)"
                            ) from None
    return None if keep is None else int(keep)


def save_checkpoint(experiment: Any, path: str | Path | None = None, replay: bool = True) -> Path:
    """Write ``experiment`` and the random states to ``path`` (default: the run directory's
    ``checkpoint.pt``; ``replay=False``: replay buffers saved empty); return the path."""
    keep = getattr(experiment, "keep_checkpoints", None) if path is None else None  # (older)
    given = path
    path = Path(path) if path is not None else Path(experiment.logger.log_dir) / CHECKPOINT
    if not path.parent.is_dir():  # (torch's error was taken for one of pickling)
        raise removed(path.parent) if given is None else FileNotFoundError(
            f"Cannot write the checkpoint {path}: the directory {path.parent} does not exist; "
            "create it, or choose another path")
    prepare = getattr(getattr(experiment, "training_env", None), "prepare_checkpoint", None)
    if prepare is not None:  # (the training environment's: Atari fixes a seed)
        prepare(experiment.frame)
    for logger in (experiment.logger, *getattr(experiment, "agent_loggers", {}).values()):
        if hasattr(logger, "flush"):  # (an agent's too: loaded, it would write its rows again)
            logger.flush()
    rng = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
           "random": random.getstate()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    try:
        with replay_contents_saved(replay) as kept, checkpoint_dir(path.parent):
            save_atomically({"experiment": experiment, "rng": rng}, path)
    except (OSError, TypeError, AttributeError, RuntimeError, pickle.PicklingError) as error:
        failed = any(text in str(error)  # (torch's writer failing, a full disk: messages vary)
                     for text in ("write failed", "unexpected pos", "failed writing"))
        if isinstance(error, OSError) or (failed and isinstance(error, RuntimeError)):
            raise OSError(getattr(error, "errno", None) or errno.EIO,
                          _not_written(path, error, failed)) from None
        raise TypeError(f"This experiment cannot be checkpointed: {error} (environments and "
                        "meta components must pickle; register hooks as bound methods; a preset's "
                        "model constructors must be module-level functions)") from None
    warn_large_replay(kept)
    if keep is not None:
        keep_checkpoints(path, int(experiment.logger.frame), keep)
    return path


def warn_large_replay(kept: list[int]) -> None:
    """Warn once if a checkpoint's replay buffers (``kept``: ``replay_contents_saved``'s bytes)
    pass ``LARGE_REPLAY``."""
    if sum(kept) > LARGE_REPLAY:  # (no path in the key: a PBT member's changes)
        warn_once(log, "A checkpoint holds %.1f GiB of replay buffer, written at each "
                  "checkpoint; checkpoint_replay=False saves the replay empty", sum(kept) / 2**30)


def _not_written(path: Path, error: BaseException, failed: bool) -> str:
    """One line: the checkpoint at ``path`` was not written, why, and the space left."""
    try:
        free = f"{shutil.disk_usage(path.parent).free / 2**20:,.0f} MiB free"
    except OSError:
        free = "free space unknown"
    full = getattr(error, "errno", None) == errno.ENOSPC or failed
    reason = "the disk is full" if full else "writing failed"
    detail = getattr(error, "strerror", None) or str(error).splitlines()[-1].strip()
    return (f"Could not write the checkpoint {path}: {reason} ({detail}; {free} on its disk); "
            "free some space (or set checkpoint_every larger, keep_checkpoints smaller) and "
            "resume from the last checkpoint")


def numbered_checkpoints(run_dir: str | Path, stem: str = "checkpoint") -> dict[int, Path]:
    """The ``<stem>_<frame>.pt`` files of ``run_dir`` by frame, oldest first."""
    numbered = re.compile(re.escape(stem) + r"_(\d+)\.pt")
    found = {int(m.group(1)): p for p in Path(run_dir).iterdir()
             if (m := numbered.fullmatch(p.name))}
    return dict(sorted(found.items()))


def resumable(run_dir: str | Path) -> list[Path]:
    """The checkpoint a resume takes from each folder under ``run_dir`` that has any."""
    folders = sorted({path.parent for path in Path(run_dir).rglob("checkpoint*.pt")
                      if path.name == CHECKPOINT or _NUMBERED.fullmatch(path.name)})
    return [folder / CHECKPOINT if (folder / CHECKPOINT).exists()
            else list(numbered_checkpoints(folder).values())[-1] for folder in folders]


def keep_checkpoints(path: Path, frame: int, keep: int) -> Path:
    """Also keep ``path`` (``<stem>.pt``) as ``<stem>_<frame>.pt``, and only the ``keep``
    latest such."""
    numbered = path.with_name(f"{path.stem}_{frame}.pt")
    temporary = numbered.with_name(numbered.name + ".tmp")
    temporary.unlink(missing_ok=True)
    try:
        os.link(path, temporary)
    except OSError:  # (no hard links here)
        shutil.copyfile(path, temporary)
    os.replace(temporary, numbered)
    for stale in list(numbered_checkpoints(path.parent, path.stem).values())[:-int(keep)]:
        stale.unlink(missing_ok=True)
    return numbered


def load_checkpoint(path: str | Path, run_name: str | None = None,
                    run_info: dict[str, Any] | None = None) -> Any:
    """The experiment saved at ``path`` (a file or a run directory), the random states restored;
    with ``run_name``, it goes on in a new run directory of that name (with ``run_info``)."""
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT
    with checkpoint_dir(path.parent):
        state = load_saved(path)
    if not (isinstance(state, dict) and {"experiment", "rng"} <= state.keys()):
        raise ValueError(f"{path} holds {a_type(state)}, not a checkpoint (written with "
                         "checkpoint_every or save_checkpoint; a saved preset, as preset.pt, "
                         "loads with looprl.presets.load_preset)")
    experiment = state["experiment"]
    run_dir = getattr(experiment.logger, "log_dir", None)  # (a checkpoint may lie elsewhere)
    if run_name is None and run_dir is not None and Path(run_dir).is_dir():
        check_run_files(Path(run_dir))
        for name, header in CSV_HEADERS.items():  # (deleted: its header is written anew)
            if not (Path(run_dir) / name).is_file():
                (Path(run_dir) / name).write_text(header + "\n", encoding="utf-8")
    if run_name is not None:
        experiment.logger.start_run(run_name, {**(run_info or {}), "hyperparameters": getattr(
            experiment.preset, "hyperparameters", {})})
    rng = state["rng"]
    torch.set_rng_state(rng["torch"])
    np.random.set_state(rng["numpy"])
    random.setstate(rng["random"])
    cuda = rng.get("cuda")  # (where this process has the same GPUs)
    if cuda is not None and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)
    return experiment


def check_run_files(run_dir: Path) -> None:
    """A ``ValueError`` naming a CSV file of ``run_dir`` that lost its header."""
    for name in CSV_HEADERS:
        if (run_dir / name).is_file():
            check_header(run_dir / name, "the resumed run would append to it: restore it, or "
                         "start a new run")


def check_unfinished(run_dir: str | Path, frames: Any, done: Any = None) -> None:
    """A one-line ``ValueError`` if ``run_dir``'s run (checkpoint: ``done``) reached ``frames``."""
    what = f"'s checkpoint is at frame {done}, past the {frames} frames asked for"
    try:
        if done is None:
            done = json.loads((Path(run_dir) / "results.json").read_text())["train"]["step"]
            what = f" is a finished run ({done} frames)"
        finished = float(done) >= float(frames)
    except (OSError, ValueError, KeyError, TypeError):  # (none, or unreadable: not finished)
        return
    if finished:
        raise ValueError(f"{run_dir}{what}: nothing to resume; give a larger budget (frames=N) "
                         "to train it on, or start a new run")


def check_same_config(run: str | Path, differences: Sequence[str]) -> None:
    """A one-line ``ValueError`` if resuming ``run`` changes it: ``differences``."""
    if differences:
        raise ValueError(f"{run} was run with another config ({'; '.join(differences)}); "
                         "resume it with its own, or start a new run")


def load_saved(path: str | Path, data: bytes | None = None) -> Any:
    """``torch.load`` of a checkpoint (``data``: its bytes); unreadable, one line of remedy."""
    path = Path(path)
    stem = re.sub(r"_\d+$", "", path.stem)  # (a Ray run's controller_ and trainer_checkpoint)
    others = [] if data is not None or not path.parent.is_dir() else [
        kept for kept in numbered_checkpoints(path.parent, stem).values()
        if not (path.exists() and os.path.samefile(kept, path))]  # (a hard link: damaged too)
    if others:
        pair = {"controller_checkpoint": "trainer_checkpoint",
                "trainer_checkpoint": "controller_checkpoint"}.get(stem)
        frame = others[-1].stem.rpartition("_")[2]
        remedy = (f"{others[-1].name} beside it is the run's latest other checkpoint: resume "
                  f"from it (in place of {stem}.pt" + (
                      f", with {pair}_{frame}.pt in place of {pair}.pt" if pair else "") +
                  ", for looprl run --resume)")
    elif data is None and path.exists():  # (damaged: a new run beside it is refused)
        here = f", or in this one once you delete {path.name}" if path.name == CHECKPOINT else ""
        remedy = (f"nothing to resume from it: start the run again in a new directory{here} "
                  "(the logs of the run so far stay where they are)")
    else:
        remedy = ("nothing to resume from it: start the run anew (the logs of the run so far "
                  "stay in its directory)")
    return load_file(path, "checkpoint", remedy, data=data)
