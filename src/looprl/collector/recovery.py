"""Faults of an ``EnvRunner``'s environment copies where a run goes on (``max_restarts``, on both
runtimes): ``EnvRestarts`` counts and reports them (``EnvFault``) and raises past the limit;
``EnvWatch`` names an env call that runs past ``env_timeout`` and interrupts it (a local run's;
a Ray run's driver kills the actor instead), or hands it to ``when_stuck``'s handler where it
cannot (training outside the main thread, as a Ray Tune trial's)."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from looprl.core.suggest import check_positive, is_whole
from looprl.environments.faults import (
    EnvironmentFailure,
    EnvironmentOutputError,
    EnvironmentTimeout,
    failure,
    place,
    unpack_hint,
)

__all__ = ["EnvFault", "EnvRestarts", "EnvWatch", "env_call", "fault_limits", "hung",
           "setting", "when_stuck"]

log = logging.getLogger(__name__)

_STUCK: list[Callable[[str], None]] = []  # ``when_stuck``'s handlers, the innermost last


@contextlib.contextmanager
def when_stuck(handler: Callable[[str], None]) -> Iterator[None]:
    """While open, an env call that ``EnvWatch`` names but cannot interrupt (training outside
    the main thread) calls ``handler`` with its line (``hung``), from the watching thread: a
    Tune trial's ends its process there, which a call that never returns would hold forever."""
    _STUCK.append(handler)
    try:
        yield
    finally:
        _STUCK.remove(handler)


@dataclass(frozen=True)
class EnvFault:
    """An exception the runner recovered from, raised in env copy ``copy`` (``None``: a vector
    env) at ``episode`` and ``step`` (where known); ``error``: its ``"Type: message"`` line."""

    env: str
    copy: int | None
    method: str
    episode: int | None
    step: int | None
    error: str
    frame: int

    def line(self) -> str:
        """``"CartPole-v1 copy 1 raised in step (episode 3, step 17): RuntimeError: boom"``."""
        where_text = place(self.episode, self.step)
        if self.copy is None and self.error.startswith(f"{self.env}."):
            return f"{self.error} (its copies are rebuilt together)"  # (a vector env's line)
        copy = f" copy {self.copy}" if self.copy is not None else ""
        return (f"{self.env}{copy} raised in {self.method}"
                f"{f' ({where_text})' if where_text else ''}: {self.error}")

    @property
    def label(self) -> str:
        """Where it was in a run's ``restarts``: ``"copy1"``, or ``"env"`` (a vector env)."""
        return "env" if self.copy is None else f"copy{self.copy}"

    def restart(self, actor: str = "actor0") -> tuple[str, int]:
        """Its entry in a run's ``restarts``: ``("actor0/copy1", frame)``, ``actor`` the worker
        whose collector recovered (a local run's one: ``actor0``), at the frame it had reached."""
        return f"{actor}/{self.label}", self.frame

    def recovered(self, frame: int, actor: str = "actor0") -> str:
        """The warning of a run that rebuilt the copy and went on, at its ``frame``, on either
        runtime (``actor``: the worker whose collector recovered; a local run's: ``actor0``)."""
        return f"{actor}: {self.line()}; rebuilt it, dropped its episode in progress and went " \
               f"on (frame {frame})"


def setting(option: str, value: Any) -> str:
    """``"runtime.env_timeout=60 s"``; a Python argument (``"env_timeout"``, a local run's) names
    ``looprl run``'s option too: ``"env_timeout=60 s (looprl run's runtime.env_timeout)"``."""
    return f"{option}={value}" + ("" if "." in option else f" (looprl run's runtime.{option})")


def fault_limits(max_restarts: Any, env_timeout: Any) -> tuple[int, float | None]:
    """A local run's ``max_restarts`` (an int) and ``env_timeout`` (``None`` or seconds); a
    one-line ``ValueError`` unless a whole number >= 0 and ``None`` or a number > 0."""
    if not is_whole(max_restarts) or max_restarts < 0:
        raise ValueError(f"max_restarts (looprl run's runtime.max_restarts) must be a whole "
                         f"number >= 0 (0: stop at an environment's exception), got "
                         f"{max_restarts!r:.40}")
    check_positive(optional=True, **{"env_timeout (looprl run's runtime.env_timeout)":
                                     env_timeout})
    return int(max_restarts), env_timeout


class EnvRestarts:
    """The ``count`` faults an ``EnvRunner`` recovered from, at most ``limit`` (an option)."""

    def __init__(self, limit: int, limit_name: str = "limit") -> None:
        if limit < 0:
            raise ValueError(f"{limit_name} must be >= 0, got {limit}")
        self.limit, self.limit_name = limit, limit_name
        self.count = 0
        self._unreported: deque[EnvFault] = deque()

    def note(self, env: str, copy: int | None, method: str, error: BaseException,
             episode: int | None, step: int | None, frame: int) -> EnvFault:
        """Count ``error`` and keep it for ``pop``; ``EnvironmentFailure`` past ``limit``, and
        ``error`` itself if it says the environment's API is wrong (a new copy's is too)."""
        failed = isinstance(error, EnvironmentFailure)  # (its cause: the environment's own)
        cause = error.__cause__ if failed and error.__cause__ is not None else error
        if isinstance(cause, EnvironmentOutputError) or unpack_hint(cause, method):
            raise error
        said = str(error) if failed and copy is None else None
        if self.count >= self.limit:
            limit = setting(self.limit_name, self.limit)
            hint = f"{limit} rebuilds no copy" if not self.limit else (
                f"its copies were rebuilt {self.count} time{'' if self.count == 1 else 's'} "
                f"already, the most {limit} allows")
            if said:  # (a vector environment's line names the copy)
                raise EnvironmentFailure(f"{said}; {hint}", env, method, episode, step) from error
            raise failure(env, method, cause, episode, step, copy=copy, hint=hint) from error
        self.count += 1
        text = str(cause).strip().splitlines()
        fault = EnvFault(env, copy, method, episode, step, said or
                         f"{type(cause).__name__}: {text[0] if text else ''}".rstrip(": "),
                         frame)
        self._unreported.append(fault)
        return fault

    def pop(self) -> list[EnvFault]:
        """The faults noted since the last call (safe from another thread)."""
        return [self._unreported.popleft() for _ in range(len(self._unreported))]


def env_call(runner: Any) -> tuple[float, str, int | None, str, int | None, int | None] | None:
    """``(seconds, env, copy, method, episode, step)`` of ``runner``'s env call in progress
    (``None`` if none; ``copy``: ``None`` for a vector env, ``episode`` and ``step`` too unless
    it has one copy); thread-safe. ``runner``: an ``EnvRunner``, or what has its ``env_call``
    and ``env_place`` (``test_environment``'s checker)."""
    call = runner.env_call
    if call is None:
        return None
    since, copy, method = call
    name, episode, step = runner.env_place(copy, method)  # (a vector env's: of its one copy)
    return time.monotonic() - since, name, copy, method, episode, step


def hung(call: tuple[float, str, int | None, str, int | None, int | None], option: str,
         timeout: float) -> str:
    """``"CartPole-v1 copy 1 has been in step for 61 s (episode 1, step 3), longer than
    runtime.env_timeout=60 s"`` of an ``env_call``."""
    seconds, env, copy, method, episode, step = call
    where = place(episode, step)
    return (f"{env}{'' if copy is None else f' copy {copy}'} has been in {method} for "
            f"{seconds:.0f} s{f' ({where})' if where else ''}, longer than "
            f"{setting(option, f'{timeout:g} s')}")


class EnvWatch:
    """While training (a context manager), names an env call of ``runner`` that has run past
    ``timeout`` seconds (``None``: no watch) in a warning and, where training runs in the main
    thread and nothing else handles ``SIGALRM``, interrupts it: ``EnvironmentTimeout`` raised
    in the call, a fault the run rebuilds the copy for (``max_restarts``) or stops at in one
    line, as a Ray run's driver kills the actor. Elsewhere it is named, and handed to
    ``when_stuck``'s handler if one is open. A call stuck in C code that never returns to
    Python is named only."""

    def __init__(self, runner: Any, timeout: float | None, option: str = "env_timeout") -> None:
        self.runner, self.timeout, self.option = runner, timeout, option
        self._stop = threading.Event()
        self._fired: Any = None  # the call (``runner.env_call``) it timed out
        self._thread: threading.Thread | None = None
        self._previous: Any = None  # the ``SIGALRM`` handler it replaced (``None``: none)
        self._stuck: Callable[[str], None] | None = None  # (``when_stuck``'s, where it cannot)

    def __enter__(self) -> EnvWatch:
        if self.timeout is None:
            return self
        if threading.current_thread() is threading.main_thread() and hasattr(
                signal, "pthread_kill") and signal.getsignal(signal.SIGALRM) in (
                signal.SIG_DFL, None):  # (POSIX; a handler of someone else's: named only)
            self._previous = signal.signal(signal.SIGALRM, self._interrupt)
        else:
            self._stuck = _STUCK[-1] if _STUCK else None
        self._thread = threading.Thread(target=self._watch, name="looprl-env-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        if self._previous is not None:
            signal.signal(signal.SIGALRM, self._previous)

    def _watch(self) -> None:
        while not self._stop.wait(min(1.0, self.timeout / 4)):
            call, found = self.runner.env_call, env_call(self.runner)
            if found is None or found[0] <= self.timeout or call is self._fired or (
                    self.runner.env_call is not call):
                continue
            self._fired = call
            line = hung(found, self.option, self.timeout)
            if self._stuck is not None:
                self._stuck(line)
                continue
            interrupt = self._previous is not None
            log.warning("%s: %s", line,
                        "interrupting it" if interrupt else "waiting for it (Ctrl-C stops it)")
            if interrupt:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGALRM)

    def _interrupt(self, signum: int, frame: Any) -> None:
        if self._fired is not None and self.runner.env_call is self._fired:
            raise EnvironmentTimeout(f"it ran past {setting(self.option, f'{self.timeout:g} s')}")
