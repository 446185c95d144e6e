"""Shared test setup: one torch thread (fast and stable on a loaded 2-core machine), the tests
that start Ray kept on one worker under ``pytest -n 2`` (``make test``), and
the seed of the random test order printed at the end."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


#: the tests that start a Ray instance (per module, or Ray Tune's): under ``make test``'s
#: ``pytest -n 2`` they run one after another on one worker, so that the machine never holds
#: two Ray instances; the other tests are shared out between the workers
RAY_TESTS = ("tests/distributed/", "tests/runners/test_pbt.py")


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
