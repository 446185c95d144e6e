"""A real local Ray instance for the distributed tests: started once per module, bound to
loopback only, and stopped (with every process it started) at the module's end."""

from __future__ import annotations

import os

import pytest

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    """``ray.init`` on 127.0.0.1 with 4 logical CPUs and no dashboard."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    try:
        yield ray
        addresses = {node["NodeManagerAddress"] for node in ray.nodes()}
        assert addresses == {"127.0.0.1"}, addresses
    finally:
        ray.shutdown()
