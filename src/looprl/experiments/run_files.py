"""The files of a run directory: claiming it, writing them, cutting them back to a checkpoint."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from looprl.core.files import check_writable
from looprl.core.imports import object_path
from looprl.environments.wrappers import read_normalization, save_normalization

__all__ = ["CSV_HEADERS", "append_lines", "check_header", "claim_run_dir", "json_text",
           "cut_back", "json_value", "keep_events", "keep_rows", "keep_until", "removed",
           "restorer", "safe_component", "save_preset", "write_run_json", "write_tables",
           "write_test_returns"]

log = logging.getLogger(__name__)

RETURNS100_HEADER = "frame,mean,std,max,min"
RETURNS_HEADER = "frame,episode,return"
#: the first line of the CSV files that plots and resumed runs read
CSV_HEADERS = {"returns100.csv": RETURNS100_HEADER, "results.csv": RETURNS_HEADER}
_OPTIONS = "logdir=..., --logdir"


def safe_component(name: str) -> str:
    """Turn ``name`` into a single path component (``ALE/Pong-v5`` -> ``ALE_Pong-v5``)."""
    cleaned = str(name).replace("/", "_").replace("\\", "_").strip()
    return cleaned if cleaned not in ("", ".", "..") else "_"


def json_value(value: Any) -> Any:
    """``json.dumps``' ``default``: a number for NumPy and torch scalars, a list of numbers for
    their arrays (ES's best parameter vector), else ``object_path``."""
    with contextlib.suppress(AttributeError, ValueError, RuntimeError, TypeError):
        return _finite(value.tolist())  # numpy and torch scalars and arrays
    return object_path(value)


def _finite(data: Any) -> Any:
    """``data`` with its non-finite floats (in dicts and lists too) as ``None``."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(value) for value in data]
    return data


def json_text(data: Any, indent: int) -> str:
    """Strict JSON of ``data``: NaN and infinities (which it has no words for) as ``null``."""
    return json.dumps(_finite(data), indent=indent, default=json_value)


def claim_run_dir(parent: Path, name: str) -> Path:
    """The first of ``name``, ``name_2``, ... absent or empty, claimed by its new ``run.json``."""
    check_writable(parent, _OPTIONS)
    missing = [path for path in (parent, *parent.parents) if not os.path.exists(path)]
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        for path in missing:  # (those it made before it failed deeper)
            if os.path.isdir(path):
                path.rmdir()
        raise ValueError(f"cannot write the run's logs in {parent}: "
                         f"{error.strerror or error} ({error.filename or parent}); choose a "
                         f"log directory you can write to ({_OPTIONS})") from None
    index = 1
    while True:
        candidate = parent / (name if index == 1 else f"{name}_{index}")
        try:
            candidate.mkdir()
        except FileExistsError:
            if not candidate.is_dir() or any(candidate.iterdir()):
                index += 1
                continue
        try:
            (candidate / "run.json").open("x").close()
            return candidate
        except FileExistsError:  # (another process's, between mkdir and this)
            index += 1


def removed(run_dir: str | Path) -> FileNotFoundError:
    """The one-line error of a run whose directory ``run_dir`` was removed while it ran."""
    return FileNotFoundError(f"The run directory {run_dir} was removed while the run wrote to "
                             "it: its logs are lost; run it again (in another log "
                             f"directory: {_OPTIONS}), and remove a run directory only once "
                             "its run has ended")


def restorer(run_dir: Path, folder: str) -> Callable[[], None]:
    """A function putting ``run_dir/folder``'s files back, unless a checkpoint there changed."""
    def saved() -> dict[Path, tuple[int, int]]:
        return {path: ((stat := path.stat()).st_ino, stat.st_mtime_ns)
                for path in run_dir.rglob("*.pt")}

    files, checkpoints = {path: path.read_bytes() for path in (run_dir / folder).iterdir()
                          if path.is_file()}, saved()

    def restore() -> None:
        if saved() == checkpoints:
            for path, data in files.items():
                path.write_bytes(data)
    return restore


def check_header(path: Path, remedy: str) -> None:
    """A ``ValueError`` naming ``path`` and ``remedy`` unless it starts with its header."""
    with open(path, encoding="utf-8", errors="replace") as file:
        first = file.readline().strip()
    header = CSV_HEADERS[path.name]
    if first != header:
        what = f"starts with {first[:40]!r}" if first else "is empty"
        raise ValueError(f"{path} {what}, not the header {header!r}: it is damaged; {remedy}")


def append_lines(path: Path, lines: list[str]) -> None:
    """Append ``lines`` to ``path`` and empty the list."""
    if not lines:
        return
    with open(path, "a", encoding="utf-8") as file:
        file.write("".join(lines))
    lines.clear()


def keep_rows(path: Path, keep: Callable[[int, str], bool]) -> None:
    """Keep the header of the CSV file ``path`` and the rows ``keep(index, line)`` accepts."""
    if path.exists():
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for index, line in enumerate(lines[1:]) if keep(index, line)]
        path.write_text("".join(lines[:1] + kept), encoding="utf-8")


def keep_until(path: Path, last: float, column: int = 0) -> None:
    """Keep the header of the CSV file ``path`` and the rows whose ``column`` is <= ``last``."""
    def keep(index: int, line: str) -> bool:
        cells = line.split(",")
        cell = cells[column].strip() if len(cells) > column else ""
        if cell.isdecimal():
            return int(cell) <= last
        if line.strip():
            log.warning("%s: dropping line %d, which has no whole number in column %d: %r",
                        path, index + 2, column + 1, line.strip()[:60])
        return False

    keep_rows(path, keep)


def cut_back(run_dir: Path, episodes: int, windows: int, frame: int, episode: int,
             episode_tags: set[str]) -> None:
    """Cut ``run_dir``'s files back to a checkpoint's ``episodes``, ``windows`` and ``frame``."""
    keep_until(run_dir / "results.csv", episodes, column=1)  # (its episode column)
    keep_rows(run_dir / "returns100.csv", lambda index, _: index < windows)
    for table in ("losses.csv", "hyperparameters.csv", "log.csv"):
        keep_until(run_dir / table, frame)
    keep_events(run_dir, frame, episode, episode_tags)


def keep_events(log_dir: Path, frame: int, episode: int, episode_tags: set[str]) -> None:
    """Drop the TensorBoard scalars after ``frame`` (``episode_tags``: from ``episode`` on)."""
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
    from tensorboard.summary.writer.record_writer import RecordWriter

    def kept(event: Any) -> bool:
        tags = [value.tag for value in event.summary.value]
        if not tags:
            return True  # file version, graphs, session logs
        last = episode - 1 if tags[0] in episode_tags else frame
        return event.step <= last

    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        events = list(LegacyEventFileLoader(str(path)).Load())
        if all(kept(event) for event in events):
            continue
        temporary = path.with_name(path.name + ".tmp")
        with open(temporary, "wb") as file:
            writer = RecordWriter(file)
            for event in filter(kept, events):
                writer.write(event.SerializeToString())
        os.replace(temporary, path)


def _cell(value: Any) -> str:
    try:
        return repr(float(value))
    except (TypeError, ValueError):
        return '"' + str(value).replace('"', "'") + '"'


def _name(name: str) -> str:
    """A ``name`` column's cell: one line, quoted (CSV's way) if it holds a comma or a quote."""
    name = " ".join(name.splitlines())
    return '"' + name.replace('"', '""') + '"' if "," in name or '"' in name else name


def write_tables(run_dir: Path, loss_rows: list[tuple[int, str, Any]],
                 log_rows: list[tuple[int, str, float]],
                 hp_rows: list[tuple[int, dict[str, Any]]], hp_columns: list[str] | None
                 ) -> list[str] | None:
    """Append (and empty) the buffered rows of the tables; the hyperparameter columns."""
    for table, rows in (("losses.csv", loss_rows), ("log.csv", log_rows)):
        if rows:
            path = run_dir / table
            lines = [] if path.exists() else ["frame,name,value\n"]
            lines += [f"{frame},{_name(name)},{float(value)!r}\n" for frame, name, value in rows]
            append_lines(path, lines)
            rows.clear()
    if hp_rows:
        path = run_dir / "hyperparameters.csv"
        if hp_columns is None:
            hp_columns = sorted(hp_rows[0][1])
            path.write_text(",".join(["frame", *hp_columns]) + "\n")
        lines = [",".join([str(frame), *(_cell(values.get(c)) for c in hp_columns)]) + "\n"
                 for frame, values in hp_rows]
        append_lines(path, lines)
        hp_rows.clear()
    return hp_columns


def write_test_returns(run_dir: Path, sets: dict[str | None, Any]) -> None:
    """``test_returns.csv`` of the returns ``sets`` (``return``, or ``set,return`` if named)."""
    named = None not in sets
    lines = ["set,return" if named else "return"]
    for name, values in sets.items():
        lines += [f"{name},{float(r)!r}" if named else repr(float(r)) for r in values]
    (run_dir / "test_returns.csv").write_text("\n".join(lines) + "\n")


def write_run_json(run_dir: Path, info: dict[str, Any]) -> None:
    """Write ``run.json``: the start time and ``info``."""
    meta = {**info, "started": datetime.now().astimezone().isoformat(timespec="seconds")}
    (run_dir / "run.json").write_text(json_text(meta, indent=2) + "\n")


def save_preset(preset: Any, env: Any, directory: str | os.PathLike, prefix: str = "") -> str:
    """Save ``preset`` to ``{directory}/{prefix}preset.pt``, ``env``'s normalizers beside it."""
    path = os.path.join(str(directory), f"{prefix}preset.pt")
    preset.save(path)
    if env is not None:
        save_normalization(read_normalization(env), directory, prefix)
    return path
