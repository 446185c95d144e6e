"""A real local Ray instance for the distributed tests: started once per module, bound to
loopback only, and stopped (with every process it started) at the module's end."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    """``ray.init`` on 127.0.0.1 with 4 logical CPUs and no dashboard."""
    from looprl.distributed.controller import local_instance_settings

    local_instance_settings()
    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    try:
        yield ray
        addresses = {node["NodeManagerAddress"] for node in ray.nodes()}
        assert addresses == {"127.0.0.1"}, addresses
    finally:
        ray.shutdown()
