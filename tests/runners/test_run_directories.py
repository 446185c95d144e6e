"""Every ES individual and Optuna trial has a run directory whose name and ``run.json`` say
which it is, with its values; every run's ``run.json`` holds its hyperparameters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from looprl.experiments import run_experiment
from looprl.runners import ESRunner


def _run_jsons(root: Path) -> dict[str, dict]:
    return {str(p.parent.relative_to(root)): json.loads(p.read_text())
            for p in sorted(root.glob("**/run.json"))}


def test_each_es_individual_has_a_labelled_run_directory(small_ppo, tmp_path: Path):
    runner = ESRunner(small_ppo, "CartPole-v1", search_targets={"lr": (1e-4, 1e-2)},
                      iterations=2, popsize=2, num_steps_per_iteration=64, eval_episodes=1,
                      seed=0, logdir=str(tmp_path), quiet=True)
    results, _ = runner.run()
    runs = _run_jsons(tmp_path)
    labelled = {k: v for k, v in runs.items() if "gen" in k}
    assert sorted(labelled) == [f"ppo/CartPole-v1/gen{g:03d}_ind{i:03d}"
                                for g in (1, 2) for i in (0, 1)]
    values = [v for h in results["history"] for v in h["values"]]
    for (name, run), value in zip(sorted(labelled.items()), values):
        label = name.rpartition("/")[2]  # genGGG_indIII
        assert (run["generation"], run["individual"]) == (int(label[3:6]), int(label[10:]))
        assert run["values"] == pytest.approx(value)
        assert run["hyperparameters"]["lr"] == pytest.approx(value["lr"])  # the agent's own
        assert (run["runner"], run["seed"], run["meta"]) == ("es", 0, [])
    # no run directory of the unsearched starting point, and the best one's evaluation
    assert sorted(runs) == sorted([*labelled, "ppo/CartPole-v1/best"])
    best, found = runs["ppo/CartPole-v1/best"], results["best"]
    assert (best["generation"], best["individual"]) == (found["iteration"], found["individual"])
    assert best["hyperparameters"]["lr"] == pytest.approx(found["values"]["lr"])
    assert (tmp_path / "ppo" / "CartPole-v1" / "best" / "test_returns.csv").exists()
    runner.close()


def test_es_individuals_of_one_shared_agent_have_their_own_run_directories(small_ppo,
                                                                         tmp_path: Path):
    """``reset_agent=False``: one agent through the search; each individual's part of its
    training is logged in the individual's directory, the final evaluation in ``best``."""
    runner = ESRunner(small_ppo, "CartPole-v1", search_targets={"hp/lr": (1e-4, 1e-2)},
                      reset_agent=False, iterations=2, popsize=2, num_steps_per_iteration=64,
                      eval_episodes=1, seed=0, logdir=str(tmp_path), quiet=True)
    results, _ = runner.run()
    root = tmp_path / "ppo" / "CartPole-v1"
    values = [v for h in results["history"] for v in h["values"]]
    names = [f"gen{g:03d}_ind{i:03d}" for g in (1, 2) for i in (0, 1)]
    frames = []
    for name, value in zip(names, values, strict=True):
        run = json.loads((root / name / "run.json").read_text())
        assert (run["generation"], run["individual"]) == (int(name[3:6]), int(name[10:]))
        assert run["values"] == pytest.approx(value) and run["hyperparameters"]["hidden"] == 8
        rows = (root / name / "results.csv").read_text().splitlines()[1:]
        assert rows, name  # its own training episodes
        frames.append([int(row.split(",")[0]) for row in rows])
    assert all(a[-1] <= b[0] for a, b in zip(frames, frames[1:]))  # one agent's, in turn
    best = json.loads((root / "best" / "run.json").read_text())
    assert (best["generation"], best["individual"]) == (results["best"]["iteration"],
                                                        results["best"]["individual"])
    assert (root / "best" / "test_returns.csv").exists()
    assert sorted(p.name for p in root.iterdir()) == sorted([*names, "best"])  # nothing else
    runner.close()


def test_each_optuna_trial_has_a_labelled_run_directory(small_ppo, tmp_path: Path):
    pytest.importorskip("optuna")
    from looprl.runners import OptunaRunner

    space = {"lr": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True}}
    runner = OptunaRunner(small_ppo, "CartPole-v1", space, n_trials=2, num_steps=64,
                          n_evaluations=1, eval_episodes=1, seed=0, logdir=str(tmp_path),
                          quiet=True)
    results, _ = runner.run()
    runs = _run_jsons(tmp_path)
    for number in (0, 1):
        run = runs[f"ppo/CartPole-v1/trial{number:03d}"]
        assert run["trial"] == number
        assert run["hyperparameters"]["lr"] == pytest.approx(run["values"]["lr"])
    assert runs["ppo/CartPole-v1/best"]["trial"] == results["best"]["trial"]
    runner.close()


def test_run_json_records_the_hyperparameters_of_a_plain_run(small_ppo, tmp_path: Path):
    from looprl.environments import GymEnvironment

    env = GymEnvironment("CartPole-v1")
    preset = small_ppo.hyperparameters(lr=0.0123).env(env).build()
    (result,) = run_experiment(preset, env, 32, logdir=str(tmp_path), quiet=True,
                               test_episodes=0)
    run = json.loads((Path(result.log_dir) / "run.json").read_text())
    assert run["hyperparameters"]["lr"] == 0.0123 and run["hyperparameters"]["hidden"] == 8


def test_a_trials_files_from_ray_do_not_write_over_a_run_of_the_same_name(tmp_path):
    """``unpack_runs`` (``RayTrials``: the driver writes a trial's files) claims a run
    directory as a sequential run does: the first run of a name keeps its files."""
    import io
    import tarfile

    from looprl.distributed.trials import unpack_runs

    def archive(text: str) -> bytes:
        data, buffer = text.encode(), io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            info = tarfile.TarInfo("dqn/CartPole-v1/gen000_ind000/results.csv")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    unpack_runs(archive("first"), str(tmp_path))
    unpack_runs(archive("second"), str(tmp_path))
    runs = tmp_path / "dqn" / "CartPole-v1"
    assert sorted(path.name for path in runs.iterdir()) == ["gen000_ind000", "gen000_ind000_2"]
    assert (runs / "gen000_ind000" / "results.csv").read_text() == "first"
    assert (runs / "gen000_ind000_2" / "results.csv").read_text() == "second"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["dqn"]  # (no temporary left)


def _trained_agent(runner, name: str) -> int:
    """A trial (``RayTrials``): a fresh agent in run directory ``name``, trained a little."""
    runner.label_next_run(name)
    return runner.train(8)["step"]


def test_a_kept_agent_from_ray_goes_on_in_its_run_directory_as_claimed(small_ppo, tmp_path):
    """(Was: restored with its logger in the run directory of the trial's name, which an
    earlier run of that name held: it wrote there, not in the ``_2`` its files went to.)"""
    from looprl.distributed.trials import run_replica, unpack_runs
    from looprl.runners.trials import KeptAgent

    runner = ESRunner(small_ppo, "CartPole-v1", search_targets={"lr": (1e-4, 1e-2)},
                      logdir=str(tmp_path), quiet=True)
    earlier = run_replica(runner.replica_arguments(), _trained_agent, "gen000_ind000", False,
                          {})
    unpack_runs(earlier[2], str(tmp_path))
    _, saved, files, run, _ = run_replica(runner.replica_arguments(), _trained_agent,
                                       "gen000_ind000", True, {})
    KeptAgent(saved=saved, run_dir=unpack_runs(files, str(tmp_path))[run]).restore(runner)
    try:
        assert runner.experiment.logger.log_dir == str(
            tmp_path / "ppo" / "CartPole-v1" / "gen000_ind000_2")
    finally:
        runner.close()
