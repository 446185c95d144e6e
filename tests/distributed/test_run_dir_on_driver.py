"""The run directory is the driver's alone: on a cluster, the workers' nodes do not share it.
Here a relative ``logdir`` names another folder in the workers, whose working directory is not
the driver's (as on another node)."""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tests.distributed.test_ray_runtime import ControllerDied, ppo_spec

from looprl.distributed import DistributedRun, RuntimeConfig, pipeline, watch
from looprl.environments.wrappers import load_normalization, read_normalization
from looprl.presets.catalog import make_env
from looprl.presets.classic_control import a2c

ray = pytest.importorskip("ray")


def _normalized_a2c() -> Any:
    """A2C on CartPole with ``env_wrappers=[gymnasium.wrappers.NormalizeObservation]``."""
    env = make_env("classic_control.a2c", "CartPole-v1",
                   env_wrappers=["gymnasium.wrappers.NormalizeObservation"])
    return a2c.hyperparameters(n_envs=2, n_steps=5, hidden=16).env(env).device("cpu").build()


def _first_normalizer(worker: Any) -> tuple[bool, float]:
    """Whether actor worker ``worker``'s first env copy's normalizer updates, and its count."""
    def ask(worker: Any) -> tuple[bool, float]:  # (sent by value: workers cannot import tests)
        normalizer = worker.runner.envs.env.unwrapped.envs[0].env
        return normalizer.update_running_mean, normalizer.obs_rms.count

    return ray.get(worker.__ray_call__.remote(ask))


def test_evaluation_normalizes_with_actor_0s_training_statistics_frozen(local_ray, tmp_path,
                                                                        monkeypatch):
    """A run of ``env_wrappers=[gymnasium.wrappers.NormalizeObservation]`` (one run, as it
    starts workers for seconds): ``runtime.eval_workers``' normalizers hold the training
    actors' statistics, frozen (were: its own, updating as it played); the driver saves actor
    0's statistics beside ``policy.pt``, and Ray's final evaluation and ``looprl watch`` load
    them into their copies, frozen (were: statistics started anew)."""
    pytest.importorskip("pygame")
    seen = []

    def callback(run):
        if run.result.eval_returns and not seen:
            seen.extend(_first_normalizer(run.workers[name]) for name in ("eval0", "actor0"))

    run = DistributedRun(_normalized_a2c(), RuntimeConfig(actors=1, envs_per_actor=2, groups=1,
                                                          eval_workers=1),
                         frames=600, logdir=str(tmp_path), quiet=True)
    result = run.run(callback=callback)
    assert seen, "the evaluation worker finished no episode"
    (evaluating, evaluated), (training, counted) = seen
    assert training and not evaluating
    assert 1 < evaluated <= counted  # (a count of actor 0's, before this poll)
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


def test_a_resumed_run_goes_on_from_the_checkpoints_the_driver_wrote(local_ray, tmp_path,
                                                                     monkeypatch, caplog):
    """``env_wrappers=[gymnasium.wrappers.NormalizeObservation]`` on Ray, with a relative
    ``logdir`` (another folder in the workers): the driver writes the trainer checkpoint and
    the controller checkpoint, which holds the training statistics, in its run directory (no
    worker writes where it runs); a run whose controller died resumes from them: its trainer
    from its checkpoint's step, its actor from the statistics, updating (was: fresh
    normalizers, observations scaled anew); that run's last checkpoint, made an older one
    without statistics, still resumes, its trainer from its final step."""
    from looprl.distributed.run_state import find_controller_checkpoint
    from looprl.experiments.checkpoint import load_checkpoint, save_checkpoint

    monkeypatch.chdir(tmp_path)
    elsewhere = Path(ray.get(ray.remote(lambda: os.getcwd()).remote()))  # a worker's cwd
    assert elsewhere.resolve() != tmp_path.resolve()
    preset, name = _normalized_a2c(), f"a2c-{uuid.uuid4().hex[:8]}"
    options = RuntimeConfig(actors=1, envs_per_actor=2, groups=1, checkpoint_every=5)
    caplog.set_level(logging.WARNING, "looprl.distributed")

    def die(run: DistributedRun) -> None:
        if run.result.frames >= 300 and list(tmp_path.glob("runs/*/*/controller_checkpoint.pt")):
            run._finish = lambda: None  # a dead controller saves nothing on its way out
            raise ControllerDied

    def resumed_step() -> int:
        steps = [r.getMessage() for r in caplog.records
                 if "resumed from its checkpoint" in r.getMessage()]
        caplog.clear()
        assert steps, caplog.text
        return int(steps[-1].split()[-1])

    with pytest.raises(ControllerDied):
        DistributedRun(preset, options, frames=10**6, logdir="runs", name=name, quiet=True,
                       checkpoint_every=100).run(callback=die)
    path = find_controller_checkpoint(tmp_path / "runs")
    assert {"trainer_checkpoint.pt", "controller_checkpoint.pt"} <= {
        file.name for file in path.parent.iterdir()}
    state = load_checkpoint(path)
    saved = state.normalization[1]["normalizers"][0]["obs_rms"]["count"]
    assert saved > 10 and state.checkpoint_steps >= 1
    seen = []

    def callback(run):
        if not seen:
            seen.append(_first_normalizer(run.workers["actor0"]))

    caplog.clear()
    run = DistributedRun(preset, options, frames=state.result.frames + 100, logdir="runs",
                         name=name, quiet=True, resume_from="runs", checkpoint_every=100)
    first = run.run(callback=callback)
    (updating, count), = seen
    assert updating and count >= saved
    assert resumed_step() == state.checkpoint_steps < first.train_steps
    state = load_checkpoint(path)
    del state.normalization  # (an older checkpoint's: none)
    save_checkpoint(state, path)
    resumed = DistributedRun(preset, options, frames=first.frames + 100, logdir="runs",
                             name=name, quiet=True, resume_from="runs", checkpoint_every=100
                             ).run()
    assert resumed_step() == first.trainer_steps[0] < resumed.train_steps
    assert not (elsewhere / "runs" / name).exists()  # no worker wrote where it runs
