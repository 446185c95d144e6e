"""Config-driven runs: the Hydra groups, ``looprl run``, multiruns and launchers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("hydra")

from hydra import compose, initialize  # noqa: E402

from looprl.cli import main as cli  # noqa: E402
from looprl.configs import algorithm_options, build, register  # noqa: E402
from looprl.configs.app import main as run  # noqa: E402
from looprl.meta import RND  # noqa: E402
from looprl.presets.catalog import resolve_agent  # noqa: E402
from looprl.runners import ESRunner, OnlineRunner, PBTRunner  # noqa: E402

QUIET = ["logging.quiet=true", "hydra/job_logging=none", "hydra/hydra_logging=none"]
SMALL = ["frames=256", "test_episodes=2", "algorithm.n_envs=2", "algorithm.n_steps=64",
         "algorithm.hidden=16", *QUIET]


def _compose(overrides: list[str]):
    register()
    with initialize(version_base="1.3", config_path=None):
        return compose("looprl", overrides=overrides)


def without_gpus(monkeypatch) -> None:
    """torch sees no GPU, as on the CPU machines the suite is written for (a GPU machine too)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def test_the_algorithm_group_is_read_from_the_presets() -> None:
    cfg = _compose(["algorithm=dqn"])  # registers the groups
    assert cfg.algorithm.preset == "classic_control.dqn"
    assert set(cfg.algorithm) == {"preset", *resolve_agent("dqn").hyperparameter_defaults}
    options = algorithm_options()
    assert set(options) >= {"ppo", "dqn", "atari/ppo", "continuous/sac"}
    # every option in one composition, each at a package of its own (a composition each took
    # seconds in all)
    cfg = _compose([f"+algorithm@option{i}={option}" for i, option in enumerate(options)])
    for i, (option, preset) in enumerate(options.items()):
        defaults = resolve_agent(preset).hyperparameter_defaults
        assert set(cfg[f"option{i}"]) == {"preset", *defaults}, option
        assert cfg[f"option{i}"].preset == preset, option


def test_a_tuned_preset_runs_with_its_own_values(capsys) -> None:
    """``multiagent.dqn`` is ``classic_control.dqn`` with tuned values: ``looprl run`` and
    ``looprl list`` use those, not the base builder's defaults."""
    pytest.importorskip("pettingzoo")
    cfg = _compose(["algorithm=multiagent/dqn", "env=tictactoe_v3"])
    assert (cfg.algorithm.update_frequency, cfg.algorithm.hidden) == (16, 64)
    built = build(cfg)
    preset = built.builder.env(built.env).build()
    for agent_preset in preset.presets.values():
        assert agent_preset.hyperparameters["update_frequency"] == 16
        assert agent_preset.hyperparameters["replay_start_size"] == 500
    assert cli(["list", "multiagent.dqn"]) == 0
    assert "update_frequency = 16" in capsys.readouterr().out


def test_a_config_builds_preset_parts_components_and_runner() -> None:
    cfg = _compose(["algorithm=dqn", "algorithm.lr=1e-3", "algorithm.exploration=ez_greedy",
                    "meta=[rnd]", "meta.rnd.internal_reward_weight=0.5", "frames=1000"])
    built = build(cfg)
    preset = built.builder.env(built.env).build()
    assert preset.hyperparameters["lr"] == 1e-3
    assert preset.hyperparameters["exploration"] == "ez_greedy"
    (rnd,) = built.meta
    assert isinstance(rnd, RND) and rnd.internal_reward_weight == 0.5
    assert isinstance(built.runner, OnlineRunner) and built.runner.num_steps == 1000
    es = build(_compose(["runner=es", "runner.search_targets={lr: [1e-4, 1e-2, log]}",
                         "runner.strategy=openai", "runner.popsize=2"]))
    assert isinstance(es.runner, ESRunner) and es.runner.popsize == 2
    pytest.importorskip("ray.tune")
    pbt = build(_compose(["runner=pbt", "runner.mutations={hp/lr: [1e-4, 1e-2, log]}",
                          "runner.population=2", "frames=2000"]))
    assert isinstance(pbt.runner, PBTRunner) and pbt.runner.num_steps == 2000
    assert pbt.runner.mutations == {"hp/lr": (1e-4, 1e-2, True)}


def test_threads_sets_torchs_cpu_threads(tmp_path: Path) -> None:
    """``threads=N`` sets torch's CPU threads for the run (was: always 1, no key)."""
    before = torch.get_num_threads()
    try:
        run([*SMALL, "threads=2", f"hydra.run.dir={tmp_path}"])
        assert torch.get_num_threads() == 2
        run([*SMALL, f"hydra.run.dir={tmp_path}_1"])  # (null: the MLP presets' 1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_looprl_run_writes_a_run_directory(tmp_path: Path) -> None:
    run([*SMALL, f"hydra.run.dir={tmp_path}"])
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["train"]["step"] >= 256 and len(results["eval"]["returns"]) == 2
    assert "frames: 256" in (tmp_path / ".hydra" / "config.yaml").read_text()
    assert (tmp_path / "preset.pt").exists()


def test_a_local_run_ends_with_its_summary_on_stdout_and_logs_on_stderr(tmp_path: Path,
                                                                        capfd) -> None:
    """``looprl run`` printed nothing after its progress lines (a ``runtime=ray`` run logs
    its frames and test return): its result was in ``results.json`` only. It prints its summary
    on stdout as ``looprl train`` does, and its log lines go to stderr (Hydra's console handler
    wrote them to stdout), and to ``app.log``."""
    run(["frames=64", "test_episodes=2", "algorithm.n_envs=2", "algorithm.n_steps=32",
         "algorithm.hidden=16", f"hydra.run.dir={tmp_path}"])
    results = json.loads((tmp_path / "results.json").read_text())
    train, mean = results["train"], results["eval"]["mean_eval_reward"]
    out, err = capfd.readouterr()
    assert out == (f"ppo on CartPole-v1: {train['step']} frames, {train['episodes']} episodes, "
                   f"test return {mean:.1f} over 2 episodes\n")
    warning = "[looprl.presets.common][WARNING] - ppo: minibatch_size=256 is larger"
    assert warning in err and warning in (tmp_path / "app.log").read_text()
    run(["frames=64", "test_episodes=0", "algorithm.n_envs=2", "algorithm.n_steps=32",
         "algorithm.hidden=16", f"hydra.run.dir={tmp_path / 'none'}"])
    assert capfd.readouterr().out.endswith("episodes\n")  # (no "test return nan")
    run(["frames=64", "test_episodes=0", "algorithm.n_envs=2", "algorithm.n_steps=32",
         "algorithm.hidden=16", "hydra/job_logging=disabled", f"hydra.run.dir={tmp_path / 'off'}"])
    assert not (tmp_path / "off" / "app.log").exists()  # (Hydra's option replaces looprl's)


def test_the_summary_goes_to_stdout_where_no_logging_is_set_up(monkeypatch, capsys) -> None:
    """With ``hydra/job_logging=disabled`` (or ``execute`` called with no logging set up) the
    summary went to a logger nothing handles: lost (it was a ``print``)."""
    import logging

    from looprl.configs import SUMMARY_LOGGER, log_summary
    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # (pytest's own, taken off)
    monkeypatch.setattr(logging.getLogger(SUMMARY_LOGGER), "handlers", [])
    log_summary("ppo on CartPole-v1: 64 frames, 3 episodes", {"returns": [9.0, 11.0],
                                                             "mean_eval_reward": 10.0})
    assert capsys.readouterr().out == ("ppo on CartPole-v1: 64 frames, 3 episodes, test return "
                                       "10.0 over 2 episodes\n")


def test_a_run_closes_the_log_file_hydra_opened(tmp_path: Path) -> None:
    """Its ``app.log`` handler was dropped open: Python's ``ResourceWarning`` (unclosed file),
    once per run (or job of a multirun) in a process."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(["frames=64", "test_episodes=0", "algorithm.n_envs=2", "algorithm.n_steps=32",
             "algorithm.hidden=16", "logging.quiet=true", f"hydra.run.dir={tmp_path}"])
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_results_json_is_strict_json_with_null_for_nan(tmp_path: Path) -> None:
    """Without test episodes the mean test return is NaN, which strict JSON cannot hold: it is
    written as null (it was written as NaN)."""
    def strict(constant: str) -> None:
        raise ValueError(f"results.json holds {constant}")

    run(["frames=64", "test_episodes=0", "algorithm.n_envs=2", "algorithm.n_steps=32",
         "algorithm.hidden=16", *QUIET, f"hydra.run.dir={tmp_path}"])
    results = json.loads((tmp_path / "results.json").read_text(), parse_constant=strict)
    assert results["eval"]["mean_eval_reward"] is None and results["eval"]["returns"] == []
    # and no episode was played nor logged, as run_experiment(test_episodes=0) (was: a
    # test_returns.csv of its header only)
    assert not list(tmp_path.rglob("test_returns.csv"))


def test_arrays_in_results_json_are_lists_of_numbers() -> None:
    """ES's best parameter vector (``search_params=true``) and other arrays are written whole,
    NaN as null (was: NumPy's shortened repr, ``"array([-0.127, ..., 0.044], shape=(9155,))"``)."""
    from looprl.experiments.run_files import json_text
    vector = np.linspace(-1.0, 1.0, 2000)
    text = json_text({"parameters": vector, "tensor": torch.tensor([1.5, float("nan")]),
                      "scalar": np.float32(0.5)}, indent=1)
    assert json.loads(text) == {"parameters": vector.tolist(), "tensor": [1.5, None],
                                "scalar": 0.5}


def test_a_multirun_over_two_seeds_makes_two_run_directories(tmp_path: Path) -> None:
    run(["-m", "seed=0,1", "meta=[rnd]", *SMALL, f"hydra.sweep.dir={tmp_path}"])
    runs = sorted(p for p in tmp_path.iterdir() if p.is_dir() and p.name.isdigit())
    assert [p.name for p in runs] == ["0", "1"]
    seeds = [(p / ".hydra" / "config.yaml").read_text() for p in runs]
    assert "seed: 0" in seeds[0] and "seed: 1" in seeds[1]
    returns = [json.loads((p / "results.json").read_text())["train"]["returns"] for p in runs]
    assert returns[0] != returns[1]  # the seed reached the run
    for seed, path in enumerate(runs):  # each job's run.json says what it ran
        described = json.loads((path / "ppo" / "CartPole-v1" / "run.json").read_text())
        assert (described["runner"], described["seed"]) == ("online", seed)
        assert [m.partition("(")[0] for m in described["meta"]] == ["RND"]


def test_a_sweep_into_a_finished_sweeps_directory_is_one_line(tmp_path: Path, capsys) -> None:
    """A second sweep with the same ``hydra.sweep.dir`` replaced job 0's config, results.json
    and preset.pt, its logs beside the first's (``CartPole-v1_2``), without a word."""
    (tmp_path / "0").mkdir()
    (tmp_path / "0" / "results.json").write_text("{}")
    assert cli(["run", "-m", "seed=5", *SMALL, f"hydra.sweep.dir={tmp_path}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "holds a finished sweep (0/results.json)" in error[0], error
    assert [p.name for p in (tmp_path / "0").iterdir()] == ["results.json"]


def test_a_sweep_over_lists_of_meta_components_passes_the_checks() -> None:
    """Hydra's sweep over lists of a group (``-m meta=[rnd],[noveld]``, one job per list) was
    refused before Hydra saw it: "Unknown meta 'rnd]'"."""
    from looprl.configs.checks import check_overrides
    register()
    check_overrides(["-m", "meta=[rnd],[noveld,rnd]"])
    with pytest.raises(ValueError, match="Unknown meta 'nd'. Did you mean 'rnd'?"):
        check_overrides(["-m", "meta=[rnd],[nd]"])


def test_a_swept_hyperparameter_value_out_of_range_is_refused_before_the_first_job() -> None:
    """``-m algorithm.lr=1e-3,-1`` trained job 0 in full before job 1 was refused."""
    from looprl.configs.checks import check_overrides
    register()
    with pytest.raises(ValueError, match=r"'lr' of ppo must be >= 0, got -1"):
        check_overrides(["-m", "algorithm.lr=1e-3,-1"])
    with pytest.raises(ValueError, match="got -1"):  # (checked the last override's value)
        check_overrides(["-m", "algorithm.lr=1e-3,-1", "frames=10"])
    with pytest.raises(ValueError, match="'alpha' of sac must be positive"):
        check_overrides(["-m", "algorithm=dqn,continuous/sac", "algorithm.alpha=0.0,0.5"])
    check_overrides(["-m", "algorithm.lr=1e-3,${oc.env:LR}", "algorithm.hidden=range(1,4)"])
    # the run's counts too (docs/runtimes.md: "before anything runs")
    for swept in ("seed=0,-1", "frames=100,0", "test_episodes=2,1.5", "threads=1,-2"):
        with pytest.raises(TypeError, match=r"must be an integer >= \d, got "):
            check_overrides(["-m", swept])
    with pytest.raises(ValueError, match=r"seed: a seed is a whole number from 0 to 2\*\*32"):
        check_overrides(["-m", "seed=0,5000000000"])
    check_overrides(["-m", "seed=0,1", "frames=1e3,2000"])


def test_a_second_copy_of_a_component_attaches_under_a_name_of_its_own() -> None:
    """What the one-line error of ``meta=[rnd,rnd]`` advises."""
    built = build(_compose(["meta=[rnd]", "+meta.rnd2._target_=looprl.meta.rnd.RND",
                            "+meta.rnd2.internal_reward_weight=0.5"]))
    assert [(type(c).__name__, c.internal_reward_weight) for c in built.meta] == [
        ("RND", 0.1), ("RND", 0.5)]


def test_the_submitit_local_launcher_runs_a_job_and_reports_a_failed_one(tmp_path: Path,
                                                                         capsys) -> None:
    """A job that failed in a launcher's own process (submitit, joblib) was lost: the command
    printed nothing and exited 0; the other job still finishes, through submitit."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    assert cli(["run", "-m", "env=CartPole-v1,NoSuchEnv-v0", "hydra/launcher=submitit_local",
                *SMALL, f"hydra.sweep.dir={tmp_path}"]) == 2
    assert f"looprl: error: job 1 ({tmp_path / '1'}): Unknown environment 'NoSuchEnv-v0'" in (
        capsys.readouterr().err)
    assert json.loads((tmp_path / "0" / "results.json").read_text())["eval"]["episodes"] == 2
    assert (tmp_path / ".submitit").is_dir()  # it went through submitit


def test_the_failed_jobs_of_a_sweep_are_counted_and_the_first_named(tmp_path: Path,
                                                                      capsys) -> None:
    """(was: the first job's error alone, naming no job)"""
    assert cli(["run", "-m", "env=NoSuchEnv-v0,CartPole-v1,Nope-v1", *SMALL,
                f"hydra.sweep.dir={tmp_path}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"looprl: error: 2 jobs failed; the first, job 0 ({tmp_path / '0'}): "
                            "Unknown environment 'NoSuchEnv-v0'"), error
    assert (tmp_path / "1" / "results.json").is_file()


def test_the_slurm_launcher_without_slurm_is_one_line(tmp_path: Path, capsys,
                                                      monkeypatch) -> None:
    """Was submitit's traceback (RuntimeError: Could not detect "srun") and a sweep directory
    holding only multirun.yaml."""
    from looprl.configs import checks
    monkeypatch.setattr(checks.shutil, "which", lambda name: None)
    assert cli(["run", "-m", "seed=0,1", "hydra/launcher=submitit_slurm", *SMALL,
                f"hydra.sweep.dir={tmp_path / 'sweep'}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "submitit_slurm needs a SLURM cluster (no srun here)" in error[0]
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize("overrides, message", [
    (["algorithm=ppoo"], "Unknown algorithm 'ppoo'. Did you mean 'ppo'?"),
    (["algorithm.lrr=1"], "'lrr' is not a hyperparameter of ppo. Did you mean 'lr'?"),
    (["algorithm=", "algorithm.lr=1"], "Could not find 'algorithm/'"),
    (["frame=10"], "Unknown config key 'frame'. Did you mean 'frames'?"),
    (["algoritm.lr=1"], "Unknown config key 'algoritm'. Did you mean 'algorithm'?"),
    (["frmaes=1"], "logging, algorithm, meta, runner, runtime"),  # (was: the groups left out)
    # (were Hydra's words, naming no override: "mismatched input '=' expecting <EOF>")
    (["hydra.run.dir=out/lr=1e-3"], "Cannot read the override 'hydra.run.dir=out/lr=1e-3' "
                                    "(mismatched input '=' expecting <EOF>): quote a value"),
    (["algorithm.lr=[1,2"], "Cannot read the override 'algorithm.lr=[1,2' (no viable "
                            "alternative at input '[1,2'): quote"),
    # Mighty's names (its examples/*.sh, base.yaml, algorithm/*.yaml): looprl's way in the line
    (["num_steps=10"], "Unknown config key 'num_steps'. looprl's way for Mighty's 'num_steps': "
                       "frames=N."),
    (["environment=gymnasium/cartpole"], "looprl's way for Mighty's 'environment': env=ID"),
    (["+algorithm_kwargs.learning_rate=1"],
     "looprl's way for Mighty's 'algorithm_kwargs': algorithm.NAME=VALUE"),
    (["algorithm=SAC"], "Unknown algorithm 'SAC'. Did you mean 'continuous/sac'?"),
    (["runner=standard"], "Unknown runner 'standard'. Did you mean 'online'?"),
    (["meta=[PrioritizedLevelReplay]"], "Did you mean 'plr'?"),
    (["meta=[mighty.mighty_meta.PrioritizedLevelReplay]"], "looprl's own is 'plr': meta=[plr]"),
    (["algorithm.learning_rate=1"], "Did you mean 'lr' (Mighty's 'learning_rate')?"),
    (["meta=[rndd]"], "Unknown meta 'rndd'. Did you mean 'rnd'?"),
    (["meta=[rnd,rnd]"],  # (was: one RND attached, silently)
     "meta=[rnd,rnd] lists 'rnd' twice, but the config holds one node per option (meta.rnd): "
     "add the second copy under a name of its own, +meta.NAME._target_=looprl.meta.rnd.RND"),
    (["meta.rnd.lr=1"], "add it with meta=[rnd]"),
    (["meta=[rnd]", "meta.rnd.lrr=1"],  # (was "meta.lrr: ...": the component's name lost)
     "meta.rnd.lrr: 'lrr' is not an argument of rnd. Did you mean 'lr'?"),
    (["meta=[rnd]", "meta.rnd.rnd_output_dim=64"],  # (Mighty's name: was no suggestion)
     "Did you mean 'feature_dim' (Mighty's 'rnd_output_dim')?"),
    (["meta=[network_reset]", *QUIET], "meta network_reset needs every: set "
                                       "meta.network_reset.every=..."),
    (["meta=[hp_schedule]", "meta.hp_schedule.key=hp/lr", *QUIET],
     "meta hp_schedule needs kind, start: set meta.hp_schedule.kind=... "
     "meta.hp_schedule.start=..."),
    (["runner=es", "runner.popsze=3"], "'popsze' is not an argument of the runner es"),
    (["runner=es", "frames=2000"],  # (was: each individual trained 10,000 steps, silently)
     "frames does not apply to runner=es: each individual trains runner.num_steps_per_iteration"),
    (["runner=pbt", *QUIET], "runner=pbt needs mutations: set "
                             "runner.mutations='{hp/lr: [1e-5, 1e-2, log]}'"),
    (["runner=optuna", *QUIET], "runner=optuna needs search_space: set "
                                "runner.search_space='{lr: {low: 1e-5, high: 1e-2, log: true}}'"),
    (["algorithm.lr=abc", *QUIET], "Hyperparameter 'lr' must be float (like 0.001), got 'abc'"),
    # (was "must be int (like 64)": the range, as the others' lines say it)
    (["algorithm.minibatch_size=32.5", *QUIET],
     "Hyperparameter 'minibatch_size' of ppo must be a whole number >= 1, got 32.5"),
    (["frames=abc", *QUIET], "frames must be an integer >= 1, got 'abc'"),
    (["frames=1.5", *QUIET], "frames must be an integer >= 1, got 1.5"),
    (["threads=0.5", *QUIET], "threads must be an integer >= 0, got 0.5"),
    (["threads=-1", *QUIET], "threads must be an integer >= 0, got -1"),
    # (were: "No checkpoint in ...: nothing to resume", and wandb's "'int' object is not a
    # mapping" once the run directory was made)
    (["resume=maybe", *QUIET], "resume must be True or False, got 'maybe'"),
    (["logging.wandb=5", *QUIET], "wandb is wandb.init's arguments (a dict; looprl run: "
                                  "logging.wandb={project: NAME}) or None, got 5"),
    (["runner=optuna", "runner.search_space={lr: {low: 1, high: 1}}", *QUIET],
     "empty range"),
    (["runner=es", "runtime=ray", "runtime.actors=4", *QUIET],
     "runtime.actors does not apply to runner=es on Ray"),
    (["runner=optuna", "runtime=ray", "runtime.actors=2", *QUIET],  # (was: its default value,
     "runtime.actors does not apply to runner=optuna on Ray"),  # silently ignored)
    (["runner=es", "runtime=ray", "runner.search_targets={hp/lr: [1e-4, 1e-2, log]}", *QUIET],
     "ES individuals on Ray are fresh agents"),
    (["runner=optuna", "runtime=ray", "runtime.trials_in_parallel=0", *QUIET],
     "runtime.trials_in_parallel must be an integer >= 1"),
    # (was: "device=cuda does not apply to runner=optuna with runtime=ray"; now each trial
    # reserves a GPU, and this machine has none)
    (["runner=optuna", "runtime=ray", "device=cuda", *QUIET],
     "each trial of runner=optuna reserves 1 GPU (device=cuda, runtime.gpus_per_trial) and "
     "this machine has 0"),
    (["runner=es", "runtime=ray", "device=cpu", "runtime.gpus_per_trial=0.5", *QUIET],
     "device=cpu with runtime.gpus_per_trial=0.5: set device=cuda"),
    (["runner=es", "runtime=ray", "runtime.gpus_per_trial=abc", *QUIET],
     "runtime.gpus_per_trial must be a fraction of a GPU (0.25: four trials share one) or a "
     "whole number of GPUs, got 'abc'"),  # (was: "could not convert string to float")
    (["runner=optuna", "runtime=ray", "runtime.gpus_per_trial=1.5", *QUIET],
     "runtime.gpus_per_trial must be a fraction of a GPU"),  # (was: "this machine has 0")
    (["runner=es", "runtime=ray", "device=cuda:1", *QUIET],
     "device=cuda:1: on Ray each trial computes on the GPU Ray gives it"),
    (["runner=pbt", "runtime=ray", "runtime.gpus_per_trial=1", *QUIET],
     "runtime.gpus_per_trial is for runner=es|optuna; PBT's members reserve "
     "runner.gpus_per_member"),
    (["runtime=ray", "runtime.gpus_per_trial=1", *QUIET],
     "runtime.gpus_per_trial is for runner=es, optuna or pbt"),
    (["runtime=ray", "runtime.trials_in_parallel=2", *QUIET],
     "runtime.trials_in_parallel is for runner=es, optuna or pbt"),
    (["runtime=ray", "runtime.segment_length=99"],  # (was: the preset's, 99 silently ignored)
     "'segment_length' is not an option of the runtime ray"),
    (["runtime.trials_in_parallel=2"], "'trials_in_parallel' is not an option of the runtime "
                                       "local. Valid: max_restarts"),  # (was "Valid: ")
])
def test_bad_configs_fail_in_one_line(overrides, message, capsys, tmp_path, monkeypatch) -> None:
    without_gpus(monkeypatch)  # (the GPU checks' lines are those of a machine without one)
    assert cli(["run", *overrides, f"hydra.run.dir={tmp_path}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0], error


def test_a_budget_in_scientific_notation_is_a_whole_number(tmp_path: Path) -> None:
    """``frames=1.2e2``, as ``looprl train --frames 1.2e2`` takes it (was: "must be an
    integer", Hydra reading it as a float)."""
    assert cli(["run", "frames=1.2e2", "test_episodes=0", *QUIET,
                f"hydra.run.dir={tmp_path}"]) == 0
    assert json.loads((tmp_path / "results.json").read_text())["train"]["step"] >= 120


def test_a_rejected_config_is_one_line_and_leaves_no_run_directory(
        tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)  # Hydra's default outputs/DATE/TIME, its job log included
    assert cli(["run", "env=NoSuchEnv-v0", "frames=64"]) == 2
    error = [line for line in capsys.readouterr().err.strip().splitlines()  # (but a package's
             if "][INFO] - " not in line]  # INFO as it is imported: OpenGL's, after some tests)
    assert len(error) == 1 and "Unknown environment 'NoSuchEnv-v0'" in error[0], error
    assert "Give a Gymnasium id (gymnasium.pprint_registry() lists them)" in error[0]  # (no
    assert list(tmp_path.iterdir()) == []  # near id: how to name one)


def test_runs_started_in_the_same_second_get_a_directory_each(tmp_path: Path,
                                                               monkeypatch) -> None:
    """Hydra's default ``outputs/DATE/TIME`` gave two runs of one second the same directory
    (the second's config replaced the first's); the second now gets ``TIME-1``."""
    import datetime

    from looprl.configs import run_dirs

    second = datetime.datetime(2026, 12, 1, 10, 0, 0)
    monkeypatch.setattr(run_dirs.datetime, "datetime", type("Frozen", (), {"now": lambda: second}))
    monkeypatch.chdir(tmp_path)
    run([*SMALL, "seed=0"])
    run([*SMALL, "seed=1"])
    day = tmp_path / "outputs" / "2026-12-01"
    assert sorted(p.name for p in day.iterdir()) == ["10-00-00", "10-00-00-1"]
    for name, seed in (("10-00-00", 0), ("10-00-00-1", 1)):
        assert (day / name / "results.json").is_file()
        assert f"seed: {seed}\n" in (day / name / ".hydra" / "config.yaml").read_text()
    assert run_dirs.claim_run_dir(["-m", "seed=0,1"]) == Path("multirun/2026-12-01/10-00-00")
    assert run_dirs.claim_run_dir(["--cfg", "job"]) is None  # (prints; writes no directory)
    assert run_dirs.claim_run_dir([f"hydra.run.dir={tmp_path / 'mine'}"]) is None


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_a_run_directory_that_cannot_be_made_is_one_line(tmp_path: Path, monkeypatch,
                                                        capsys) -> None:
    """``hydra.run.dir=/proc/x`` (whose parent ``os.access`` calls writable for root) was
    Hydra's "[Errno 2] No such file or directory: '/proc/x'", with no advice."""
    import looprl.core.files
    from looprl.configs import run_dirs

    monkeypatch.setattr(looprl.core.files.os, "access", lambda *args: True)  # (as for root)
    for key in ("hydra.run.dir", "hydra.sweep.dir"):
        flags = ["-m"] if key == "hydra.sweep.dir" else []
        assert cli(["run", *flags, *SMALL, f"{key}=/proc/x/y"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"looprl: error: {key}=/proc/x/y: cannot create the directory (")
        assert err.endswith(f"/proc/x); choose another {key}, one you can write in\n")
    run_dirs.check_run_dir([f"hydra.run.dir={tmp_path / 'new' / 'run'}"])
    assert not (tmp_path / "new").exists()  # (a check: Hydra makes it when the run starts)


def test_a_multirun_flag_after_the_overrides_runs_the_sweep(tmp_path: Path, monkeypatch) -> None:
    """``looprl run seed=0,1 -m`` (as Hydra takes it) was Hydra's usage block: "unrecognized
    arguments: hydra.sweep.dir=multirun/...", the directory looprl adds after the flag."""
    monkeypatch.chdir(tmp_path)
    assert cli(["run", "seed=0", *SMALL, "-m"]) == 0
    assert len(list(tmp_path.glob("multirun/*/*/0/results.json"))) == 1


def test_hydra_flags_take_their_value_as_the_next_argument(capsys) -> None:
    assert cli(["run", "--cfg", "job", "algorithm=dqn"]) == 0
    assert "preset: classic_control.dqn" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli(["--help"])
    assert "{train,run,list,plot,watch}" in capsys.readouterr().out  # run is listed
    # a bare name is the first family's that has it, as looprl train reads it (was refused)
    assert cli(["run", "--cfg", "job", "algorithm=sac"]) == 0
    assert "preset: continuous.sac" in capsys.readouterr().out
    assert cli(["run", "--cfg", "job", "algorithm=ppo"]) == 0
    assert "preset: classic_control.ppo" in capsys.readouterr().out


def test_a_swapped_part_is_saved_once_under_the_algorithm(tmp_path: Path) -> None:
    run(["algorithm=dqn", "exploration=ez_greedy", "frames=64", "test_episodes=0",
         "algorithm.replay_start_size=32", *QUIET, f"hydra.run.dir={tmp_path}"])
    saved = (tmp_path / ".hydra" / "config.yaml").read_text()
    assert saved.count(" exploration:") == 1 and "  exploration: ez_greedy" in saved
    assert "algorithm.exploration=ez_greedy" in (tmp_path / ".hydra" / "overrides.yaml").read_text()


def test_help_lists_the_groups_and_their_options(capsys) -> None:
    with pytest.raises(SystemExit):
        run(["--help"])
    out = capsys.readouterr().out
    assert "algorithm: a2c, c51, ddqn, dqn" in out
    assert "meta: cosine_lr, hp_schedule, network_reset, noveld, plr, rnd, space" in out
    assert "runner: es, online, optuna, pbt" in out


def test_help_composes_the_overrides_without_patching_hydra(capsys) -> None:
    from hydra.core.config_store import ConfigStore

    with pytest.raises(SystemExit):
        run(["algorithm=dqn", "algorithm.lr=0.5", "--help"])
    out = capsys.readouterr().out
    assert "preset: classic_control.dqn" in out and "lr: 0.5" in out
    assert "== Configuration groups ==" in out and "runtime: local, ray" in out
    assert "__deepcopy__" not in ConfigStore.__dict__  # Hydra's classes as they ship


def test_help_of_a_multirun_shows_the_config_without_its_sweeps(capsys) -> None:
    """``looprl run -m seed=0,1 --help`` was "Ambiguous value for argument 'seed=0,1' ...
    add --multirun to your command line", with -m given."""
    with pytest.raises(SystemExit):
        run(["-m", "seed=0,1", "algorithm=dqn", "meta=[rnd],[noveld]", "--help"])
    assert "preset: classic_control.dqn" in capsys.readouterr().out


def test_a_search_none_of_whose_trials_completed_ends_with_its_results(tmp_path,
                                                                       monkeypatch) -> None:
    """Every Optuna trial diverged: results.json was written, then the run failed with
    ``looprl: error: mean_eval_reward`` (a KeyError on the empty evaluation), exit status 2."""
    pytest.importorskip("optuna")
    from looprl.runners.base import Runner

    def diverge(self, num_steps):
        raise FloatingPointError("the loss is NaN")

    monkeypatch.setattr(Runner, "train", diverge)
    run([*SMALL, "runner=optuna", "runner.search_space={lr: [1e-4, 1e-2, log]}",
         "runner.n_trials=1", "runner.n_evaluations=1", f"hydra.run.dir={tmp_path}"])
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["train"]["best"] is None and results["eval"] == {}
    assert [h["state"] for h in results["train"]["history"]] == ["FAIL"]


def test_resume_continues_a_run_and_refuses_another_config(tmp_path: Path, capsys) -> None:
    run([*SMALL, "checkpoint_every=192", f"hydra.run.dir={tmp_path}"])  # runs past it to 256
    config = tmp_path / ".hydra" / "config.yaml"
    before = (config.read_text(), config.stat().st_mtime_ns)
    # a new run in an unfinished run's directory (killed: its checkpoint, no results.json) is
    # refused (was: it replaced .hydra/config.yaml, logged to ppo/CartPole-v1_2, and a later
    # --resume went on from the old checkpoint with the new run's algorithm.lr, unchecked)
    finished = (tmp_path / "results.json").rename(tmp_path / "finished.json")
    capsys.readouterr()
    assert cli(["run", *SMALL, "algorithm.lr=0.1", f"hydra.run.dir={tmp_path}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert error == [f"looprl: error: hydra.run.dir={tmp_path} holds an unfinished run, whose "
                     "config this one would replace: go on with it (looprl run --resume "
                     f"{tmp_path}), or give a new directory, or delete its "
                     "ppo/CartPole-v1/checkpoint.pt to start anew here"], error
    assert sorted(p.name for p in (tmp_path / "ppo").iterdir()) == ["CartPole-v1"]
    finished.rename(tmp_path / "results.json")
    assert cli(["run", "--resume", str(tmp_path), "algorithm.lr=0.1"]) == 2
    assert "was run with another config (algorithm.lr: 0.001 -> 0.1)" in capsys.readouterr().err
    # a group chosen anew (as runtime=local for a Ray run): the differences, not Hydra's advice
    # to append the run's keys of its old choice (was: "Could not override 'algorithm.n_envs'.
    # To append to your config use +algorithm.n_envs=2")
    assert cli(["run", "--resume", str(tmp_path), "algorithm=dqn"]) == 2
    error = capsys.readouterr().err
    assert "was run with another config (algorithm.preset: 'classic_control.ppo' -> " \
        "'classic_control.dqn'); resume it" in error  # (was: all 36 keys of both algorithms)
    assert cli(["run", "--resume", str(tmp_path), "runtime=ray"]) == 2
    assert "was run with another config (runtime.name: 'local' -> 'ray'); resume it" in (
        capsys.readouterr().err)  # (not the Ray group's 20 other keys)
    assert (config.read_text(), config.stat().st_mtime_ns) == before  # nothing overwritten
    run(["--resume", str(tmp_path), "frames=512", "threads=2"])  # a longer budget: trains on
    torch.set_num_threads(1)  # (threads, as logging, may change on resume)
    results = json.loads((tmp_path / "results.json").read_text())["train"]
    assert results["step"] >= 512
    # the whole run's episodes, those before the resume included, as results.csv has them
    csv = (tmp_path / "ppo" / "CartPole-v1" / "results.csv").read_text().splitlines()[1:]
    assert results["returns"] == pytest.approx([float(row.split(",")[2]) for row in csv])
    assert len(results["returns"]) == results["episodes"]
    assert results["mean_return"] == pytest.approx(np.mean(results["returns"]))
    assert _tensorboard_steps(tmp_path / "ppo" / "CartPole-v1", "episode") == list(
        range(results["episodes"]))  # each episode once, though the first run went on past
    # a finished run resumed within its budget: one line, nothing run, nothing appended (was:
    # evaluated again, a second test point at the same step; on both runtimes)
    finished = (tmp_path / "results.json").read_bytes()
    capsys.readouterr()  # (the resumed run's log lines, on stderr)
    assert cli(["run", "--resume", str(tmp_path), "frames=300"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and f"{tmp_path} is a finished run ({results['step']} frames): " \
        "nothing to resume; give a larger budget" in error[0], error
    assert (tmp_path / "results.json").read_bytes() == finished
    assert cli(["run", "--resume", str(tmp_path / "ppo")]) == 2
    assert "is no looprl run directory" in capsys.readouterr().err
    other = tmp_path / "no_checkpoint"
    run([*SMALL, f"hydra.run.dir={other}"])
    assert cli(["run", "--resume", str(other)]) == 2
    assert "No checkpoint in" in capsys.readouterr().err
    results = (other / "results.json").read_bytes()
    assert cli(["run", *SMALL, "seed=1", f"hydra.run.dir={other}"]) == 2  # (a finished run)
    assert f"hydra.run.dir={other} holds a finished run (results.json), which this one would " \
        "replace" in capsys.readouterr().err
    assert (other / "results.json").read_bytes() == results


def test_a_run_with_kept_checkpoints_resumes_from_the_latest_where_checkpoint_pt_is_gone(
        tmp_path: Path) -> None:
    """With ``keep_checkpoints``, ``checkpoint.pt`` is written beside ``checkpoint_<frame>.pt``
    (its hard link); deleted (as docs/coming-from-mighty.md says to go back to an older one), a
    resume said "No checkpoint" and a new run there was let replace the run's config. A resume
    takes ``checkpoint.pt``, else the latest kept one; a new run there is refused, with advice
    that names them (here built by hand: files, no training)."""
    from omegaconf import OmegaConf

    from looprl.configs import find_checkpoint
    from looprl.configs.app import _resumable
    from looprl.configs.run_dirs import check_run_dir

    kept = tmp_path / "ppo" / "CartPole-v1"
    kept.mkdir(parents=True)
    for name in ("checkpoint_100.pt", "checkpoint_300.pt", "checkpoint_300.pt.tmp", "run.json"):
        (kept / name).write_bytes(b"")
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text("{{{ :")  # (damaged: refused all the same)
    cfg = OmegaConf.create({"runner": {"name": "online"}, "runtime": {"name": "local"}})
    assert find_checkpoint(str(tmp_path), "online") == str(kept / "checkpoint_300.pt")
    assert _resumable(cfg, str(tmp_path))  # (the Ctrl-C line's "looprl run --resume DIR")
    head = (f"hydra.run.dir={tmp_path} holds an unfinished run, whose config this one would "
            "replace: ")
    refusal = f"{head}give a new directory, or delete its "
    with pytest.raises(ValueError) as error:  # (a damaged config: --resume cannot read it)
        check_run_dir([f"hydra.run.dir={tmp_path}"])
    assert str(error.value) == f"{refusal}ppo/CartPole-v1/checkpoint*.pt to start anew here"
    OmegaConf.save(cfg, tmp_path / ".hydra" / "config.yaml")  # (runner=online: it resumes)
    with pytest.raises(ValueError) as error:
        check_run_dir([f"hydra.run.dir={tmp_path}"])
    assert str(error.value) == (f"{head}go on with it (looprl run --resume {tmp_path}), or give "
                                "a new directory, or delete its ppo/CartPole-v1/checkpoint*.pt "
                                "to start anew here")
    cfg.runner.name = "pbt"  # (a runner --resume does not continue: not offered)
    (kept / "checkpoint.pt").write_bytes(b"")
    assert find_checkpoint(str(tmp_path), "online") == str(kept / "checkpoint.pt")
    # two experiments' (a PBT run's members): every one named, and a resume refused
    OmegaConf.save(cfg, tmp_path / ".hydra" / "config.yaml")
    other = tmp_path / "member_1"
    other.mkdir()
    (other / "checkpoint.pt").write_bytes(b"")
    with pytest.raises(ValueError) as error:
        check_run_dir([f"hydra.run.dir={tmp_path}"])
    assert str(error.value) == (f"{refusal}member_1/checkpoint.pt, ppo/CartPole-v1/checkpoint*.pt "
                                "to start anew here")
    with pytest.raises(ValueError, match="2 checkpoints in .*; resume one experiment at a time"):
        find_checkpoint(str(tmp_path), "online")
    for path in [*kept.glob("checkpoint*.pt"), other / "checkpoint.pt"]:  # (deleted: a new run
        path.unlink()  # is let in; a resume finds none)
    check_run_dir([f"hydra.run.dir={tmp_path}"])
    with pytest.raises(FileNotFoundError, match="No checkpoint in"):
        find_checkpoint(str(tmp_path), "online")
    assert not _resumable(cfg, str(tmp_path))


def test_a_run_directory_whose_name_hydra_must_have_quoted_is_checked_and_resumed(
        tmp_path: Path, capsys) -> None:
    """``--resume 'my run=1, é'`` was Hydra's "LexerNoViableAltException" (the directory went
    unquoted into hydra.run.dir=), and a quoted ``hydra.run.dir='...'`` was checked as the
    directory named with its quotes: a finished run there was replaced."""
    run_dir = tmp_path / "my run=1, é"
    run([*SMALL, "checkpoint_every=192", f"hydra.run.dir='{run_dir}'"])
    assert cli(["run", *SMALL, f"hydra.run.dir='{run_dir}'"]) == 2
    assert "holds a finished run (results.json)" in capsys.readouterr().err
    assert cli(["run", "--resume", str(run_dir), "frames=512"]) == 0
    assert json.loads((run_dir / "results.json").read_text())["train"]["step"] >= 512
    assert sorted(p.name for p in tmp_path.iterdir()) == [run_dir.name]


def test_a_tilde_in_the_run_directory_is_the_home_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the shell (after ``=``) nor Hydra expands it: the run went to ``./~/runs/x``."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    run([*SMALL, "hydra.run.dir=~/runs/x"])
    assert (tmp_path / "home" / "runs" / "x" / "results.json").is_file()
    assert not (tmp_path / "~").exists()


def _tensorboard_steps(log_dir: Path, counter: str) -> list[int]:
    """The steps of every ``.../returns/<counter>`` scalar in the event files of ``log_dir``."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    return sorted(event.step for path in log_dir.glob("events.out.tfevents.*")
                  for event in EventFileLoader(str(path)).Load()
                  for value in event.summary.value if value.tag.endswith(f"returns/{counter}"))


def test_resume_with_multirun_is_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    """``looprl run -m --resume SWEEP_DIR/0`` ran a new job in multirun/DATE/TIME/0 with
    resume=true, which found no checkpoint there (an empty sweep left behind)."""
    monkeypatch.chdir(tmp_path)
    assert cli(["run", "-m", "--resume", str(tmp_path / "sweep" / "0"), "frames=512"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--resume continues one run, not a multirun: drop -m" in error[0]
    assert list(tmp_path.iterdir()) == []


def test_wandb_logging_in_offline_mode(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run([*SMALL, "logging.wandb={mode: offline, project: looprl-test}",
         f"hydra.run.dir={tmp_path}"])
    (offline,) = (tmp_path / "ppo" / "CartPole-v1" / "wandb").glob("offline-run-*")
    (events,) = offline.glob("run-*.wandb")
    assert events.stat().st_size > 0  # the run's metrics, ready for `wandb sync`


def test_resuming_a_ray_run_looks_for_the_controller_checkpoint(tmp_path: Path, capsys) -> None:
    """``looprl run --resume`` of a ``runtime=ray`` run continues its controller checkpoint
    (tested on Ray in tests/distributed); a directory without one is a one-line error."""
    from omegaconf import OmegaConf

    saved = tmp_path / ".hydra"
    saved.mkdir()
    OmegaConf.save(_compose(["runtime=ray"]), saved / "config.yaml")
    OmegaConf.save(OmegaConf.create(["runtime=ray"]), saved / "overrides.yaml")
    assert cli(["run", "--resume", str(tmp_path)]) == 2
    assert "No distributed run to resume in" in capsys.readouterr().err


@pytest.mark.parametrize("runner", ["pbt", "es"])
def test_resuming_a_search_on_ray_says_it_cannot(tmp_path: Path, capsys, runner: str) -> None:
    """A PBT (or ES) run with ``runtime=ray`` resumes no more than a local one: the line says
    so, not that a distributed run's controller checkpoint is missing (nor, as it did, that
    a search resumes from Optuna's storage)."""
    from omegaconf import OmegaConf

    saved = tmp_path / ".hydra"
    saved.mkdir()
    overrides = [f"runner={runner}", "runtime=ray"]
    OmegaConf.save(_compose(overrides), saved / "config.yaml")
    OmegaConf.save(OmegaConf.create(overrides), saved / "overrides.yaml")
    assert cli(["run", "--resume", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert error == [f"looprl: error: resume continues runner=online runs; runner={runner} "
                     "cannot: run the search again"]


def test_the_trainer_on_ray_learns_on_the_threads_a_local_run_learns_on(tmp_path: Path,
                                                                        monkeypatch) -> None:
    """``threads`` (null: the preset's default) is the learner's on both runtimes. (Was: on
    Ray the trainer ran ``runtime.torch_threads``, 1, where a local Atari run learned on torch's
    default threads: atari/a2c's losses and final parameters differed in their last digits.)"""
    pytest.importorskip("ray")
    from looprl.configs import build_distributed

    def trainer_threads(*overrides: str) -> int:
        return build_distributed(_compose(["runtime=ray", *overrides]), str(tmp_path)
                                 ).runtime.trainer_threads

    monkeypatch.setattr(torch, "get_num_threads", lambda: 3)  # (torch's default here)
    assert trainer_threads("algorithm=atari/a2c", "env=Pong") == 3
    assert trainer_threads("algorithm=atari/a2c", "env=Pong", "threads=2") == 2
    assert trainer_threads() == 1  # (the classic presets: 1, as locally)
    assert trainer_threads("threads=2") == trainer_threads("runtime.torch_threads=2") == 2
    assert trainer_threads("threads=4", "runtime.trainer_threads=1") == 1


def test_device_with_runtime_ray_puts_the_trainer_on_a_gpu(tmp_path: Path, monkeypatch,
                                                           capsys) -> None:
    """(Was: one line, 'device=cuda does not apply to runtime=ray'.) ``device=cuda`` reserves
    the trainer a GPU; ``device=null`` does where this machine has one and Ray starts here, as a
    local run computes on CUDA if available; a device Ray cannot give is one line. With no GPU
    (torch's count, patched to none on a GPU machine), ``device=cuda`` is the local instance's
    one line before anything runs."""
    pytest.importorskip("ray")
    import torch

    from looprl.configs import build_distributed

    def trainer_gpus(*overrides: str) -> float:
        return build_distributed(_compose(["runtime=ray", *overrides]), str(tmp_path)
                                 ).runtime.gpus_per_trainer

    assert trainer_gpus("device=cuda") == trainer_gpus("device=cuda:0") == 1
    assert trainer_gpus("device=cuda", "runtime.gpus_per_trainer=0.5") == 0.5
    without_gpus(monkeypatch)
    assert trainer_gpus("device=cpu") == trainer_gpus() == 0
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert trainer_gpus() == 1 and trainer_gpus("runtime.address=10.0.0.1:6379") == 0
    assert trainer_gpus("runtime.address=local") == 1  # (starts here too; was: the CPU)
    assert trainer_gpus("runtime.trainers=2", "runtime.actors=2") == 0  # (one GPU for two)
    assert trainer_gpus("device=cpu") == 0
    with pytest.raises(ValueError, match=r"^device=cuda:1: on Ray each worker computes on the "
                                         r"GPU Ray gives it; device=cuda puts the trainer on one"):
        trainer_gpus("device=cuda:1")
    without_gpus(monkeypatch)
    assert cli(["run", "runtime=ray", "device=cuda", "frames=100", "logging.quiet=true",
                f"hydra.run.dir={tmp_path / 'run'}"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "looprl: error: the run reserves 1 GPUs and the local Ray instance has 0: lower "
        "runtime.gpus_per_trainer and runtime.gpus_per_policy, or join a cluster that has them "
        "(runtime.address=...)"]


def test_the_online_runners_options_hold_with_runtime_ray(tmp_path: Path) -> None:
    """``runner.num_steps`` (a runtime=local run's budget) and ``runner.eval_every`` were
    silently ignored on Ray: ``runner.num_steps=64 frames=2000`` trained 2000 frames
    (``runner.eval_every`` on Ray: ``tests/distributed/test_ray_logs.py``)."""
    pytest.importorskip("ray")
    from looprl.configs import build_distributed

    run = build_distributed(_compose(["runtime=ray", "frames=2000", "runner.num_steps=64"]),
                            str(tmp_path))
    assert run.frames == 64
    assert build_distributed(_compose(["runtime=ray", "frames=2000"]), str(tmp_path)).frames == 2000
    assert build_distributed(_compose(["runtime=ray", "runner.eval_every=32"]), str(tmp_path))
    with pytest.raises(ValueError, match="runner.eval_every must be positive"):
        build_distributed(_compose(["runtime=ray", "runner.eval_every=0"]), str(tmp_path))
    with pytest.raises(ValueError, match="it needs test_episodes >= 1, got 0$"):
        build_distributed(_compose(["runtime=ray", "runner.eval_every=32", "test_episodes=0"]),
                          str(tmp_path))
    with pytest.raises(ValueError, match="runner.num_steps must be positive"):
        build_distributed(_compose(["runtime=ray", "runner.num_steps=0"]), str(tmp_path))


@pytest.mark.parametrize("runtime", ["local", "ray"])
def test_the_online_runners_counts_are_named_by_their_keys_on_both_runtimes(
        tmp_path: Path, runtime: str, caplog) -> None:
    """(Were: "eval_every must be ..." locally, the Python argument's name, and
    "runner.eval_every must be ..." on Ray; an eval_every past the budget passed silently.)"""
    import logging

    from looprl.configs import build_distributed
    if runtime == "ray":
        pytest.importorskip("ray")
    make = build_distributed if runtime == "ray" else build
    with pytest.raises(ValueError, match=r"^runner.eval_every must be positive .*got 0$"):
        make(_compose([f"runtime={runtime}", "runner.eval_every=0"]), str(tmp_path))
    with pytest.raises(ValueError, match=r"^runner.num_steps must be positive .*got 0$"):
        make(_compose([f"runtime={runtime}", "runner.num_steps=0"]), str(tmp_path))
    with caplog.at_level(logging.WARNING, "looprl.configs"):
        make(_compose([f"runtime={runtime}", "frames=64", "runner.eval_every=100"]),
             str(tmp_path))
    assert [r.getMessage() for r in caplog.records if r.name == "looprl.configs"] == [
        "runner.eval_every=100 is more than the run's 64 frames: it evaluates once, at its end"]


def test_a_contextual_env_with_plr_builds_for_runtime_ray(tmp_path: Path) -> None:
    """``context.train=N context.ranges...`` makes a contextual environment; on Ray the
    actors make it by name with the same instance set, and PLR is accepted."""
    from looprl.configs import build_distributed

    env = ["context.train=4", "++context.ranges.length=[0.3,0.9]", "context.seed=1"]
    run = build_distributed(_compose(["runtime=ray", "meta=[plr]", *env]), str(tmp_path))
    assert [type(c).__name__ for c in run.spec.meta] == ["PLR"]
    assert run.spec.env == "contextual" and run.spec.env_label == "CartPole-v1"
    lengths = [c["length"] for c in run.spec.env_args["contexts"].values()]
    assert len(lengths) == 4 and all(0.3 <= x <= 0.9 for x in lengths)
    served = build_distributed(_compose(["runtime=ray", "meta=[plr]", *env,
                                         "runtime.policy_workers=1"]), str(tmp_path))
    assert served.runtime.policy_workers == 1  # (was: one line; the actors' hooks run beside
    # a policy copy that never acts: tests/distributed/test_meta_on_ray.py)
    with pytest.raises(ValueError, match=r"^env is an id or an import path, got \{'id'"):
        build_distributed(_compose(["runtime=ray", "env={id: CartPole-v1, levels: 4}"]),
                          str(tmp_path))


def test_env_kwargs_and_env_wrappers_make_the_environment_on_both_runtimes(tmp_path: Path) -> None:
    """Mighty's ``env_kwargs`` and ``env_wrappers``: ``FrozenLake-v1`` (``Discrete``
    observations, which the presets refused with no way around from the command line) one-hot
    by ``FlattenObservation``, not slippery; Ray's actors make their copies alike."""
    import gymnasium as gym

    from looprl.configs import build_distributed, make_envs

    overrides = ["algorithm=dqn", "env=FrozenLake-v1", "+env_kwargs.is_slippery=false",
                 "env_wrappers=[gymnasium.wrappers.FlattenObservation]"]
    env, _ = make_envs("dqn", _compose(overrides))
    assert env.observation_space == gym.spaces.Box(0, 1, (16,), np.int64)
    assert env.env.spec.kwargs["is_slippery"] is False
    assert cli(["run", *overrides, "frames=300", "test_episodes=1", *QUIET,
                f"hydra.run.dir={tmp_path}"]) == 0
    spec = build_distributed(_compose([*overrides, "runtime=ray"]), str(tmp_path)).spec
    assert spec.env_args["is_slippery"] is False
    srl, local = spec.make_env(), spec.copies(1)  # (SRL copies, the collector's local ones)
    assert srl.reset()[0].obs["obs"].shape == (16,) and "Flatten" in repr(srl.env)
    assert local.observation_space.shape == (16,) and local.reset().observation.shape == (1, 16)
    srl.close()
    local.close()


def test_env_kwargs_takes_a_key_or_the_whole_dict_without_a_plus(capsys) -> None:
    """``env_kwargs={is_slippery:false}`` (docs/coming-from-mighty.md) and
    ``env_kwargs.is_slippery=false`` were Hydra's "Key 'is_slippery' is not in struct"."""
    for given in ("env_kwargs={is_slippery:false}", "env_kwargs.is_slippery=false"):
        assert cli(["run", "env=FrozenLake-v1", given, "--cfg", "job"]) == 0
        assert "env_kwargs:\n  is_slippery: false" in capsys.readouterr().out


@pytest.mark.parametrize(("overrides", "message"), [
    (["env_wrappers=[gymnasium.wrappers.NoSuchWrapper]"],
     "env wrapper 'gymnasium.wrappers.NoSuchWrapper': module 'gymnasium.wrappers' has no "
     "attribute 'NoSuchWrapper'"),
    (["env_wrappers=gymnasium.wrappers.FlattenObservation"], "env_wrappers is a list of import "
                                                             "paths"),
    (["env_wrappers=[gymnasium.wrappers.FrameStackObservation]"],  # (was Python's "__init__()
     "env wrapper 'gymnasium.wrappers.FrameStackObservation' needs the arguments stack_size, "
     "which env_wrappers cannot give"),  # missing 1 required positional argument": no remedy)
    (["+env_kwargs.is_slipery=false", "env=FrozenLake-v1"], "is_slipery"),
    (["algorithm=atari/dqn", "env=Pong", "env_wrappers=[gymnasium.wrappers.FlattenObservation]"],
     "env_wrappers apply to Gymnasium environments (and env_kwargs to an Atari game's options "
     "and an SRL environment's arguments); Pong is an Atari game: leave env_wrappers empty"),
    (["env_kwargs=5"], "env_kwargs maps the environment's arguments to their values "
                       "(env_kwargs.is_slippery=false), got 5"),  # (was "'int' object is not
    # iterable")
    (["context.train=2", "+env_kwargs.x=1"], "CartPole-v1 is a contextual environment "
                                              "(context.train): leave env_kwargs empty"),
])
def test_bad_env_kwargs_and_wrappers_are_one_line(overrides, message, capsys, tmp_path) -> None:
    assert cli(["run", *overrides, "frames=64", *QUIET, f"hydra.run.dir={tmp_path}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0], error


def test_a_looprl_run_with_a_normalizer_is_watched_with_its_training_statistics(
        tmp_path: Path, monkeypatch) -> None:
    """``looprl run env_wrappers=[gymnasium.wrappers.NormalizeObservation]`` saves the
    training statistics beside its ``preset.pt``; ``looprl watch`` loads them, frozen (were:
    they started anew)."""
    from looprl.environments.wrappers import read_normalization
    from looprl.experiments import watch

    assert cli(["run", "env_wrappers=[gymnasium.wrappers.NormalizeObservation]", "frames=300",
                "device=cpu", "test_episodes=1", "runner.eval_every=100", *QUIET,
                f"hydra.run.dir={tmp_path}"]) == 0
    saved = torch.load(tmp_path / "normalization.pt", weights_only=False)
    trained = saved[1]["normalizers"][0]["obs_rms"]
    watched = []
    monkeypatch.setattr(watch, "watch", lambda agent, env, *args, **kwargs: (
        watched.append(env) or ([0.0], None)))
    assert cli(["watch", str(tmp_path), "--episodes", "1", "--gif",
                str(tmp_path / "w.gif")]) == 0
    loaded = read_normalization(watched[0])[1]["normalizers"][0]["obs_rms"]
    assert trained["count"] > 10 and loaded["count"] == trained["count"]
    assert np.array_equal(loaded["mean"], trained["mean"])
    # --best plays best_preset.pt with the statistics it was evaluated with (were: the last)
    best = torch.load(tmp_path / "best_normalization.pt", weights_only=False)
    assert cli(["watch", str(tmp_path), "--best", "--episodes", "1", "--gif",
                str(tmp_path / "w.gif")]) == 0
    loaded = read_normalization(watched[1])[1]["normalizers"][0]["obs_rms"]
    assert loaded["count"] == best[1]["normalizers"][0]["obs_rms"]["count"] < trained["count"]
    # the file given names its statistics (was: --best's, whichever file was given)
    assert cli(["watch", str(tmp_path / "best_preset.pt"), "--episodes", "1", "--gif",
                str(tmp_path / "w.gif")]) == 0
    assert read_normalization(watched[2])[1]["normalizers"][0]["obs_rms"]["count"] == (
        best[1]["normalizers"][0]["obs_rms"]["count"])


def test_ctrl_c_of_a_local_run_keeps_the_preset_as_trained_so_far(
        tmp_path: Path, monkeypatch, capsys) -> None:
    """As ``looprl train``'s (was: the logs and checkpoint only, no ``preset.pt`` to watch)."""
    from looprl.experiments import ParallelEnvExperiment

    train = ParallelEnvExperiment._train

    def interrupted(self, frames, episodes):  # the user presses Ctrl-C after 128 frames
        train(self, 128, episodes)
        raise KeyboardInterrupt

    monkeypatch.setattr(ParallelEnvExperiment, "_train", interrupted)
    assert cli(["run", *SMALL, f"hydra.run.dir={tmp_path}"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert (tmp_path / "preset.pt").is_file() and not (tmp_path / "results.json").exists()
    assert cli(["watch", str(tmp_path), "--max-steps", "5", "--gif",
                str(tmp_path / "watch.gif")]) == 0


def test_a_runs_warnings_are_said_once_with_those_of_its_configs_check(tmp_path: Path,
                                                                       caplog) -> None:
    """``looprl run`` builds the preset once to check the config, then the runner builds its
    own: one run (was: each of the preset's warnings twice)."""
    import logging

    with caplog.at_level(logging.WARNING, "looprl"):
        run(["frames=64", "test_episodes=1", "algorithm.n_envs=2", "algorithm.n_steps=16",
             *QUIET, f"hydra.run.dir={tmp_path}"])
    assert caplog.text.count("minibatch_size=256 is larger than") == 1, caplog.text
