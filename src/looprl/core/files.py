"""Loading, finding and writing looprl's files, each failure said in one line."""

from __future__ import annotations

import io
import os
import pickle
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from looprl.core.imports import current_module

__all__ = ["check_writable", "find_one", "load_file", "save_atomically", "write_atomically"]

#: a script's own module, and its copy in a process started with ``spawn`` (macOS, Windows)
_SCRIPT_MODULES = ("__main__", "__mp_main__")


def save_atomically(obj: Any, path: str | Path) -> None:
    """``torch.save(obj)`` at ``path`` through ``write_atomically``: an interrupted save leaves
    the file as it was (or none), never half of one."""
    write_atomically(path, lambda temporary: torch.save(obj, temporary))


def write_atomically(path: str | Path, write: Callable[[Path], Any]) -> None:
    """``write(temporary)``, a file beside ``path``, then renamed over it."""
    path = Path(path)
    temporary = _temporary(path)
    try:
        write(temporary)
        os.replace(temporary, path)  # (fails where path is a directory: no temporary left)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _temporary(path: Path) -> Path:
    """The file ``write_atomically`` writes before it renames it over ``path``."""
    return path.with_name(path.name + ".tmp")


def _never_written(path: Path, what: str, remedy: str) -> str:
    """The line of a ``path`` whose first write was interrupted (its temporary left beside it)."""
    return (f"{path} was never written: the write of this first {what} was interrupted (the "
            f"process was killed while it wrote {_temporary(path).name}, left incomplete "
            f"beside it); {remedy}")


class _Unpickler(pickle.Unpickler):
    """``pickle``'s, finding a class that moved (``MOVED``, ``MERGED``) where it is now."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(current_module(module, name), name)


#: ``pickle`` with ``_Unpickler`` (``torch.load``'s ``pickle_module``)
_PICKLE = types.SimpleNamespace(**{**{key: getattr(pickle, key) for key in pickle.__all__},
                                   "Unpickler": _Unpickler, "__name__": "pickle"})


def load_file(path: str | Path, what: str, remedy: str, map_location: Any = None,
              data: bytes | None = None) -> Any:
    """``torch.load`` of ``path`` (or of ``data``, its bytes); ``what`` it should hold
    (``"looprl preset"``) and the ``remedy`` are for one-line errors."""
    path = Path(path)
    if data is None and not path.is_file():
        raise FileNotFoundError(_never_written(path, what, remedy) if _temporary(path).is_file()
                                else f"No {what} at {path} ({remedy})")
    try:
        return torch.load(path if data is None else io.BytesIO(data), weights_only=False,
                          map_location=map_location, pickle_module=_PICKLE)
    except ModuleNotFoundError as error:
        if error.name in _SCRIPT_MODULES:
            raise _of_a_script(path, what, f"the module {error.name!r}") from None
        if (error.name or "").startswith("looprl."):  # as ``looprl.memory.nstep`` went
            raise ValueError(f"{path} holds a {what} written by another version of looprl: "
                             f"its module {error.name!r} was removed or renamed since; "
                             f"{remedy}") from None
        raise ModuleNotFoundError(f"{path} holds a {what} that needs the module "
                                  f"{error.name!r}, which is not importable here: install it, "
                                  "or run from the directory that holds it") from None
    except AttributeError as error:
        if "Can't get attribute" not in str(error):
            raise _unreadable(path, what, remedy, error) from None
        if any(f"module '{name}'" in str(error) for name in _SCRIPT_MODULES):
            raise _of_a_script(path, what, str(error).splitlines()[0]) from None
        raise ValueError(f"{path} holds a {what} written by another version of looprl: "
                         f"{str(error).splitlines()[0]} (a class it refers to was renamed or "
                         f"removed since); {remedy}") from None
    except Exception as error:  # a damaged pickle can fail in any of a dozen ways
        if isinstance(error, RuntimeError) and "CUDA" in str(error) \
                and not torch.cuda.is_available():
            raise ValueError(f"{path} was saved by a run on a GPU and torch here sees none: "
                             "load it on a machine with a GPU") from None
        raise _unreadable(path, what, remedy, error) from None


def _of_a_script(path: Path, what: str, missing: str) -> ValueError:
    """The error of a file that refers to a class (or function) of the script that wrote it."""
    return ValueError(f"{path} holds a {what} that refers to a class or function defined in "
                      f"the script that wrote it, which pickle finds only in that script "
                      f"({missing}): define it in a module that both import (a .py file "
                      f"beside the script), and write the {what} again")


def _unreadable(path: Path, what: str, remedy: str, error: Exception) -> ValueError:
    reason = str(error).splitlines()[0].split(". ")[0][:120] if str(error) else ""
    return ValueError(f"{path} is not a readable {what}: it is truncated, corrupted or not "
                      f"written by looprl ({type(error).__name__}: {reason}); {remedy}")


def check_path(path: Any, what: str, optional: bool = False) -> Any:
    """``path`` if it is a ``str`` or an ``os.PathLike`` (``optional``: or ``None``), else a
    one-line ``TypeError`` that names ``what`` it is (``run_experiment's logdir``)."""
    if not (isinstance(path, str | os.PathLike) or optional and path is None):
        raise TypeError(f"{what} is a directory path (a str or a Path){' or None' * optional}, "
                        f"got {type(path).__name__} {path!r:.40}")
    return path


def check_writable(path: str | Path, option: str) -> None:
    """A one-line ``ValueError`` (naming ``option``) unless ``path`` can be written in."""
    path = Path(path)
    # (os.path's: False for a name too long, which mkdir then reports, where Path's raises)
    existing = next((p for p in (path, *path.parents) if os.path.exists(p)), Path.cwd())
    if not existing.is_dir():
        reason = "Not a directory"
    elif not os.access(existing, os.W_OK | os.X_OK):
        reason = "Permission denied"
    else:
        return
    raise ValueError(f"cannot write the run's logs in {path}: {reason} ({existing}); choose a "
                     f"log directory you can write to ({option})")


def find_one(run_dir: str | Path, name: str, missing: str, several: str,
             found: list[Path] | None = None) -> Path:
    """The one checkpoint file ``name`` under ``run_dir`` (or of ``found``): else a one-line
    ``FileNotFoundError`` (``missing``) or ``ValueError`` (``several``)."""
    found = sorted(Path(run_dir).glob(f"**/{name}")) if found is None else found
    if not found:
        partial = sorted(Path(run_dir).glob(f"**/{_temporary(Path(name)).name}"))
        raise FileNotFoundError(_never_written(
            partial[0].with_suffix(""), "checkpoint", "there is none to resume from: start the "
            "run anew (the logs of the run so far stay in its directory)") if partial else missing)
    if len(found) > 1:
        raise ValueError(f"{len(found)} {several}: {', '.join(map(str, found))}")
    return found[0]
