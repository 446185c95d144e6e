"""The run directory is the driver's alone: on a cluster, the workers' nodes do not share it.
Here a relative ``logdir`` names another folder in the workers, whose working directory is not
the driver's (as on another node)."""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.distributed.test_ray_runtime import ppo_spec, runtime

from looprl.distributed import DistributedRun, RuntimeConfig, pipeline, watch
from looprl.environments.wrappers import load_normalization, read_normalization
from looprl.presets.catalog import make_env
from looprl.presets.classic_control import a2c

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


def test_the_final_evaluation_and_watch_normalize_with_actor_0s_statistics(
        local_ray, tmp_path, monkeypatch):
    """A run of ``env_wrappers=[gymnasium.wrappers.NormalizeObservation]``: the driver saves
    actor 0's statistics beside ``policy.pt``; Ray's final evaluation and ``looprl watch`` load
    them into their copies, frozen (were: statistics started anew)."""
    pytest.importorskip("pygame")
    env = make_env("classic_control.a2c", "CartPole-v1",
                   env_wrappers=["gymnasium.wrappers.NormalizeObservation"])
    preset = a2c.hyperparameters(n_envs=2, n_steps=5, hidden=16).env(env).device("cpu").build()
    run = DistributedRun(preset, RuntimeConfig(actors=1, envs_per_actor=2, groups=1),
                         frames=400, logdir=str(tmp_path), quiet=True)
    result = run.run()
    saved = torch.load(Path(result.log_dir) / "normalization.pt", weights_only=False)
    made = []
    for module in (pipeline, watch):
        monkeypatch.setattr(module, "load_normalization", lambda env, *args: (
            made.append(env), load_normalization(env, *args)))
    assert len(run.test(episodes=2)) == 2
    run.close()
    watch.watch_run(result.log_dir, gif=tmp_path / "w.gif")
    assert len(made) == 2
    trained = saved[1]["normalizers"][0]["obs_rms"]
    assert trained["count"] >= result.frames / 2  # (every step of actor 0's first copy)
    for env in made:  # (training's, unchanged by the episodes played: frozen)
        loaded = read_normalization(env)[1]["normalizers"][0]["obs_rms"]
        assert loaded["count"] == trained["count"]
        assert np.array_equal(loaded["mean"], trained["mean"])


@ray.remote
class _Normalized:
    """An actor's ``normalization()``: a ``NormalizeObservation`` that counted ``count``."""

    def __init__(self, count: float):
        self.count = count

    def normalization(self):
        return [None, {"wrappers": ["NormalizeObservation"], "normalizers": [
            {"obs_rms": {"mean": np.zeros(1), "var": np.ones(1), "count": self.count}}]}]


def test_the_run_saves_the_statistics_of_the_actor_that_counted_the_most_steps(local_ray):
    """Ray restarted actor 0 (its normalizers started anew): the run saves the statistics of
    the actor that counted the most steps (were: the restarted actor 0's), and skips an actor
    that does not answer; none answers: ``None``."""
    from looprl.distributed.placement import WorkerPool
    pool = object.__new__(WorkerPool)
    pool.runtime = RuntimeConfig(actors=3)
    dead = _Normalized.remote(1e6)
    ray.kill(dead, no_restart=True)
    pool.workers = {"actor0": _Normalized.remote(5.0), "actor1": _Normalized.remote(500.0),
                    "actor2": dead}
    assert pool.normalization()[1]["normalizers"][0]["obs_rms"]["count"] == 500.0
    pool.runtime, pool.workers = RuntimeConfig(actors=1), {"actor0": dead}
    assert pool.normalization() is None


def test_evaluation_workers_normalize_with_the_training_statistics_frozen(local_ray, tmp_path):
    """``runtime.eval_workers``: the evaluation worker's normalizers hold the training actors'
    statistics, frozen (were: its own, updating as it played)."""
    env = make_env("classic_control.a2c", "CartPole-v1",
                   env_wrappers=["gymnasium.wrappers.NormalizeObservation"])
    preset = a2c.hyperparameters(n_envs=2, n_steps=5, hidden=16).env(env).device("cpu").build()
    seen = []

    def first_normalizer(worker):
        normalizer = worker.runner.envs.env.unwrapped.envs[0].env
        return normalizer.update_running_mean, normalizer.obs_rms.count

    def callback(run):
        if run.result.eval_returns and not seen:
            seen.append(ray.get(run._pool.workers["eval0"].__ray_call__.remote(first_normalizer)))
            seen.append(ray.get(run._pool.workers["actor0"].__ray_call__.remote(first_normalizer)))

    run = DistributedRun(preset, RuntimeConfig(actors=1, envs_per_actor=2, groups=1,
                                               eval_workers=1),
                         frames=600, logdir=str(tmp_path), quiet=True)
    run.run(callback=callback)
    assert seen, "the evaluation worker finished no episode"
    (evaluating, evaluated), (training, trained) = seen
    assert training and not evaluating
    assert 1 < evaluated <= trained  # (a count of actor 0's, before this poll)
