"""The run directory is the driver's alone: on a cluster, the workers' nodes do not share it.
Here a relative ``logdir`` names another folder in the workers, whose working directory is not
the driver's (as on another node)."""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path

import pytest
from tests.distributed.test_ray_runtime import ppo_spec, runtime

from looprl.distributed import DistributedRun

ray = pytest.importorskip("ray")


def test_the_trainer_checkpoint_is_written_and_read_by_the_driver(local_ray, tmp_path,
                                                                   monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    elsewhere = Path(ray.get(ray.remote(lambda: os.getcwd()).remote()))  # a worker's cwd
    assert elsewhere.resolve() != tmp_path.resolve()
    name = f"ppo-{uuid.uuid4().hex[:8]}"
    first = DistributedRun(ppo_spec(), runtime(actors=1, checkpoint_every=2), frames=3_000,
                           logdir="runs", name=name, quiet=True).run()
    run_dir = tmp_path / first.log_dir
    assert {"trainer_checkpoint.pt", "controller_checkpoint.pt"} <= {
        path.name for path in run_dir.iterdir()}
    assert not (elsewhere / "runs" / name).exists()  # no worker wrote where it runs
    caplog.set_level(logging.WARNING, "looprl.distributed")
    resumed = DistributedRun(ppo_spec(), runtime(actors=1, checkpoint_every=2),
                             frames=first.frames + 1_000, logdir="runs", name=name, quiet=True,
                             resume_from="runs").run()
    steps = [r.getMessage() for r in caplog.records if "resumed from its checkpoint" in
             r.getMessage()]
    assert steps and int(steps[-1].split()[-1]) == first.trainer_steps[0], caplog.text
    assert resumed.train_steps > first.trainer_steps[0]
