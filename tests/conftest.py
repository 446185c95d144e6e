"""Shared test setup: one torch thread (fast and stable on a loaded 2-core machine), the tests
that start Ray kept on one worker under ``pytest -n 2`` (``make test``) and the local Ray
instance they share (``local_ray``), and the seed of the random test order printed at the
end."""

from __future__ import annotations

import logging
import os

import pytest
import torch

from looprl.core.suggest import WARNED

# a local Ray instance listens on 127.0.0.1 only (Ray reads this when it is imported; a test
# module that imports Ray before looprl.distributed, which sets it too, must find it set)
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


@pytest.fixture(autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _patient_placement(request, monkeypatch):
    """In ``RAY_TESTS``, a ``RuntimeConfig`` (a ``DistributedRun``'s, one of ``looprl run``)
    left at the default ``placement_timeout`` waits ``RAY_PLACEMENT_TIMEOUT`` for its workers;
    one a test sets keeps it. (A ``looprl run`` subprocess is given it on its command line.)"""
    if not request.node.nodeid.startswith(RAY_TESTS):
        return
    from looprl.distributed.config import RuntimeConfig

    default, post_init = RuntimeConfig.placement_timeout, RuntimeConfig.__post_init__

    def patient(self) -> None:
        if self.placement_timeout == default:
            self.placement_timeout = RAY_PLACEMENT_TIMEOUT
        post_init(self)

    monkeypatch.setattr(RuntimeConfig, "__post_init__", patient)


@pytest.fixture(autouse=True)
def _warnings_heard_anew():
    """Each test hears the warnings ``warn_once`` gave in an earlier test of its process, and
    the loggers an earlier in-process ``looprl run hydra/job_logging=disabled`` turned off (its
    ``disable_existing_loggers``: a later test captured no record of them)."""
    WARNED.clear()
    for existing in logging.Logger.manager.loggerDict.values():
        if isinstance(existing, logging.Logger):
            existing.disabled = False


#: the tests that start a Ray instance (per module, or Ray Tune's): under ``make test``'s
#: ``pytest -n 2`` they run one after another on one worker, so that the machine never holds
#: two Ray instances; the other tests, those of ``tests/distributed`` that start no Ray too,
#: are shared out between the workers. A test that uses a Ray fixture (``RAY_FIXTURES``)
#: outside these is an error at collection.
RAY_TESTS = (
    "tests/distributed/test_ray_runtime.py",
    "tests/distributed/test_run_dir_on_driver.py",
    "tests/distributed/test_env_faults_on_ray.py",
    "tests/distributed/test_meta_on_ray.py",
    "tests/distributed/test_ray_logs.py",
    "tests/distributed/test_runtime_switch.py",
    "tests/distributed/test_multinode.py",
    "tests/distributed/test_reaper.py",
    "tests/distributed/test_user_parts_on_ray.py",
    "tests/distributed/test_seed004_user.py::test_the_users_parts_run_on_ray_with_two_actors",
    "tests/distributed/test_policy_without_module.py::test_it_runs_in_test_pipeline_and_on_ray",
    "tests/distributed/test_gpu.py",
    "tests/distributed/test_ddp.py::test_two_ddp_trainers_stay_in_sync_and_survive_a_killed",
    "tests/runners/test_pbt.py",
    "tests/runners/test_runners_on_ray.py",
)
RAY_FIXTURES = {"local_ray", "two_nodes"}

#: a Ray test's ``runtime.placement_timeout`` where it leaves looprl's default (60 s): a loaded
#: 2-core machine starts a run's worker processes slowly, and a longer wait costs time only
#: when a run is broken
RAY_PLACEMENT_TIMEOUT = 600.0


#: the test that runs after the one tearing down now (``pytest_runtest_teardown``)
_NEXT_ITEM: list = [None]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem) -> None:
    _NEXT_ITEM[0] = nextitem


@pytest.fixture(scope="module")
def local_ray():
    """A real local Ray instance, ``ray.init`` on 127.0.0.1 with 4 logical CPUs and no
    dashboard, for the tests of a module. It stays up for the next module when that one uses
    it too (starting one takes seconds), and is stopped, with every process it started,
    before any other test: the tests that start Ray themselves find none running."""
    ray = pytest.importorskip("ray")
    from looprl.distributed.controller import local_instance_settings

    if not ray.is_initialized():
        local_instance_settings()
        ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR")
    try:
        yield ray
        if ray.is_initialized():  # (a test may have stopped it: a runner stops its own)
            addresses = {node["NodeManagerAddress"] for node in ray.nodes()}
            assert addresses == {"127.0.0.1"}, addresses
    finally:
        if not _runs_on_local_ray(_NEXT_ITEM[0]):
            ray.shutdown()


def _runs_on_local_ray(item) -> bool:
    """Whether ``item`` is a test that uses ``local_ray`` and is not skipped by a mark whose
    condition is already known (a skipped test sets up no fixture, so it cannot keep Ray up
    for, nor stop it before, the test after it)."""
    if item is None or "local_ray" not in getattr(item, "fixturenames", ()):
        return False
    return not (item.get_closest_marker("skip") or any(
        mark.args and mark.args[0] is True for mark in item.iter_markers("skipif")))


def pytest_collection_modifyitems(config, items) -> None:
    """Every test that uses a Ray fixture is one of ``RAY_TESTS``. Those come first: under
    ``-n 2`` they are one unit of work, the longest of ``make test``, started at once while the
    other worker runs the rest (started late, it would end after everything else). Those
    that run on ``local_ray`` come one after another (in the random order of their modules),
    so that one Ray instance serves them all instead of one per run of consecutive modules
    (seconds each)."""
    for item in items:
        if RAY_FIXTURES & set(getattr(item, "fixturenames", ())) and not item.nodeid.startswith(
                RAY_TESTS):
            raise pytest.UsageError(f"{item.nodeid} starts Ray (it uses a Ray fixture): add it "
                                    "to RAY_TESTS in tests/conftest.py, so that it runs on the "
                                    "worker of the Ray tests")
    ray_items = sorted((item for item in items if item.nodeid.startswith(RAY_TESTS)),
                       key=lambda item: not _runs_on_local_ray(item))
    items[:] = ray_items + [item for item in items if not item.nodeid.startswith(RAY_TESTS)]


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduler for ``-n``: the tests of ``RAY_TESTS`` are one unit of work,
    every other test is a unit of its own (xdist's ``loadgroup`` does not group under pytest
    9: it renames items after pytest has read their ids)."""
    from xdist.scheduler import LoadScopeScheduling

    class RayTestsOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "ray" if nodeid.startswith(RAY_TESTS) else nodeid

    return RayTestsOnOneWorker(config, log)


def pytest_terminal_summary(terminalreporter, config) -> None:
    """Print the seed of the random test order (pytest-randomly), also under ``-q``."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int):
        terminalreporter.write_line(
            f"tests ran in a random order: repeat it with --randomly-seed={seed}"
        )
