"""A user's config directory: ``looprl run -cd DIR +experiment=NAME`` runs an experiment file
(``# @package _global_``, as Hydra users write them), ``-cn NAME`` a config of one's own;
``keep_checkpoints`` keeps numbered checkpoints. Bad names are one-line errors."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

pytest.importorskip("hydra")

from looprl.cli import main as cli  # noqa: E402
from looprl.configs.app import main as run  # noqa: E402
from looprl.configs.app import resume_arguments  # noqa: E402
from looprl.experiments.checkpoint import load_checkpoint, numbered_checkpoints  # noqa: E402

QUIET = ["logging.quiet=true", "hydra/job_logging=none", "hydra/hydra_logging=none"]
EXPERIMENT = """# @package _global_
defaults:
  - override /algorithm: dqn
env: Acrobot-v1
frames: 96
seed: 5
test_episodes: 0
checkpoint_every: 32
keep_checkpoints: 2
algorithm:
  lr: 0.0123
  hidden: 8
  replay_start_size: 32
  minibatch_size: 16
"""
OWN_CONFIG = """defaults:
  - looprl
  - override algorithm: dqn
  - _self_
frames: 64
test_episodes: 0
algorithm:
  hidden: 8
  replay_start_size: 32
"""


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    """``my_configs/experiment/acrobot_dqn.yaml`` and ``my_configs/my_run.yaml``."""
    directory = tmp_path / "my_configs"
    (directory / "experiment").mkdir(parents=True)
    (directory / "experiment" / "acrobot_dqn.yaml").write_text(EXPERIMENT)
    (directory / "experiment" / "typo.yaml").write_text("# @package _global_\nframe: 64\n")
    (directory / "experiment" / "mighty.yaml").write_text(  # (Mighty's algorithm/ppo.yaml)
        "# @package _global_\nalgorithm: PPO\nalgorithm_kwargs: {learning_rate: 0.001}\n")
    (directory / "experiment" / "meta_list.yaml").write_text("# @package _global_\nmeta: [rnd]\n")
    (directory / "experiment" / "commented.yaml").write_text(  # (the header read too late)
        "# my_configs/experiment/commented.yaml\n" + EXPERIMENT)
    (directory / "my_run.yaml").write_text(OWN_CONFIG)
    (directory / "bare_run.yaml").write_text("env: Acrobot-v1\nframes: 64\n")  # (no - looprl)
    (directory / "experiment" / "headless.yaml").write_text(EXPERIMENT.partition("\n")[2])
    for name, line in (("mighty_sac", "algorithm: SAC"), ("mighty_runner", "runner: standard"),
                       ("mighty_env", "environment: pendulum"), ("algo", "algo: dqn")):
        (directory / "experiment" / f"{name}.yaml").write_text(
            f"# @package _global_\ndefaults:\n  - override /{line}\nframes: 64\n")
    (directory / "algorithm").mkdir()  # (algorithm configs without a preset's name)
    (directory / "algorithm" / "nameless.yaml").write_text("lr: 0.1\n")
    (directory / "algorithm" / "numbered.yaml").write_text("preset: 12\nlr: 0.1\n")
    return directory


def test_an_experiment_file_sets_the_algorithm_env_and_budget(config_dir, tmp_path) -> None:
    out = tmp_path / "run"
    run(["-cd", str(config_dir), "+experiment=acrobot_dqn", *QUIET, f"hydra.run.dir={out}"])
    (run_dir,) = (out / "dqn").iterdir()
    assert run_dir.name == "Acrobot-v1"
    described = json.loads((run_dir / "run.json").read_text())
    assert described["hyperparameters"]["lr"] == 0.0123 and described["seed"] == 5
    assert described["hyperparameters"]["hidden"] == 8
    assert "frames: 96" in (out / ".hydra" / "config.yaml").read_text()
    assert json.loads((out / "results.json").read_text())["train"]["step"] >= 96
    first, last = numbered_checkpoints(run_dir)  # keep_checkpoints: 2 of 3
    assert 64 <= first < last and load_checkpoint(run_dir / f"checkpoint_{first}.pt").frame == first
    assert load_checkpoint(run_dir / "checkpoint.pt").frame == last
    # a resume (of the finished run, to a larger budget) composes from the same directory:
    # its experiment file is found again
    again = resume_arguments(["--resume", str(out), "frames=200"])
    assert f"--config-dir={config_dir}" in again and "+experiment=acrobot_dqn" in again
    assert "keep_checkpoints=1" in resume_arguments(["--resume", str(out), "frames=200",
                                                     "keep_checkpoints=1"])
    with pytest.raises(ValueError, match=r"another config \(seed: 5 -> 6\)"):
        resume_arguments(["--resume", str(out), "seed=6"])
    # checkpoint.pt deleted (to go back to a kept one): --resume goes on from the latest kept
    # (was "No checkpoint in ...: nothing to resume")
    (run_dir / "checkpoint.pt").unlink()
    run(["--resume", str(out), "frames=128"])
    assert load_checkpoint(run_dir / "checkpoint.pt").frame >= 128 > last


def test_a_config_of_ones_own_starts_from_looprls(config_dir, tmp_path) -> None:
    out = tmp_path / "run"
    run(["-cd", str(config_dir), "-cn", "my_run", "algorithm.lr=0.002", *QUIET,
         f"hydra.run.dir={out}"])
    described = json.loads((out / "dqn" / "CartPole-v1" / "run.json").read_text())
    assert described["hyperparameters"]["lr"] == 0.002
    assert described["hyperparameters"]["replay_start_size"] == 32
    assert json.loads((out / "results.json").read_text())["train"]["step"] == 64


def test_an_algorithm_file_of_ones_own_runs_without_hydras_warning(config_dir, tmp_path
                                                                   ) -> None:
    # (checked against looprl's algorithm/dqn: Hydra warned twice, at every run, before)
    (config_dir / "algorithm" / "dqn.yaml").write_text(
        "preset: classic_control.dqn\nlr: 0.0042\nhidden: 8\nreplay_start_size: 32\n")
    out = tmp_path / "run"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cli(["run", "-cd", str(config_dir), "algorithm=dqn", "frames=64",
                    "test_episodes=0", *QUIET, f"hydra.run.dir={out}"]) == 0
    assert not [w for w in caught if "ConfigStore schema" in str(w.message)]
    described = json.loads((out / "dqn" / "CartPole-v1" / "run.json").read_text())
    assert described["hyperparameters"]["lr"] == 0.0042


def test_a_meta_file_of_ones_own_is_one_components_arguments(config_dir, tmp_path, capsys
                                                              ) -> None:
    """``meta/NAME.yaml`` under ``# @package meta.NAME`` attaches that component; without the
    header its keys land in ``meta`` itself: one line that names the header (was:
    ``AttributeError: 'str' object has no attribute 'items'``)."""
    (config_dir / "meta").mkdir()
    body = "_target_: looprl.meta.RND\nlr: 2.0e-4\n"
    (config_dir / "meta" / "my_rnd.yaml").write_text("# @package meta.my_rnd\n" + body)
    (config_dir / "meta" / "bare.yaml").write_text(body)
    out = tmp_path / "run"
    assert cli(["run", "-cd", str(config_dir), "meta=[my_rnd]", "frames=64", "test_episodes=0",
                *QUIET, f"hydra.run.dir={out}"]) == 0
    described = json.loads((out / "ppo" / "CartPole-v1" / "run.json").read_text())
    assert described["meta"] == ["RND(internal_reward_weight=0.1, normalize=False, "
                                 "network='auto', lr=0.0002)"]
    capsys.readouterr()
    assert cli(["run", "-cd", str(config_dir), "meta=[bare]", "frames=64", *QUIET,
                f"hydra.run.dir={tmp_path / 'bare'}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "needs '# @package meta.NAME' as its first line" in error[0]


@pytest.mark.parametrize("arguments, message", [
    # (was OmegaConf's "Key 'preset' is not in struct", "'int' object is not iterable")
    (["algorithm=nameless", *QUIET], "algorithm.preset is none: an algorithm config names the "
                                     "preset it sets (preset: classic_control.dqn"),
    (["algorithm=numbered", *QUIET], "algorithm.preset is 12: an algorithm config names"),
    (["meta=[rnd]", "meta.rnd=5"], "meta.rnd holds the arguments of rnd: set one with "
                                   "meta.rnd.ARG=VALUE (Valid ARG: internal_reward_weight,"),
    (["+experiment=acrobot_dq"], "Unknown experiment 'acrobot_dq'. Did you mean 'acrobot_dqn'?"),
    (["experiment=acrobot_dqn"], "add it with +experiment=acrobot_dqn"),
    (["-cn", "my_rn"], "--config-name 'my_rn': no my_rn.yaml in"),
    # (was OmegaConf's "Key 'resume' is not in struct")
    (["-cn", "bare_run"], "The composed config lacks looprl's env_kwargs, env_wrappers,"
                                  " context, seed, ...: a config of your own (-cn) extends "
                                  "looprl's, with '- looprl' first in its defaults list"),
    # Mighty's names in an experiment file's defaults list (was Hydra's "In 'looprl': Could not
    # find 'runner/standard' ... Config search path: ...", the command line's hint left out)
    (["+experiment=mighty_sac", *QUIET], "Unknown algorithm 'SAC' (a defaults list's '- "
                                         "override /algorithm: SAC'). Did you mean "
                                         "'continuous/sac'? Valid: a2c,"),
    (["+experiment=mighty_runner", *QUIET], "Unknown runner 'standard' (a defaults list's '- "
                                            "override /runner: standard'). Did you mean "
                                            "'online'?"),
    (["+experiment=mighty_env", *QUIET], "looprl has no config group 'environment' (a defaults"
                                         " list's '- override /environment: ...'): looprl's "
                                         "way for Mighty's 'environment': env=ID"),
    (["+experiment=algo", *QUIET], "its groups: algorithm, meta, runner, runtime. Did you "
                                   "mean 'algorithm'?"),
    # (was Hydra's "Could not override 'algorithm@experiment.algorithm'", or an unknown key
    # 'experiment' for a file without a defaults list)
    (["+experiment=headless", *QUIET], "headless.yaml needs '# @package _global_' as its first "
                                       "line: without it, Hydra puts its keys under "
                                       "'experiment:'"),
    (["+experiment=typo", *QUIET], "Unknown config key 'frame' in the composed config"),
    # a group set to a plain value (was: "dictionary update sequence element #0 ...",
    # AttributeError tracebacks for meta: [rnd] and runtime: ray)
    (["+experiment=mighty", *QUIET], "algorithm: 'PPO' in the composed config (set by an "
                                     "experiment or a config file, as Mighty's"),
    (["+experiment=meta_list", *QUIET], "meta: ['rnd'] in the composed config"),
    # (was Hydra's "Could not override 'algorithm@experiment.algorithm'")
    (["+experiment=commented", *QUIET], "Hydra reads its '# @package _global_' line only "
                                        "above every other line"),
    (["+experiment=acrobot_dqn", "keep_checkpoints=0", *QUIET],
     "keep_checkpoints must be positive"),
    # (was: trained runner.iterations generations, the file's frames silently left unread)
    (["+experiment=acrobot_dqn", "runner=es", *QUIET], "frames does not apply to runner=es"),
    (["keep_checkpoints=2", *QUIET], "keep_checkpoints=2 keeps the checkpoints checkpoint_every"),
    (["runtime=ray", "keep_checkpoints=2", *QUIET],  # (checked on Ray as locally)
     "keep_checkpoints=2 keeps the checkpoints checkpoint_every"),
])
def test_bad_names_in_a_config_directory_fail_in_one_line(arguments, message, config_dir,
                                                          tmp_path, capsys) -> None:
    assert cli(["run", "-cd", str(config_dir), *arguments,
                f"hydra.run.dir={tmp_path / 'run'}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0], error


def test_a_missing_config_directory_fails_in_one_line(tmp_path, capsys) -> None:
    assert cli(["run", "-cd", str(tmp_path / "nope"), "+experiment=x"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "is no directory" in error[0], error


def test_looprl_run_help_says_how_to_load_experiment_files(capsys) -> None:
    with pytest.raises(SystemExit):  # (as Hydra's help ends)
        run(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "-cd DIR +experiment=NAME (DIR/experiment/NAME.yaml" in text
    assert "'# @package _global_'" in text and "-cn NAME composes DIR/NAME.yaml" in text
