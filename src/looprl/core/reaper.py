"""The reaper, this file run as a script (standard library only, Linux): it kills a driver's
Ray processes once the driver dies, however it ends (Ray's agents outlive a ``kill -9``).
``start_local_ray``: every local Ray start of looprl, the reaper with it."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["LOOPBACK", "local_instance_settings", "signals_kept", "start_local_ray",
           "start_reaper"]

LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": a local instance on 127.0.0.1 only

POLL_SECONDS = 0.5
_reaper: list[int] = []  # (this process's one reaper's pid)


def start_reaper() -> bool:
    """Start this process's reaper (once, where there is ``/proc``); whether one runs. (Spawned:
    a ``Popen`` would warn at exit that it outlives this process, as it does on purpose.)"""
    if _reaper and _running(_reaper[0]):
        return True
    if not os.path.isdir("/proc/self"):
        return False
    quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    _reaper[:] = [os.posix_spawn(  # (setsid: a Ctrl-C in the terminal does not stop it)
        sys.executable, [sys.executable, os.path.abspath(__file__), str(os.getpid())],
        os.environ, file_actions=quiet, setsid=True)]
    return True


def _running(child: int) -> bool:
    """Whether this process's ``child`` still runs (reaping it if it ended)."""
    try:
        return os.waitpid(child, os.WNOHANG) == (0, 0)
    except ChildProcessError:  # (reaped elsewhere)
        return False


def start_local_ray(num_cpus: int | None, **init: Any) -> None:
    """Start a Ray instance of this process's own (``local_instance_settings``, the reaper, no
    dashboard, Ray's warnings only, the workers' output not forwarded; ``init``: more)."""
    import ray
    local_instance_settings()
    start_reaper()
    try:
        with signals_kept():
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                     logging_level=logging.WARNING, log_to_driver=False, **init)
    except BaseException:  # (Ctrl-C or a failure halfway: what it started would live on)
        ray.shutdown()
        if os.path.isdir("/proc/self"):  # (a ray.init that did not return: ray.shutdown
            seen: dict[int, int] = {}  # does not know its processes)
            _note_ray_processes(os.getpid(), seen)
            _kill(seen)
        raise


@contextlib.contextmanager
def signals_kept() -> Iterator[None]:
    """Keep this process's SIGTERM handler across ``ray.init`` (which sets one that aborts), and
    hold a Ctrl-C until it returns (a handler of Ray's could swallow it); a second one raises."""
    main = threading.current_thread() is threading.main_thread()
    handler, interrupt = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    held: list[int] = []

    def hold(number: int, frame: Any) -> None:
        if held:
            raise KeyboardInterrupt
        held.append(number)

    if main and interrupt is not None:
        signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        if main and interrupt is not None:
            signal.signal(signal.SIGINT, interrupt)
        if main and handler is not None:
            signal.signal(signal.SIGTERM, handler)
    if held:
        raise KeyboardInterrupt


def local_instance_settings() -> None:
    """Set (unless set) the environment of a local Ray instance started later: on 127.0.0.1 only,
    no token, workers at normal priority (Ray's niceness 15 lets busy processes starve them)."""
    os.environ.setdefault(LOOPBACK, "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_worker_niceness", "0")


def _stat(pid: int) -> tuple[int, str, int] | None:
    """``(parent pid, state, start time)`` of ``pid``, or ``None`` if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
            fields = file.read().rpartition(")")[2].split()  # (after the command's name)
    except OSError:
        return None
    return int(fields[1]), fields[0], int(fields[19])


def _is_ray(pid: int) -> bool:
    """Whether ``pid`` runs a program of the ``ray`` package or a worker (``ray::...``)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            command = file.read()
    except OSError:
        return False
    return command.startswith(b"ray::") or f"{os.sep}ray{os.sep}".encode() in command


def _processes() -> dict[int, tuple[int, str, int]]:
    stats = {int(name): _stat(int(name)) for name in os.listdir("/proc") if name.isdigit()}
    return {pid: stat for pid, stat in stats.items() if stat is not None}


def _note_ray_processes(driver: int, seen: dict[int, int]) -> None:
    """Add to ``seen`` (pid: start time) every process under the driver's Ray children."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    todo = [pid for pid in children.get(driver, ()) if pid != os.getpid()
            and (pid in seen or _is_ray(pid))]
    while todo:
        pid = todo.pop()
        seen.setdefault(pid, table[pid][2])
        todo.extend(children.get(pid, ()))


def watch(driver: int) -> None:
    """Note the driver's Ray processes until the driver dies, then kill those left."""
    first = _stat(driver)
    seen: dict[int, int] = {}
    while first is not None:
        now = _stat(driver)
        if now is None or now[1] == "Z" or now[2] != first[2]:
            break
        _note_ray_processes(driver, seen)
        time.sleep(POLL_SECONDS)
    _kill(seen)


def _kill(seen: dict[int, int]) -> None:
    """Kill the processes of ``seen`` (pid: start time) that still run."""
    for pid, started in seen.items():
        stat = _stat(pid)
        if stat is not None and stat[2] == started:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    watch(int(sys.argv[1]))
