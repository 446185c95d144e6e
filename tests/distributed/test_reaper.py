"""A ``looprl run runtime=ray`` driver killed with SIGKILL leaves no process behind (the
reaper, ``looprl.core.reaper``), and what it printed is in its log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from looprl.core import reaper

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


#: a loaded machine starts a run's workers slowly (``RAY_PLACEMENT_TIMEOUT`` of the conftest)
PATIENT = "runtime.placement_timeout=600"


def _alive(processes: dict[int, int]) -> list[int]:
    return [pid for pid, started in processes.items()
            if (stat := reaper._stat(pid)) is not None and stat[2] == started
            and stat[1] != "Z"]


def test_a_killed_ray_drivers_processes_all_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    log = (tmp_path / "stdout.log").open("w")
    driver = subprocess.Popen(
        [sys.executable, "-m", "looprl.cli", "run", "env=CartPole-v1", "runtime=ray",
         "runtime.actors=1", "frames=10000000", PATIENT, f"hydra.run.dir={run_dir}"],
        cwd=tmp_path, stdout=log, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        processes: dict[int, int] = {}
        while not any(b"ray::DashboardAgent" in _command(pid) for pid in processes):
            assert driver.poll() is None and time.monotonic() < deadline, _commands(processes)
            time.sleep(0.5)
            processes = _descendants(driver.pid)
        time.sleep(2.0)  # (the reaper polls twice a second)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        _assert_ended(processes, 15)  # (without the reaper: a minute or more)
    finally:
        _kill_left(driver)
        log.close()


def test_a_ray_run_stopped_with_sigterm_is_one_line(tmp_path: Path) -> None:
    """A scheduler's SIGTERM stops a ``runtime=ray`` run as Ctrl-C does (not Ray's crash
    report and an abort), and its processes end."""
    run_dir = tmp_path / "r"
    driver = subprocess.Popen(
        [sys.executable, "-m", "looprl.cli", "run", "env=CartPole-v1", "runtime=ray",
         "runtime.actors=1", "runtime.num_cpus=2", "frames=10000000", "logging.quiet=true",
         PATIENT, f"hydra.run.dir={run_dir}"], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    results = run_dir / "ppo" / "CartPole-v1" / "results.csv"
    try:
        deadline = time.monotonic() + 600
        while driver.poll() is None and time.monotonic() < deadline and not (
                results.exists() and len(results.read_text().splitlines()) > 1):
            time.sleep(0.5)
        processes = _descendants(driver.pid)
        driver.send_signal(signal.SIGTERM)
        output, _ = driver.communicate(timeout=300)
        assert driver.returncode == 130, output
        assert output.strip().startswith(f"looprl: interrupted; the run is in {run_dir}"), output
        _assert_ended(processes, 30)
    finally:
        _kill_left(driver)


def _assert_ended(processes: dict[int, int], seconds: float) -> None:
    """Wait up to ``seconds`` for ``processes`` to end; fail naming those still alive."""
    deadline = time.monotonic() + seconds
    while _alive(processes) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _alive(processes), _commands(_alive(processes))


def _kill_left(driver: subprocess.Popen) -> None:
    """Kill ``driver`` and, if it still runs, what it started (a failed test's leftovers)."""
    for pid in _alive(_descendants(driver.pid)) if driver.poll() is None else []:
        os.kill(pid, signal.SIGKILL)
    driver.kill()


def test_a_ctrl_c_inside_ray_init_is_held_until_it_returns() -> None:
    """A ``KeyboardInterrupt`` raised inside ``ray.init`` could be swallowed by a handler Ray
    runs there (the run then trained on): it is raised once ``ray.init`` returns; a second
    Ctrl-C raises at once; the process's handlers are as they were after."""
    before, went_on = signal.getsignal(signal.SIGINT), []
    with pytest.raises(KeyboardInterrupt):
        with reaper.signals_kept():
            signal.raise_signal(signal.SIGINT)
            went_on.append("held")
    with pytest.raises(KeyboardInterrupt):
        with reaper.signals_kept():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
            went_on.append("a second one held too")
    assert went_on == ["held"] and signal.getsignal(signal.SIGINT) is before


def test_a_ctrl_c_while_joining_a_cluster_leaves_it(monkeypatch) -> None:
    """The Ctrl-C held until ``ray.init`` joined the cluster: the process leaves it again."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("Ray runs in this process already")
    from looprl.distributed import RuntimeConfig, cluster
    left = []
    monkeypatch.setattr(cluster, "_check_reachable", lambda address: None)
    monkeypatch.setattr(ray, "init", lambda **kwargs: signal.raise_signal(signal.SIGINT))
    monkeypatch.setattr(ray, "shutdown", lambda: left.append(True))
    with pytest.raises(KeyboardInterrupt):
        cluster.start_ray(RuntimeConfig(address="10.0.0.1:6379"))
    assert left == [True]


def test_ctrl_c_while_a_run_starts_ray_is_the_one_line_of_a_later_one(monkeypatch,
                                                                      tmp_path: Path) -> None:
    """``DistributedRun.run()`` interrupted (a notebook's Ctrl-C) while it starts its own Ray
    instance, after Ray's processes started and before ``ray.init`` returned: the
    ``TrainingInterrupted`` line of a Ctrl-C later in the run (was: a bare
    ``KeyboardInterrupt``), nothing written, and no Ray process left (was: a whole instance
    left running, one more at each such Ctrl-C, until the kernel exits)."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("Ray runs in this process already")
    from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig
    from looprl.experiments import TrainingInterrupted
    node = ray._private.node.Node
    started, ray_processes, commands = node.__init__, {}, []

    def interrupted(self, *args, **kwargs):
        started(self, *args, **kwargs)
        ray_processes.update({pid: start for pid, start in _descendants(os.getpid()).items()
                              if reaper._is_ray(pid)})
        commands.extend(_commands(ray_processes))
        raise KeyboardInterrupt

    monkeypatch.setattr(node, "__init__", interrupted)
    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args={"obs_dim": {"obs": 4}, "action_dim": 2}, trainer="ppo")
    run = DistributedRun(spec, RuntimeConfig(actors=1, num_cpus=1, cpus_per_trainer=0),
                         frames=1000, logdir=str(tmp_path), quiet=True)
    stop: BaseException | None = None
    try:  # (a bare KeyboardInterrupt would stop the whole test session: caught here)
        run.run()
    except KeyboardInterrupt as error:
        stop = error
    assert isinstance(stop, TrainingInterrupted)
    assert str(stop) == "Training interrupted at frame 0; nothing written yet (Ray was starting)"
    assert any("raylet" in command for command in commands), commands
    _assert_ended(ray_processes, 15)
    assert not ray.is_initialized() and not list(tmp_path.iterdir())


def test_the_reaper_outlives_its_process_without_a_resource_warning() -> None:
    """The reaper runs on after its process ends, and ends then; Python in development mode
    says nothing of it (was: ``ResourceWarning: subprocess ... is still running`` at exit)."""
    script = ("from looprl.core import reaper; assert reaper.start_reaper(); "
              "assert reaper.start_reaper(); print(reaper._reaper[0])")
    done = subprocess.run([sys.executable, "-X", "dev", "-c", script], capture_output=True,
                          text=True, timeout=60, check=True)
    assert "ResourceWarning" not in done.stderr, done.stderr
    pid = int(done.stdout)
    started = reaper._stat(pid)
    assert started is not None  # (it was running when its process ended)
    deadline = time.monotonic() + 30
    while _alive({pid: started[2]}) and time.monotonic() < deadline:
        time.sleep(0.1)  # (it polls its process every POLL_SECONDS)
    assert not _alive({pid: started[2]})
