"""A ``looprl run runtime=ray`` driver killed with SIGKILL leaves no process behind (the
reaper, ``looprl.distributed.reaper``), and what it printed is in its log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from looprl.distributed import reaper

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the reaper reads /proc")


def _descendants(pid: int) -> dict[int, int]:
    """Every process under ``pid``: its start time by pid."""
    table = reaper._processes()
    found, todo = {}, [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, _, started) in table.items():
            if ppid == parent and child not in found:
                found[child] = started
                todo.append(child)
    return found


def _command(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def _commands(pids: object) -> list[str]:
    return [_command(pid)[:100].decode(errors="replace") for pid in pids]


def _alive(processes: dict[int, int]) -> list[int]:
    return [pid for pid, started in processes.items()
            if (stat := reaper._stat(pid)) is not None and stat[2] == started
            and stat[1] != "Z"]


def test_a_killed_ray_drivers_processes_all_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    log = (tmp_path / "stdout.log").open("w")
    driver = subprocess.Popen(
        [sys.executable, "-m", "looprl.cli", "run", "env=CartPole-v1", "runtime=ray",
         "runtime.actors=1", "frames=10000000", f"hydra.run.dir={run_dir}"],
        cwd=tmp_path, stdout=log, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        processes: dict[int, int] = {}
        while not any(b"ray::DashboardAgent" in _command(pid) for pid in processes):
            assert driver.poll() is None and time.monotonic() < deadline, _commands(processes)
            time.sleep(0.5)
            processes = _descendants(driver.pid)
        time.sleep(2.0)  # (the reaper polls twice a second)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 15  # (without the reaper: a minute or more)
        while _alive(processes) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _alive(processes), _commands(_alive(processes))
    finally:
        for pid in _alive(_descendants(driver.pid)) if driver.poll() is None else []:
            os.kill(pid, signal.SIGKILL)
        driver.kill()
        log.close()
