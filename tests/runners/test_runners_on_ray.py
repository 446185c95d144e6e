"""``looprl run runner=es|optuna runtime=ray``: a generation's individuals and a batch of trials
run at once in Ray processes, with the run directories and results of the sequential run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("hydra")
pytest.importorskip("optuna")

from looprl.configs import build, register  # noqa: E402
from looprl.configs.app import main as run  # noqa: E402
from looprl.distributed.trials import RayTrials  # noqa: E402
from looprl.runners.trials import LocalTrials  # noqa: E402

QUIET = ["logging.quiet=true", "hydra/job_logging=none", "hydra/hydra_logging=none"]
SMALL = ["test_episodes=2", "algorithm.n_envs=2", "algorithm.n_steps=64", "algorithm.hidden=16",
         "algorithm.minibatch_size=64", "algorithm.epochs=2", *QUIET]
ES = ["runner=es", "runner.popsize=4", "runner.iterations=2", "runner.strategy=openai",
      "runner.sigma=0.3", "runner.num_steps_per_iteration=256",
      "runner.search_targets={lr: [1e-4, 1e-2, log], clip: [0.1, 0.3]}"]
OPTUNA = ["runner=optuna", "runner.n_trials=4", "runner.num_steps=256", "runner.n_evaluations=2",
          "runner.search_space={lr: {low: 1e-4, high: 1e-2, log: true}, "
          "n_steps: {type: int, low: 32, high: 96}}"]


def _run(tmp_path: Path, name: str, overrides: list[str]) -> tuple[dict, dict]:
    """Run ``looprl run`` in ``tmp_path/name``: its ``results.json`` and each run directory's
    ``run.json`` (but the time it started)."""
    directory = tmp_path / name
    run([*SMALL, *overrides, "seed=3", f"hydra.run.dir={directory}"])
    runs = {}
    for path in sorted(directory.glob("ppo/CartPole-v1/*/run.json")):
        info = json.loads(path.read_text())
        info.pop("started")
        runs[path.parent.name] = info
    return json.loads((directory / "results.json").read_text()), runs


def _without_times(results: dict) -> dict:
    return {**results, "train": {k: v for k, v in results["train"].items() if k != "wall_time"}}


def test_es_individuals_on_ray_give_the_sequential_results(tmp_path, local_ray,
                                                           monkeypatch) -> None:
    """... and the same run directories. On a cluster a trial's node does not share the
    driver's filesystem: the trial logs in a temporary directory of its own and returns its
    files, which the driver writes in its ``logdir`` (here the trials on Ray are given a path
    they cannot create: was, their error)."""
    from looprl.runners.base import Runner

    sequential, runs = _run(tmp_path, "local", ES)
    given = Runner.replica_arguments
    monkeypatch.setattr(Runner, "replica_arguments",
                        lambda self: {**given(self), "logdir": "/proc/looprl-another-node"})
    mapped = []
    ray_map = RayTrials.map

    def record(self, runner, trial, tasks, keep=False):
        mapped.append((self.parallel, len(tasks)))
        return ray_map(self, runner, trial, tasks, keep)

    monkeypatch.setattr(RayTrials, "map", record)
    monkeypatch.setattr(LocalTrials, "map", None)  # (never here)
    parallel, ray_runs = _run(tmp_path, "ray", [*ES, "runtime=ray"])
    assert mapped == [(4, 4), (4, 4)]  # the instance's 4 CPUs by default, a generation at a time
    assert _without_times(parallel) == _without_times(sequential)
    assert len(sequential["train"]["history"]) == 2
    assert ray_runs == runs and sorted(runs) == ["best", *(f"gen{g:03d}_ind{i:03d}"
                                                           for g in (1, 2) for i in range(4))]
    assert runs["best"]["individual"] == sequential["train"]["best"]["individual"]
    best = sequential["train"]["best"]
    assert parallel["eval"]["mean_eval_reward"] == sequential["eval"]["mean_eval_reward"]
    assert best["fitness"] == max(f for h in sequential["train"]["history"] for f in h["fitness"])
    assert (tmp_path / "ray" / "preset.pt").exists()
    assert not list((tmp_path / "ray").rglob(".kept_agent.pt"))


def test_optuna_trials_on_ray_give_the_sequential_results(tmp_path, local_ray) -> None:
    sequential, runs = _run(tmp_path, "local", OPTUNA)
    parallel, ray_runs = _run(tmp_path, "ray", [*OPTUNA, "runtime=ray",
                                                "runtime.trials_in_parallel=4"])
    assert parallel == sequential
    assert [h["number"] for h in parallel["train"]["history"]] == [0, 1, 2, 3]
    assert ray_runs == runs and sorted(runs) == ["best", *(f"trial{i:03d}" for i in range(4))]
    assert {h["state"] for h in parallel["train"]["history"]} == {"COMPLETE"}


def test_es_trials_on_ray_make_a_gymnasium_id_registered_in_the_notebook(local_ray) -> None:
    """``gymnasium.register`` in the driver only: each trial's process registers it too (was:
    ``Unknown environment 'tests/NotebookCart-v1'`` from the first trial)."""
    import gymnasium

    from looprl.presets.classic_control import ppo
    from looprl.runners import ESRunner

    gymnasium.register("tests/NotebookCart-v1", max_episode_steps=50,
                       entry_point="gymnasium.envs.classic_control:CartPoleEnv")
    try:
        es = ESRunner(ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=32, hidden=8),
                      "tests/NotebookCart-v1", search_targets={"lr": (1e-4, 1e-2, "log")},
                      iterations=1, popsize=2, num_steps_per_iteration=64, eval_episodes=1,
                      trials=RayTrials(parallel=2))
        results, _ = es.run()
    finally:
        del gymnasium.registry["tests/NotebookCart-v1"]
    assert len(results["history"][0]["fitness"]) == 2


def test_es_trials_on_ray_make_an_environment_given_by_import_path(local_ray) -> None:
    """``env=package.module:Class``: the driver registers the class under a Gymnasium id of
    its own, which each trial's process registers too (was: "Unknown environment
    'package.module.Class'. Give ... 'package.module:ClassName'", the form given)."""
    from looprl.presets.classic_control import ppo
    from looprl.runners import ESRunner

    es = ESRunner(ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=32, hidden=8),
                  "gymnasium.envs.classic_control.cartpole:CartPoleEnv",
                  search_targets={"lr": (1e-4, 1e-2, "log")}, iterations=1, popsize=2,
                  num_steps_per_iteration=64, eval_episodes=1, trials=RayTrials(parallel=2))
    results, _ = es.run()
    assert len(results["history"][0]["fitness"]) == 2


def test_the_trials_warnings_reach_the_driver_once(local_ray, caplog) -> None:
    """A trial's warnings are logged on the driver, once in the search (was: in Ray's session
    logs only)."""
    import logging

    from tests.distributed.user_components import Warns

    from looprl.presets.classic_control import ppo
    from looprl.runners import ESRunner

    es = ESRunner(ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=32, hidden=8),
                  "CartPole-v1", search_targets={"lr": (1e-4, 1e-2, "log")}, iterations=1,
                  popsize=2, num_steps_per_iteration=64, eval_episodes=1, meta=[Warns()],
                  quiet=True, trials=RayTrials(parallel=2))
    with caplog.at_level(logging.WARNING):
        es.run()
    warned = [(r.name, r.getMessage()) for r in caplog.records if "hook warns" in r.getMessage()]
    assert warned.count(("user.component", "the step hook warns")) == 1, warned


def test_a_failed_trials_warnings_reach_the_driver_with_its_error(caplog) -> None:
    """A trial that raises hands its warnings over with its error, which ``RayTrials.map``
    raises once they are logged on the driver (were: lost with ``run_replica``'s answer); in
    this process, with a stand-in for Ray."""
    import logging
    from types import SimpleNamespace

    from looprl.distributed.trials import _result, run_replica
    from looprl.presets.classic_control import ppo
    from looprl.runners import ESRunner

    es = ESRunner(ppo.hyperparameters(n_envs=2, n_steps=16, hidden=8), "CartPole-v1",
                  search_targets={"lr": (1e-4, 1e-2, "log")}, iterations=1, quiet=True)

    def trial(runner, task):
        logging.getLogger("user.trial").warning("warned before it failed")
        raise ValueError("the trial failed")

    with pytest.raises(ValueError) as raised:
        run_replica(es.replica_arguments(), trial, None, False, {})

    class TaskError(Exception):  # (Ray's ``RayTaskError``: the trial's error as its cause)
        cause = raised.value

    def get(ref):
        raise TaskError

    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(ValueError, match="the trial failed"):
        _result(SimpleNamespace(get=get, exceptions=SimpleNamespace(RayTaskError=TaskError)),
                None)
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("user.trial", "warned before it failed")]


def test_the_runtime_options_reach_the_trials() -> None:
    from hydra import compose, initialize

    register()
    with initialize(version_base="1.3", config_path=None):
        cfg = compose("looprl", overrides=[*OPTUNA, "runtime=ray", "runtime.trials_in_parallel=3",
                                           "runtime.num_cpus=2"])
        pbt = compose("looprl", overrides=["runner=pbt", "runner.mutations={hp/lr: [1e-4, 1e-2]}",
                                           "runtime=ray", "runtime.trials_in_parallel=2"])
    trials = build(cfg).runner.trials
    assert isinstance(trials, RayTrials) and (trials.parallel, trials.num_cpus) == (3, 2)
    assert build(pbt).runner.trials.parallel == 2  # PBT members at once (Tune's cap)


def test_device_cuda_reserves_each_trial_a_gpu_and_trains_it_there() -> None:
    """``runner=es|optuna runtime=ray device=cuda``: each trial reserves
    ``runtime.gpus_per_trial`` GPUs (1 by default; a fraction shares one) and its runner
    trains on ``cuda``, the GPU Ray shows it; on the CPU otherwise (was: device=cuda was one
    line, the trials trained on the CPU). (No GPU here: the mapping, and the device a trial's
    runner is given.)"""
    from looprl.configs.runtimes import trial_gpus
    from looprl.distributed.trials import run_replica
    from looprl.presets.classic_control import ppo
    from looprl.runners import ESRunner

    assert [trial_gpus("es", device, gpus) for device, gpus in (
        ("cuda", None), ("cuda:0", 0.25), (None, 0.5), (None, None), ("cpu", None),
        ("cpu", 0))] == [1.0, 0.25, 0.5, 0.0, 0.0, 0.0]
    assert trial_gpus("pbt", "cuda", None) == 0.0  # (PBT's: runner.gpus_per_member)
    for gpus in (-1, 1.5, "1", True):
        with pytest.raises(ValueError, match="runtime.gpus_per_trial must be a fraction"):
            RayTrials(gpus=gpus)
    assert RayTrials(gpus=2).gpus == 2.0
    es = ESRunner(ppo.hyperparameters(n_envs=2, n_steps=16, hidden=8), "CartPole-v1",
                  search_targets={"lr": (1e-4, 1e-2, "log")}, iterations=1, quiet=True)
    arguments = {**es.replica_arguments(), "logdir": None}
    seen = run_replica(arguments, lambda runner, task: runner.builder._device, None, False, {},
                       "cpu")
    assert seen[0] == "cpu"


def test_trials_that_reserve_more_gpus_than_the_cluster_has_are_one_line(local_ray) -> None:
    """(Not a wait without end for resources Ray will never have.)"""
    from looprl.presets.classic_control import ppo
    from looprl.runners import ESRunner

    es = ESRunner(ppo.hyperparameters(n_envs=2, n_steps=16, hidden=8), "CartPole-v1",
                  search_targets={"lr": (1e-4, 1e-2, "log")}, iterations=1, popsize=2,
                  num_steps_per_iteration=64, quiet=True, trials=RayTrials(parallel=2, gpus=0.5))
    with pytest.raises(ValueError, match=r"^each trial reserves 0.5 GPU \(device=cuda, runtime."
                                         r"gpus_per_trial\) and the Ray cluster has 0"):
        es.run()


def test_trials_that_join_a_cluster_size_no_local_instance(monkeypatch) -> None:
    """A cluster has its own CPUs: the trials' ``RuntimeConfig`` gets no ``num_cpus`` (which it
    refuses with an address), a local instance gets its CPUs."""
    from looprl.distributed import trials as module
    seen = []
    monkeypatch.setattr(module, "start_ray", lambda runtime: seen.append(runtime) or False)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # (whether a module's runs or not)
    RayTrials(address="127.0.0.1:6379", num_cpus=3).start()
    RayTrials(num_cpus=3).start()
    assert [(r.address, r.num_cpus) for r in seen] == [("127.0.0.1:6379", None), (None, 3)]


def test_a_failed_trial_leaves_its_run_directory_as_a_sequential_run_does(tmp_path, local_ray
                                                                          ) -> None:
    """(Was: a trial that failed on Ray returned no files, and ``looprl run`` removed the
    search's directory, its app.log included, where a sequential search keeps the failed
    individual's logs.) An environment's failure crosses to the driver with what the trial's
    process set on it: its files, and its warnings (were: lost)."""
    import pickle

    from tests.distributed.faulty_env import PATH

    from looprl.environments import GymEnvironment
    from looprl.environments.faults import EnvironmentFailure
    from looprl.presets.classic_control import ppo
    from looprl.runners import ESRunner

    es = ESRunner(ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=32, hidden=8),
                  GymEnvironment(PATH, every="step"), search_targets={"lr": (1e-4, 1e-2, "log")},
                  iterations=1, popsize=2, num_steps_per_iteration=64, eval_episodes=1,
                  logdir=str(tmp_path), trials=RayTrials(parallel=2))
    with pytest.raises(EnvironmentFailure, match="step fault injected"):
        es.run()
    [run] = (tmp_path / "ppo").glob("*/gen001_ind00?/run.json")
    assert (run.parent / "results.csv").is_file()
    failure = EnvironmentFailure("it failed", "CartPole-v1", "step", episode=1, step=3)
    failure.worker_warnings = [("user.env", "warned")]
    copy = pickle.loads(pickle.dumps(failure))
    assert (str(copy), copy.episode) == ("it failed", 1)
    assert copy.worker_warnings == failure.worker_warnings
