"""Shared test setup: one torch thread (fast and stable on a loaded 2-core machine), the tests
that start Ray kept on one worker under ``pytest -n 2 --dist loadgroup`` (``make test``), and
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
#: ``pytest -n 2 --dist loadgroup`` they run one after another on one worker, so that the
#: machine never holds two Ray instances; the other tests are shared out between the workers
RAY_TESTS = ("tests/distributed/", "tests/runners/test_pbt.py")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.nodeid.startswith(RAY_TESTS) or "local_ray" in item.fixturenames:
            item.add_marker(pytest.mark.xdist_group("ray"))


def pytest_terminal_summary(terminalreporter, config) -> None:
    """Print the seed of the random test order (pytest-randomly), also under ``-q``."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int):
        terminalreporter.write_line(
            f"tests ran in a random order: repeat it with --randomly-seed={seed}"
        )
