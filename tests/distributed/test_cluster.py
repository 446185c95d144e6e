"""Where a local Ray instance listens, by public means only: ``looprl.distributed`` sets
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` on its import (Ray reads it on its own), and a local
instance found off loopback says so in one warning line (``cluster._check_loopback``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ray = pytest.importorskip("ray")

from looprl.distributed import cluster  # noqa: E402
from looprl.distributed.trials import RayTrials  # noqa: E402


@pytest.mark.parametrize("before, after", [(None, "0"), ("1", "1")])
def test_importing_looprl_distributed_asks_ray_for_loopback_unless_told(before, after) -> None:
    env = {key: value for key, value in os.environ.items() if key != cluster.LOOPBACK}
    if before is not None:
        env[cluster.LOOPBACK] = before
    code = f"import os, looprl.distributed; print(os.environ.get({cluster.LOOPBACK!r}))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == after


def test_a_local_instance_off_loopback_warns_in_one_line(monkeypatch, caplog) -> None:
    monkeypatch.setenv(cluster.LOOPBACK, "0")
    monkeypatch.setattr(ray, "nodes", lambda: [{"NodeManagerAddress": "127.0.0.1"}])
    with caplog.at_level("WARNING", logger=cluster.__name__):
        cluster._check_loopback()
        assert not caplog.records
        monkeypatch.setattr(ray, "nodes", lambda: [{"NodeManagerAddress": "192.0.2.2"}])
        cluster._check_loopback()
        [record] = caplog.records
        assert "listens on 192.0.2.2, not on 127.0.0.1 only" in record.getMessage()
        assert "import looprl.distributed before ray" in record.getMessage()
        caplog.clear()
        monkeypatch.setenv(cluster.LOOPBACK, "1")  # the user asked for a reachable instance
        cluster._check_loopback()
        assert not caplog.records


@pytest.mark.parametrize("start", [lambda: cluster.start_ray(cluster.RuntimeConfig()),
                                   lambda: RayTrials(parallel=1).start()],
                         ids=["DistributedRun", "runner on Ray"])
def test_a_run_without_ray_names_the_extra(monkeypatch, start) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # (as an install without looprl[distributed])
    with pytest.raises(ImportError, match=r"^A run on Ray needs Ray: pip install "
                                          r"looprl\[distributed\]$"):
        start()


def test_local_gpus_are_the_devices_torch_can_use(monkeypatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert cluster.local_gpus() == 3
