"""The run directory of ``looprl run``: checked before Hydra writes it (``check_run_dir``), and
claimed where Hydra's default would give two runs one directory (``claim_run_dir``)."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from looprl.configs.sources import PRIMARY, config_dir, config_name

__all__ = ["check_run_dir", "claim_run_dir", "path_value", "run_dir_key"]

#: Hydra's flags that print something and write no run directory.
_NO_RUN = ("--help", "-h", "--hydra-help", "--info", "-i", "--cfg", "-c", "--shell-completion")


def check_run_dir(argv: list[str]) -> None:
    """A one-line ``ValueError`` if the run directory (``hydra.run.dir``, with ``-m``
    ``hydra.sweep.dir``) cannot be written, or holds a run (``_check_no_run_in``) or a finished
    sweep's job (``0/results.json``) that this one would replace."""
    from looprl.core.files import check_writable
    if _prints_only(argv):
        return
    key = run_dir_key(argv)
    given = [path_value(a) for a in argv if a.lstrip("+").partition("=")[0] == key]
    check_writable(given[-1] if given else ".", f"{key}=..., or run it where you can write")
    if not given:
        return
    directory = Path(given[-1])
    _check_creatable(directory, f"{key}={given[-1]}", key)
    if key == "hydra.run.dir" and "resume=true" not in argv:
        _check_no_run_in(directory, given[-1])
    finished = sorted(directory.glob("*/results.json")) if key == "hydra.sweep.dir" else []
    if finished:  # (its jobs' directories 0/, 1/, ...: this sweep's jobs would replace them)
        raise ValueError(f"hydra.sweep.dir={given[-1]} holds a finished sweep "
                         f"({finished[0].relative_to(directory)}), whose jobs this one would "
                         "replace: give a new directory, or delete it")


def _check_no_run_in(directory: Path, given: str) -> None:
    """A one-line ``ValueError`` if ``directory`` (``hydra.run.dir=given``) holds a finished run
    or one with a checkpoint (``--resume`` would then go on from it with the new config)."""
    from looprl.distributed.run_state import CONTROLLER_CHECKPOINT
    from looprl.experiments.checkpoint import numbered_checkpoints, resumable
    if (directory / "results.json").is_file():
        raise ValueError(f"hydra.run.dir={given} holds a finished run (results.json), "
                         "which this one would replace: give a new directory, or delete it")
    if not (directory / ".hydra" / "config.yaml").is_file():
        return
    saved = resumable(directory) + sorted(directory.rglob(CONTROLLER_CHECKPOINT))
    if saved:  # (kept ones too: a resume takes the latest where checkpoint.pt is gone)
        names = [path.with_name("checkpoint*.pt") if numbered_checkpoints(path.parent) else path
                 for path in saved]
        resume = (f"go on with it (looprl run --resume {given}), or "
                  if _runner(directory) == "online" else "")  # (the one runner that resumes)
        raise ValueError(f"hydra.run.dir={given} holds an unfinished run, whose config this "
                         f"one would replace: {resume}give a new directory, or delete its "
                         f"{', '.join(str(name.relative_to(directory)) for name in names)} to "
                         "start anew here")


def _runner(directory: Path) -> str | None:
    """The ``runner.name`` of the run in ``directory`` (``None``: its config is unreadable)."""
    from omegaconf import OmegaConf
    try:
        return str(OmegaConf.load(directory / ".hydra" / "config.yaml").runner.name)
    except Exception:  # (damaged: YAML's or OmegaConf's error; no runner key)
        return None


def _check_creatable(directory: Path, given: str, key: str) -> None:
    """A one-line ``ValueError`` if ``directory`` cannot be made (``os.access`` can say yes
    where ``mkdir`` fails: ``/proc`` for root); what this makes, it removes (Hydra makes it)."""
    missing = [path for path in (directory, *directory.parents) if not os.path.exists(path)]
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"{given}: cannot create the directory ({error.strerror or error}: "
                         f"{error.filename or directory}); choose another {key}, one you can "
                         "write in") from None
    finally:
        for path in missing:
            if os.path.isdir(path):  # (made here: also where a deeper one failed)
                path.rmdir()


def _prints_only(argv: list[str]) -> bool:
    """Whether ``argv`` has a Hydra flag that prints something and writes no run directory."""
    return any(a.partition("=")[0] in _NO_RUN for a in argv)


def run_dir_key(argv: list[str]) -> str:
    """The key of the directory a run writes (with ``-m``, the sweep's)."""
    return "hydra.sweep.dir" if "-m" in argv or "--multirun" in argv else "hydra.run.dir"


def claim_run_dir(argv: list[str], now: datetime.datetime | None = None) -> Path | None:
    """Hydra's default run directory (``outputs/DATE/TIME``, with ``-m`` ``multirun/...``), made
    here, or the first free ``TIME-1``, ``TIME-2``, ... if a run of the same second has it;
    ``None`` where ``argv`` names the directory, prints only, or chooses a config of its own."""
    key = run_dir_key(argv)
    directory = config_dir(argv)
    if (_prints_only(argv)
            or any(a.lstrip("+").partition("=")[0] == key for a in argv)
            or config_name(argv) != PRIMARY
            or (directory is not None and (directory / f"{PRIMARY}.yaml").exists())):
        return None
    now = now or datetime.datetime.now()
    base = Path("outputs" if key == "hydra.run.dir" else "multirun", f"{now:%Y-%m-%d}",
                f"{now:%H-%M-%S}")
    base.parent.mkdir(parents=True, exist_ok=True)
    suffix = 0
    while True:
        path = base.with_name(f"{base.name}-{suffix}") if suffix else base
        try:
            path.mkdir()  # (atomic: one process gets each name)
            return path
        except FileExistsError:
            suffix += 1


def path_value(override: str) -> str:
    """The path a ``key=value`` ``override`` names, Hydra's quotes taken off (``'my runs'``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException
    text = override.partition("=")[2]
    try:
        value = OverridesParser.create().parse_override(f"key={text}").value()
    except OverrideParseException:  # (Hydra says what is wrong when it parses them)
        return text
    return value if isinstance(value, str) else text
