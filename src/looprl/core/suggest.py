"""One-line error messages for bad arguments."""

from __future__ import annotations

import contextlib
import difflib
import linecache
import logging
import math
import numbers
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


#: Mighty's names of settings that looprl's presets name otherwise (docs/coming-from-mighty.md):
#: not aliases, a did-you-mean (``hyperparameter_hint``)
MIGHTY_NAMES = {"zipf_param": "ez_mu", "epsilon_start": "initial_exploration",
                "epsilon_final": "final_exploration",
                "epsilon_decay_steps": "final_exploration_step", "gae_lambda": "lam",
                "td_update_class": "update", "replay_buffer_class": "buffer",
                "learning_rate": "lr", "gamma": "discount_factor", "max_grad_norm": "clip_grad",
                "n_units": "hidden", "n_gradient_steps": "epochs", "policy_class": "exploration",
                "es": "strategy", "clip_range": "clip", "ppo_clip": "clip",
                "ent_coef": "entropy_coef", "vf_coef": "value_coef",
                "value_loss_coef": "value_coef", "policy_lr": "lr_actor", "q_lr": "lr_critic",
                "tau": "polyak_rate", "soft_update_weight": "polyak_rate",
                "batch_size": "minibatch_size", "learning_starts": "replay_start_size",
                "buffer_size": "replay_buffer_size", "capacity": "replay_buffer_size",
                "target_update_freq": "target_update_frequency",
                # meta components' (RND's, PLR's) arguments
                "rnd_output_dim": "feature_dim", "rnd_lr": "lr", "rnd_network_config": "network",
                "sample_strategy": "strategy"}


def hyperparameter_hint(name: str, valid: list[str]) -> str:
    """``did_you_mean`` for an unknown hyperparameter or argument: looprl's name of a Mighty one
    (``MIGHTY_NAMES``; its ``hp/*`` key where ``valid`` holds those) where the preset has it,
    else the closest of ``valid``."""
    ours = MIGHTY_NAMES.get(name.removeprefix("hp/"))
    for mine in (ours, f"hp/{ours}"):
        if ours is not None and mine in valid:
            return f" Did you mean {mine!r} (Mighty's {name!r})?"
    return did_you_mean(name, valid)


def did_you_mean(name: str, choices: Iterable[str], n: int = 1) -> str:
    """``" Did you mean 'x'?"`` naming up to ``n`` close matches of ``name``, or ``""``; up to
    8 choices under ``name`` (``hp/epsilon/player_1`` for ``hp/epsilon``: one per agent) first."""
    choices = list(choices)
    under = [choice for choice in choices if choice.startswith(f"{name}/")]
    close = (under if 0 < len(under) <= 8
             else difflib.get_close_matches(name, choices, n=n, cutoff=0.6))
    return f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""


#: the lines (and keys) ``warn_once`` gave in this run, and the depth of the runs now running
WARNED: set[str] = set()
_RUNS = [0]


@contextlib.contextmanager
def warnings_per_run(said: set[str] | None = None) -> Iterator[None]:
    """The block (as a decorator: the call) as one run for ``warn_once``: the outermost starts
    with no line said (each run of a sweep says its own), the runs inside are part of it.
    ``said``: the lines of a run that goes on in later blocks (``Experiment.train`` calls)."""
    if not _RUNS[0]:
        WARNED.clear()
        WARNED.update(said or ())
    before = set(WARNED)
    _RUNS[0] += 1
    try:
        yield
    finally:
        _RUNS[0] -= 1
        if said is not None:  # (its own: not those of the run it is part of)
            said.update(WARNED - before)


def warn_once(log: logging.Logger, message: str, *args: Any, key: str | None = None) -> None:
    """``log.warning(message, *args)`` the first time this run (``warnings_per_run``) meets it
    (``key``: meets ``key``, whatever ``args``)."""
    line = message % args if args else message
    if (key or line) not in WARNED:
        WARNED.add(key or line)
        log.warning("%s", line)


class WorkerWarnings(logging.Handler):
    """A Ray worker's warnings (Python's too) from ``start`` on (or within, as a context manager),
    which ``take`` hands over, each once, as ``(logger, line)`` for ``log_worker_warnings``."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: dict[tuple[str, str], None] = {}  # (ordered, each once)

    def start(self) -> WorkerWarnings:
        """Keep this process's warnings from now on; return itself."""
        logging.getLogger().addHandler(self)
        logging.captureWarnings(True)
        return self

    __enter__ = start

    def __exit__(self, *exception: object) -> None:
        """Let this process's warnings be written again (those kept stay until taken)."""
        logging.captureWarnings(False)
        logging.getLogger().removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines[record.name, record.getMessage().strip()] = None

    def take(self) -> list[tuple[str, str]]:
        """The lines kept since the last call."""
        with self.lock:
            taken, self.lines = list(self.lines), {}
        return taken


def log_worker_warnings(lines: Iterable[tuple[str, str]]) -> None:
    """Log a worker's ``WorkerWarnings`` here, on their loggers, each line once per run."""
    for name, line in lines:
        warn_once(logging.getLogger(name), "%s", line)


def check_choice(what: str, value: str, choices: Sequence[str], hint: str = "") -> str:
    """``value`` if it is one of ``choices``, else a one-line ``ValueError`` listing them."""
    if value not in choices:
        hint = hint or did_you_mean(str(value), choices)
        raise ValueError(f"Unknown {what} {value!r}.{hint} Valid: {', '.join(choices)}")
    return value


def _check_each(values: dict[str, Any], optional: bool, holds: Callable[[Any], Any], what: str,
                kind: str = "", owner: str = "") -> None:
    """A one-line ``ValueError`` (``{owner}{name} must be {what}``) for the first value that
    ``holds`` rejects or fails on; ``None`` passes where ``optional``."""
    for name, value in values.items():
        try:
            good = bool(holds(value)) if value is not None else optional
        except (TypeError, ValueError, RuntimeError):  # (text: '10' >= 1; arrays, tensors)
            good = False
        if not good:
            hint = text_hint(value, kind) if kind else ""
            raise ValueError(f"{owner}{name} must be {what}, got {value!r}{hint}")


def check_count(optional: bool = False, **values: Any) -> None:
    """A one-line ``ValueError`` for a value that is no whole number >= 1 (a bool included;
    ``None`` passes where ``optional``)."""
    _check_each(values, optional, lambda v: v >= 1 and float(v).is_integer() and not _is_bool(v),
                "positive (a whole number)", "int")


def check_device(device: Any) -> Any:
    """Return ``device`` if torch can use it here, else raise a one-line ``ValueError``."""
    import torch

    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError):
        raise ValueError(f"Unknown device {device!r}: use 'cpu', 'cuda' or 'cuda:N'") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"Device {device!r} asked for, but torch {torch.__version__} sees no "
                         "CUDA GPU here; use 'cpu'")
    if kind not in ("cpu", "cuda"):  # ('mps', 'xpu', ...: where this torch can use them)
        try:
            torch.empty(0, device=device)
        except (RuntimeError, AssertionError):  # (torch's words run over many lines)
            raise ValueError(f"Device {device!r} asked for, but torch {torch.__version__} "
                             "cannot use it here; use 'cpu'") from None
    return device


def moved(move: Callable[[], T], device: Any) -> T:
    """``move()``, a move of tensors to ``device``; where torch cannot use ``device`` there,
    ``check_device``'s one line instead of torch's words."""
    try:
        return move()
    except (RuntimeError, AssertionError):
        check_device(device)
        raise


def is_number(value: Any) -> bool:
    """Whether ``value`` is one real number: not a bool, text or NaN (NumPy scalars count)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and value == value


def is_whole(value: Any) -> bool:
    """Whether ``value`` is an integer (NumPy's too), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_seed(owner: str, seed: Any, optional: bool = True) -> int | None:
    """``seed`` as an int, a whole number that NumPy's generator takes (``None`` passes where
    ``optional``), else a one-line ``TypeError`` (or ``ValueError``) that ``owner`` begins."""
    if seed is None and optional:
        return None
    if not is_whole(seed) or not 0 <= seed < 2**32:
        error = ValueError if is_whole(seed) else TypeError
        either = " or None" if optional else ""
        raise error(f"{owner}: a seed is a whole number from 0 to 2**32 - 1{either}, got "
                    f"{seed!r:.40}")
    return int(seed)


def check_finite(owner: str = "", optional: bool = False, **values: Any) -> None:
    """A one-line ``ValueError`` for a value that is not one finite number (``None`` passes
    where ``optional``); ``owner`` begins the message (``"HPSchedule's "``)."""
    _check_each(values, optional, lambda v: is_number(v) and math.isfinite(v), "a finite number",
                owner=owner)


def check_flag(name: str, value: Any) -> bool:
    """``value`` as a ``bool``, or a one-line ``ValueError`` if it is no bool (text such as
    ``'no'`` is true in Python)."""
    if not _is_bool(value):
        raise ValueError(f"{name} must be True or False, got {value!r:.40}")
    return bool(value)


def _is_bool(value: Any) -> bool:
    """Whether ``value`` is a Python or NumPy bool."""
    import numpy as np
    return isinstance(value, bool | np.bool_)


def check_positive(optional: bool = False, **values: Any) -> None:
    """A one-line ``ValueError`` for a value not positive (``None`` passes where ``optional``)."""
    _check_each(values, optional, lambda v: v > 0, "positive", "float")


def text_hint(value: Any, kind: str) -> str:
    """For a number given as text (an argparse option without ``type=``), how to convert it;
    for other text (``checkpoint_every=abc``), that it is no number."""
    if not isinstance(value, str):
        return ""
    try:
        float(value)
    except ValueError:
        return " (text, not a number)"
    return (f" (text, not a number: convert it with {kind}(...), or give the argparse option "
            f"type={kind})")


def a_type(value: Any) -> str:
    """``value``'s type with its article: ``"a dict"``, ``"an AlgorithmSpec"`` (``"None"``)."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def check_callable(name: str, fn: Any, what: str) -> Any:
    """``fn`` if it is callable, else a one-line ``TypeError`` (``{name} is {what}, got ...``)."""
    if not callable(fn):
        raise TypeError(f"{name} is {what}, got {a_type(fn)} ({fn!r:.40})")
    return fn


def check_once(keys: Sequence[str], given: Sequence[str], how: str = "give it once") -> None:
    """A one-line ``ValueError`` for a key given twice (``given[i]``: ``keys[i]``'s argument)."""
    first: dict[str, str] = {}
    for key, argument in zip(keys, given, strict=True):
        if key in first:
            raise ValueError(f"{key} is given twice ({first[key]} and {argument}): {how}")
        first[key] = argument


def either(name: str, value: Any, alias: str, other: Any, default: Any = None) -> Any:
    """``value``, else ``other`` (``alias``: ALL's name of ``name``), else ``default``; a
    one-line ``ValueError`` for both given, different."""
    if value is not None and other is not None and value != other:
        raise ValueError(f"{name}={value!r} and {alias}={other!r} are one argument under two "
                         "names: give one of them")
    return value if value is not None else other if other is not None else default


#: the errors the commands report in one line
BAD_INPUT = (ValueError, KeyError, TypeError, OSError, ImportError, FloatingPointError)
#: the packages whose own errors are about the input (SQLAlchemy's: an Optuna storage URL's)
INPUT_PACKAGES = ("hydra", "omegaconf", "yaml", "gymnasium", "sqlalchemy")


def is_bad_input(error: BaseException) -> bool:
    """Whether the commands report ``error`` in one line: ``BAD_INPUT``, the ``INPUT_PACKAGES``'
    errors and ``RuntimeError`` s that looprl raises itself (not bugs)."""
    if isinstance(error, BAD_INPUT) or is_out_of_memory(error):  # (sizes a run asked for)
        return True
    if type(error).__module__.split(".")[0] in INPUT_PACKAGES:
        return True
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    if not isinstance(error, RuntimeError) or frame is None:
        return False
    code = frame.tb_frame.f_code  # (a raise statement of looprl's, not a torch call failing)
    line = linecache.getline(code.co_filename, frame.tb_lineno).strip()
    return frame.tb_frame.f_globals.get("__name__", "").startswith("looprl.") and (
        line.startswith("raise "))


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is torch's or NumPy's failure to allocate memory (CUDA's too, where a
    full GPU cannot even hold a new process's context or cuBLAS's workspace)."""
    import torch

    return isinstance(error, torch.OutOfMemoryError | MemoryError) or isinstance(
        error, RuntimeError) and any(text in str(error) for text in (
            "can't allocate memory", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED"))


def memory_hint(error: BaseException) -> str:
    """What to do about ``error`` if it is out of memory (``is_out_of_memory``), else ``''``."""
    if not is_out_of_memory(error):
        return ""
    if "CUDA" in str(error) or "CUBLAS" in str(error):
        return (" (the GPU is out of memory: free it, nvidia-smi lists what holds it, or run on "
                "the CPU, device=cpu)")
    return " (out of memory: lower the replay, batch or network sizes)"


def memory_limit(device: Any = "cpu") -> int:
    """The bytes of memory this process can have on ``device``: a CUDA GPU's, or the machine's
    (less under ``ulimit -v`` or a cgroup limit)."""
    import resource  # (Unix only, as os.sysconf)

    import torch
    if torch.device(device).type == "cuda":
        return int(torch.cuda.get_device_properties(torch.device(device)).total_memory)

    limits = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
              resource.getrlimit(resource.RLIMIT_AS)[0]]
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            limits.append(int(Path(path).read_text()))
        except (OSError, ValueError):  # (none, or "max")
            pass
    return min(limit for limit in limits if limit > 0)  # (RLIM_INFINITY: -1)


def check_fits(nbytes: int, what: str, remedy: str, device: Any = "cpu",
               error: BaseException | None = None) -> None:
    """A one-line ``ValueError`` when ``nbytes`` are more than ``memory_limit(device)`` or their
    allocation failed with ``error``: ``what`` names them ("N rows need"), ``remedy`` the fix."""
    need = f"{what} {size_text(nbytes)}"
    if error is not None:
        raise ValueError(f"{need} on {device}, which could not be allocated ({one_line(error)}); "
                         f"{remedy}") from None
    if nbytes > (limit := memory_limit(device)):
        raise ValueError(f"{need}, more than the {size_text(limit)} of memory this process "
                         f"can have on {device}; {remedy}")


def size_text(nbytes: float) -> str:
    """``nbytes`` in the largest binary unit it fills: '3.0 GiB', '19.1 MiB', '60 bytes'."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{nbytes:,.0f} bytes"


# the advice torch appends to every CUDA error, and what follows the summary of an out-of-memory
# one (each process's share, the allocator's state, a link)
CUDA_ADVICE = ("CUDA kernel errors might be asynchronously reported", "For debugging consider "
               "passing CUDA_LAUNCH_BLOCKING", "Compile with `TORCH_USE_CUDA_DSA`", "Search for `")
CUDA_OOM_DETAIL = re.compile(r"(CUDA out of memory\..*? is free\.).*")


def message_lines(error: BaseException) -> list[str]:
    """``error``'s message, line by line, without blank lines and torch's CUDA advice (a CUDA
    out-of-memory error up to how much of the GPU is free); a ``KeyError``'s without quotes."""
    message = error.args[0] if type(error) is KeyError and error.args else error
    lines = (CUDA_OOM_DETAIL.sub(r"\1", line.strip()) for line in str(message).splitlines())
    return [line for line in lines if line and not line.startswith(CUDA_ADVICE)]


def one_line(error: BaseException) -> str:
    """``error``'s message on one line (``message_lines`` joined)."""
    return " ".join(message_lines(error))
