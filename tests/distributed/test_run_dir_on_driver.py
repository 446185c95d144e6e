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
from tests.distributed.test_ray_runtime import ControllerDied, ppo_spec, runtime

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
        self.count, self.loaded = count, []

    def normalization(self):
        return [None, {"wrappers": ["NormalizeObservation"], "normalizers": [
            {"obs_rms": {"mean": np.zeros(1), "var": np.ones(1), "count": self.count}}]}]

    def load_normalization(self, statistics):
        self.loaded.append(statistics[1]["normalizers"][0]["obs_rms"]["count"])



def _counted(count: float) -> list:
    """The ``read_normalization`` of a ``NormalizeObservation`` that counted ``count``."""
    return ray.get(_Normalized.remote(count).normalization.remote())


def test_the_run_saves_the_statistics_of_the_actor_that_counted_the_most_steps(local_ray):
    """Ray restarted actor 0 (its normalizers started anew): the run saves the statistics of
    the actor that counted the most steps (were: the restarted actor 0's), and skips an actor
    that does not answer; none answers: ``None``."""
    from looprl.distributed.placement import WorkerPool
    pool = object.__new__(WorkerPool)
    pool.runtime, pool.statistics = RuntimeConfig(actors=3), None
    dead = _Normalized.remote(1e6)
    ray.kill(dead, no_restart=True)
    pool.workers = {"actor0": _Normalized.remote(5.0), "actor1": _Normalized.remote(500.0),
                    "actor2": dead}
    assert pool.normalization()[1]["normalizers"][0]["obs_rms"]["count"] == 500.0
    pool.runtime, pool.workers = RuntimeConfig(actors=1), {"actor0": dead}
    assert pool.normalization()[1]["normalizers"][0]["obs_rms"]["count"] == 500.0  # (known)
    pool.statistics = None
    assert pool.normalization() is None


def test_a_restarted_actor_goes_on_from_the_most_counted_statistics(local_ray):
    """An actor that Ray restarts (its normalizers started anew) loads the most counted of the
    training actors' statistics and the run's latest known (a checkpoint's), updating on; a
    resumed run's actors load its checkpoint's as they are placed (were: fresh normalizers)."""
    from looprl.distributed.placement import WorkerPool
    from looprl.distributed.run_state import DistributedResult, SampleCounts

    pool = WorkerPool(ppo_spec(), RuntimeConfig(actors=2), DistributedResult(), SampleCounts())
    pool.workers = {"actor0": _Normalized.remote(5.0), "actor1": _Normalized.remote(500.0)}
    for name in pool.workers:  # (a fresh run: nothing loaded)
        pool.placed(name, {"node": "n", "id": 1})
    pool.placed("actor0", {"node": "n", "id": 2})  # (restarted by Ray, before its loop)
    pool.statistics = _counted(800.0)  # (the latest checkpoint's, counted more)
    pool.placed("actor1", {"node": "n", "id": 2})
    assert [ray.get(w.__ray_call__.remote(lambda w: w.loaded)) for w in pool.workers.values()
            ] == [[500.0], [800.0]]
    resumed = WorkerPool(ppo_spec(), RuntimeConfig(actors=1), DistributedResult(),
                         SampleCounts(), _counted(300.0))
    resumed.workers = {"actor0": _Normalized.remote(1.0)}
    resumed.placed("actor0", {"node": "n", "id": 1})
    assert ray.get(resumed.workers["actor0"].__ray_call__.remote(lambda w: w.loaded)) == [300.0]


def test_a_resumed_runs_actors_go_on_from_its_checkpoints_normalization(local_ray, tmp_path):
    """``env_wrappers=[gymnasium.wrappers.NormalizeObservation]`` on Ray: the controller
    checkpoint holds the training statistics; the resumed run's actor goes on from them,
    updating (was: fresh normalizers, observations scaled anew); an older checkpoint without
    them still resumes."""
    from looprl.distributed.run_state import find_controller_checkpoint
    from looprl.experiments.checkpoint import load_checkpoint, save_checkpoint

    env = make_env("classic_control.a2c", "CartPole-v1",
                   env_wrappers=["gymnasium.wrappers.NormalizeObservation"])
    preset = a2c.hyperparameters(n_envs=2, n_steps=5, hidden=16).env(env).device("cpu").build()
    options = RuntimeConfig(actors=1, envs_per_actor=2, groups=1, checkpoint_every=5)

    def die(run: DistributedRun) -> None:
        if run.result.frames >= 300 and list(tmp_path.glob("*/*/controller_checkpoint.pt")):
            run._finish = lambda: None  # a dead controller saves nothing on its way out
            raise ControllerDied

    with pytest.raises(ControllerDied):
        DistributedRun(preset, options, frames=10**6, logdir=str(tmp_path), quiet=True
                       ).run(callback=die)
    path = find_controller_checkpoint(tmp_path)
    state = load_checkpoint(path)
    saved = state.normalization[1]["normalizers"][0]["obs_rms"]["count"]
    assert saved > 10
    seen = []

    def first_normalizer(worker):
        normalizer = worker.runner.envs.env.unwrapped.envs[0].env
        return normalizer.update_running_mean, normalizer.obs_rms.count

    def callback(run):
        if not seen:
            seen.append(ray.get(run.workers["actor0"].__ray_call__.remote(first_normalizer)))

    run = DistributedRun(preset, options, frames=state.result.frames + 100,
                         logdir=str(tmp_path), quiet=True, resume_from=str(tmp_path))
    run.run(callback=callback)
    (updating, count), = seen
    assert updating and count >= saved
    state = load_checkpoint(path)
    del state.normalization  # (an older checkpoint's: none)
    save_checkpoint(state, path)
    DistributedRun(preset, options, frames=run.result.frames + 100, logdir=str(tmp_path),
                   quiet=True, resume_from=str(tmp_path)).run()


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
