"""ALL 0.9's experiment API as an ALL user calls it: ``logger="tensorboard"`` (ALL's
default; ``"comet"``) and ``Experiment.save()``, which ALL's ``run_experiment`` calls."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from looprl.core import DummyLogger
from looprl.environments import GymEnvironment
from looprl.experiments import SingleEnvExperiment, run_experiment
from looprl.presets import load_preset
from looprl.presets.classic_control import dqn


def _preset(env: GymEnvironment):
    return dqn.hyperparameters(replay_start_size=50, hidden=8).env(env).device("cpu").build()


def test_alls_logger_names_tensorboard_is_the_default_and_comet_one_line(tmp_path) -> None:
    """The string was used as the logger ('str' object has no attribute 'frame' once
    training began); ``run_experiment`` refused the keyword."""
    env = GymEnvironment("CartPole-v1")
    experiment = SingleEnvExperiment(_preset(env), env, logdir=str(tmp_path), quiet=True,
                                     logger="tensorboard")
    experiment.train(frames=20)
    assert experiment.frame == 20 and (tmp_path / "dqn").is_dir()
    experiment.close()
    results = run_experiment(dqn.device("cpu"), env, 20, logdir=str(tmp_path), quiet=True,
                             test_episodes=1, logger="tensorboard")
    assert results[0].frames >= 20
    with pytest.raises(ValueError, match="'comet' is not ported"):
        SingleEnvExperiment(_preset(env), env, logdir=str(tmp_path), logger="comet")
    with pytest.raises(ValueError, match="'comet' is not ported"):
        run_experiment(dqn.device("cpu"), env, 20, logdir=str(tmp_path), logger="comet")
    with pytest.raises(TypeError, match="pass a logger object to an Experiment"):
        run_experiment(dqn.device("cpu"), env, 20, logdir=str(tmp_path), logger=DummyLogger())


def test_experiment_save_and_run_experiment_write_the_preset(tmp_path) -> None:
    """ALL's ``Experiment.save()`` writes ``{log_dir}/preset.pt``; its ``run_experiment``
    saves the trained preset there, which ``looprl watch RUN_DIR`` reads."""
    env = GymEnvironment("CartPole-v1")
    experiment = SingleEnvExperiment(_preset(env), env, logdir=str(tmp_path), quiet=True)
    experiment.train(frames=20)
    path = Path(experiment.save())
    assert path == Path(experiment.logger.log_dir) / "preset.pt"
    assert load_preset(str(path)).name == "dqn"
    experiment.close()
    quiet = SingleEnvExperiment(_preset(env), env, logger=DummyLogger(), quiet=True)
    assert quiet.save() is None  # no run directory: nothing written
    results = run_experiment(dqn.device("cpu"), env, 20, logdir=str(tmp_path / "runs"),
                             quiet=True, test_episodes=1)
    saved = Path(results[0].log_dir) / "preset.pt"
    assert saved.is_file() and load_preset(str(saved)).name == "dqn"


def test_save_freq_and_alls_positional_order(tmp_path) -> None:
    """ALL's ``save_freq`` (``preset.pt`` every that many episodes) in ALL's positions:
    ``run_experiment(agents, envs, frames, logdir, quiet, render, save_freq, test_episodes)``,
    ``SingleEnvExperiment(preset, env, name, train_steps, logdir, quiet, render, save_freq)``
    and ``MultiagentEnvExperiment(preset, env, logdir, name, ...)`` (was: ``save_freq`` a
    ``TypeError``, ALL's positional ``logdir`` the run's name)."""
    pytest.importorskip("pettingzoo")
    from looprl.environments import MultiagentPettingZooEnv
    from looprl.experiments import MultiagentEnvExperiment
    from looprl.presets.multiagent import dqn as multiagent_dqn

    env = GymEnvironment("CartPole-v1")
    experiment = SingleEnvExperiment(_preset(env), env, "mine", 200, str(tmp_path), True, False,
                                     3)
    experiment.train(episodes=2)
    assert not (tmp_path / "mine" / "CartPole-v1" / "preset.pt").exists()
    experiment.train(episodes=3)
    assert (tmp_path / "mine" / "CartPole-v1" / "preset.pt").is_file()  # (at episode 3)
    experiment.close()
    (result,) = run_experiment(dqn.device("cpu"), env, 30, str(tmp_path / "all"), True, False,
                               100, 2)
    assert len(result.test_returns) == 2
    with pytest.raises(ValueError, match="save_freq must be positive"):
        SingleEnvExperiment(_preset(env), env, logdir=str(tmp_path), save_freq=0)
    game = MultiagentPettingZooEnv("tictactoe_v3")
    preset = multiagent_dqn.hyperparameters(replay_start_size=50).env(game).device("cpu").build()
    experiment = MultiagentEnvExperiment(preset, game, str(tmp_path / "zoo"), quiet=True)
    assert experiment.name == preset.name and (tmp_path / "zoo").is_dir()
    experiment.close()


def test_a_preset_in_an_environment_of_other_spaces_is_one_line(tmp_path) -> None:
    """A preset built for one environment, run or tested in one of other spaces, was torch's
    'mat1 and mat2 shapes cannot be multiplied' (a continuous PPO's training, any test)."""
    from looprl.experiments import ParallelEnvExperiment
    from looprl.presets.continuous import ppo

    pendulum, cartpole = GymEnvironment("Pendulum-v1"), GymEnvironment("CartPole-v1")
    preset = ppo.hyperparameters(n_envs=2, n_steps=8, minibatch_size=8, hidden=8).env(
        pendulum).device("cpu").build()
    match = r"built for Pendulum-v1 .*Box\(3,\), Box\(1,\)\), CartPole-v1 has Box\(4,\)"
    with pytest.raises(ValueError, match=match):
        run_experiment(preset, cartpole, 20, logdir=str(tmp_path), quiet=True, test_episodes=1)
    experiment = ParallelEnvExperiment(preset, pendulum, logdir=str(tmp_path), quiet=True)
    with pytest.raises(ValueError, match=match):
        experiment.test(episodes=1, env=cartpole)
    experiment.close()
    env = GymEnvironment("CartPole-v1")
    experiment = SingleEnvExperiment(_preset(env), env, logdir=str(tmp_path), quiet=True)
    with pytest.raises(ValueError, match="Box\\(4,\\), Discrete\\(2\\)\\), Pendulum-v1 has"):
        experiment.test(episodes=1, env=pendulum)
    experiment.close()


def test_a_single_env_preset_in_a_parallel_experiment_is_one_line(tmp_path) -> None:
    """DQN's (single-environment) preset in a ``ParallelEnvExperiment`` was "has no attribute
    'n_envs'" (an ``Environment``), or trained then failed at ``test`` ("no attribute
    'parallel_test_agent'", a ``VectorEnvironment``)."""
    from looprl.environments import GymVectorEnvironment
    from looprl.experiments import ParallelEnvExperiment

    env = GymEnvironment("CartPole-v1")
    for given in (env, GymVectorEnvironment("CartPole-v1", 2)):
        with pytest.raises(TypeError, match="got the single-environment DQN.*SingleEnvExp"):
            ParallelEnvExperiment(_preset(env), given, logdir=str(tmp_path), quiet=True)


def test_alls_script_options_given_as_text_say_so(tmp_path) -> None:
    """ALL's scripts pass ``--save_freq`` and ``--fps`` as argparse gives them, text: one line
    that says to convert it (was: "fps must be positive, got '30'", which it is)."""
    from looprl.experiments import watch

    env = GymEnvironment("CartPole-v1")
    with pytest.raises(ValueError, match=r"save_freq .*'10' \(text, not a number.*int"):
        SingleEnvExperiment(_preset(env), env, logdir=str(tmp_path), save_freq="10")
    with pytest.raises(ValueError, match=r"fps .*'30' \(text, not a number.*float"):
        watch(_preset(env).test_agent(), env, fps="30")


@pytest.mark.parametrize("budget", [{"frames": "100"}, {"frames": -5}, {"frames": math.nan},
                                    {"episodes": 0}, {"episodes": None}])
def test_train_names_a_budget_that_is_no_positive_number(tmp_path, budget) -> None:
    """``train(frames="100")`` was "must be real number, not str" (torch's); a negative or NaN
    budget trained nothing, silently."""
    env = GymEnvironment("CartPole-v1")
    experiment = SingleEnvExperiment(_preset(env), env, logdir=str(tmp_path), quiet=True)
    name, value = next(iter(budget.items()))
    with pytest.raises(ValueError) as error:
        experiment.train(**budget)
    assert str(error.value) == (f"train()'s {name} is a positive number (math.inf: no limit), "
                                f"got {value!r}")
    assert experiment.frame == 0
    experiment.close()


@pytest.mark.parametrize("train_steps", ["1000", -5, 0, math.nan])
def test_a_train_steps_that_is_no_positive_number_is_one_line(tmp_path, train_steps) -> None:
    """Seed 003's ``preset.agent(logger, train_steps)`` and ALL's ``SingleEnvExperiment(...,
    train_steps=...)``: text was torch's or Python's words (``'>=' not supported ...``,
    ``unsupported operand type(s) for /``), PPO's 0 or -5 "total_updates must be positive",
    and NaN or a negative budget a DQN agent took silently."""
    from looprl.presets.classic_control import ppo

    env = GymEnvironment("CartPole-v1")
    error = TypeError if isinstance(train_steps, str) else ValueError
    owners = {"SingleEnvExperiment": lambda: SingleEnvExperiment(
        _preset(env), env, train_steps=train_steps, logdir=str(tmp_path / "run"), quiet=True),
        "dqn": lambda: _preset(env).agent(train_steps=train_steps),
        "ppo": lambda: ppo.hyperparameters(hidden=8).env(env).device("cpu").build().agent(
            train_steps=train_steps)}
    for owner, made in owners.items():
        with pytest.raises(error, match=rf"^{owner}: train_steps.*\(math.inf: no budget\), got "
                           f"{train_steps!r}"):
            made()
    assert not (tmp_path / "run").exists()  # (refused before the run's directory is made)
