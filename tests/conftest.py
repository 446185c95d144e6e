"""Shared test setup: one torch thread (fast and stable on a loaded 2-core machine), and the
seed of the random test order printed at the end."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def pytest_terminal_summary(terminalreporter, config) -> None:
    """Print the seed of the random test order (pytest-randomly), also under ``-q``."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int):
        terminalreporter.write_line(
            f"tests ran in a random order: repeat it with --randomly-seed={seed}"
        )
