"""A user's own parts from the config: meta components and environments by import path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("hydra")

from hydra import compose, initialize  # noqa: E402

from looprl.cli import main as cli  # noqa: E402
from looprl.configs import build, register  # noqa: E402
from looprl.meta import RND  # noqa: E402

USER = "tests.configs.user_parts"


def _compose(overrides: list[str]):
    register(overrides)
    with initialize(version_base="1.3", config_path=None):
        return compose("looprl", overrides=overrides)


def test_a_component_by_import_path_with_its_arguments_as_keys() -> None:
    from tests.configs.user_parts import ScaledReward

    built = build(_compose([f"meta=[rnd,{USER}:ScaledReward]", "meta.ScaledReward.scale=0.1",
                            "frames=64"]))
    rnd, scaled = built.meta
    assert isinstance(rnd, RND) and isinstance(scaled, ScaledReward)
    assert (scaled.scale, scaled.offset) == (0.1, 0.0)


def test_a_component_in_hydras_target_form() -> None:
    from tests.configs.user_parts import ScaledReward

    built = build(_compose([f"+meta.mine._target_={USER}.ScaledReward", "+meta.mine.offset=2",
                            "frames=64"]))
    (scaled,) = built.meta
    assert isinstance(scaled, ScaledReward) and (scaled.scale, scaled.offset) == (1.0, 2)


@pytest.mark.parametrize("overrides, message", [
    ([f"meta=[{USER}:Missing]"], f"module '{USER}' has no attribute 'Missing'"),
    (["meta=[no_such_package.module:X]"], "cannot import 'no_such_package.module'"),
    ([f"meta=[{USER}:NotAComponent]"], "is the class NotAComponent, not a subclass of looprl.meta"),
    ([f"meta=[{USER}:ScaledReward]", "meta.ScaledReward.scal=1"],
     "'scal' is not an argument of"),
    ([f"meta=[{USER}:ScaledReward]", "meta.Scaled.scale=1"], "which is not attached"),
    ([f"+meta.mine._target_={USER}.ScaledReward", "+meta.mine.scal=1"],
     "'scal' is not an argument of ScaledReward. Did you mean 'scale'?"),
    ([f"+meta.mine._target_={USER}.Nope"], "has no attribute 'Nope'"),
])
def test_bad_import_paths_fail_in_one_line(overrides, message, capsys, tmp_path) -> None:
    assert cli(["run", *overrides, f"hydra.run.dir={tmp_path}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0], error


def test_a_run_with_a_users_component(tmp_path: Path) -> None:
    from looprl.configs.app import main as run

    run([f"meta=[{USER}:ScaledReward]", "meta.ScaledReward.scale=0.0", "frames=128",
         "test_episodes=1", "algorithm.n_envs=2", "algorithm.n_steps=32", "algorithm.hidden=8",
         "logging.quiet=true", "hydra/job_logging=none", "hydra/hydra_logging=none",
         f"hydra.run.dir={tmp_path}"])
    config = (tmp_path / ".hydra" / "config.yaml").read_text()
    assert f"_target_: {USER}:ScaledReward" in config and "scale: 0.0" in config


SHORT = ["frames=96", "test_episodes=1", "algorithm.n_envs=2", "algorithm.n_steps=16",
         "algorithm.hidden=8", "logging.quiet=true", "hydra/job_logging=none",
         "hydra/hydra_logging=none"]


@pytest.mark.parametrize("algorithm, env", [
    ("ppo", f"{USER}:SignMatchEnv"),  # a Gymnasium class
    ("ppo", f"{USER}:SignMatch-v0"),  # an id the module registers with Gymnasium
    ("multiagent/ppo", f"{USER}:SignMatchPair"),  # an SRL multi-agent class
    ("multiagent/ppo", f"{USER}:sign_match_pair"),  # a name the module registers (SRL)
])
def test_looprl_run_plays_a_users_environment(algorithm, env, tmp_path: Path) -> None:
    from looprl.configs.app import main as run

    agents = 2 if algorithm.startswith("multiagent") else 1
    short = [option for option in SHORT if agents == 1 or "n_envs" not in option]  # (1 a game)
    run([f"algorithm={algorithm}", f"env={env}", *short, f"hydra.run.dir={tmp_path}"])
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["train"]["episodes"] > 0
    assert 0 <= results["eval"]["mean_eval_reward"] <= 8 * agents  # 8 steps, reward <= 1


LEARN = ["seed=0", "test_episodes=5", "logging.quiet=true", "hydra/job_logging=none",
         "hydra/hydra_logging=none"]
BOX = "+env_kwargs.continuous=true"


SMALL_SAC = ["algorithm.replay_start_size=200", "algorithm.hidden=32",
             "algorithm.minibatch_size=64"]


@pytest.mark.parametrize("algorithm, frames, options", [
    ("ppo", 2000, []), ("dqn", 2000, []), ("continuous/ppo", 2000, []),
    ("continuous/sac", 800, SMALL_SAC),
])
def test_single_agent_presets_learn_a_one_agent_srl_environment(algorithm, frames, options,
                                                                tmp_path: Path) -> None:
    """SRL's Atari and gym-like environments have one agent: the single-agent presets train
    them (a Box action space with the continuous ones). Pressing the value seen earns 8 an
    episode, the untrained policy (seed 0) 0 (the Box one: 2.8)."""
    from looprl.configs.app import main as run

    box = [BOX] if algorithm.startswith("continuous") else []
    assert run([f"algorithm={algorithm}", f"env={USER}:PressTheBit", *box, f"frames={frames}",
                *options, *LEARN, f"hydra.run.dir={tmp_path}"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["eval"]["mean_eval_reward"] >= 7.5, results["eval"]


def test_run_experiment_trains_a_registered_one_agent_srl_environment(tmp_path: Path,
                                                                    monkeypatch) -> None:
    from tests.configs.user_parts import PressTheBit

    from looprl.environments import register as register_env
    from looprl.environments import srl
    from looprl.experiments import run_experiment
    from looprl.presets import classic_control

    monkeypatch.setattr(srl, "_REGISTRY", dict(srl._REGISTRY))
    register_env("press_the_bit", PressTheBit)
    result, = run_experiment(classic_control.ppo, "press_the_bit", frames=2000, seed=0,
                             test_episodes=3, quiet=True, logdir=str(tmp_path))
    assert result.test_returns == [8.0, 8.0, 8.0]
    with pytest.raises(TypeError, match=f"by its registered name or its import path "
                                        f"\\('{USER}:PressTheBit'\\), not a built"):
        run_experiment(classic_control.ppo, PressTheBit(), frames=8, logdir=str(tmp_path))


def test_gym_environment_of_an_srl_path_says_how_to_train_it() -> None:
    from looprl.environments import GymEnvironment

    with pytest.raises(ValueError, match=r"is an SRL environment, not a Gymnasium one: give "
                                         r"its name to a preset \(looprl run env="):
        GymEnvironment(f"{USER}:PressTheBit")


def test_looprl_train_plays_a_users_environment(tmp_path: Path, capsys) -> None:
    args = ["--frames", "64", "--test-episodes", "1", "--logdir", str(tmp_path),
            "n_envs=2", "n_steps=16", "hidden=8"]
    assert cli(["train", "ppo", f"{USER}:SignMatchEnv", *args]) == 0
    assert cli(["train", "multiagent.ppo", f"{USER}:SignMatchPair", *args[:-3]]) == 0
    out = capsys.readouterr().out
    assert f"on {USER}:SignMatchEnv" in out and f"on {USER}:SignMatchPair" in out


def test_a_registered_srl_name_is_made_by_the_catalog() -> None:
    import tests.configs.user_parts  # noqa: F401 - registers sign_match_pair

    from looprl.environments import MultiagentPettingZooEnv
    from looprl.presets.catalog import make_env

    env = make_env("multiagent.ppo", "sign_match_pair")
    assert isinstance(env, MultiagentPettingZooEnv) and env.possible_agents == ["agent_0",
                                                                                 "agent_1"]
    assert env.remote_env() == ("sign_match_pair", {})


@pytest.mark.parametrize("args, message", [
    (["ppo", f"{USER}:Nope"], f"module '{USER}' has no 'Nope' and registered no environment"),
    (["ppo", "no_such_pkg.envs:MyEnv"], "cannot import 'no_such_pkg.envs'"),
    (["ppo", f"{USER}:ScaledReward"], "is the class ScaledReward, not a gymnasium.Env class"),
    (["ppo", f"{USER}:SignMatchPair"], "is an SRL environment of 2 agents: train it with a "
                                       "multi-agent preset"),
    (["multiagent.ppo", f"{USER}:PressTheBit"], "is an SRL environment of one agent: train it "
                                                "with a single-agent preset (ppo, not "),
    (["continuous.ppo", f"{USER}:SignMatchBoxPair"], "for continuous ones, from Python: "
                                                     "multiagent.independent(continuous.ppo)"),
    (["multiagent.ppo", f"{USER}:SignMatchBoxPair"], "looprl has no multi-agent preset for "
                                                     "continuous actions; from Python, multiagent"
                                                     ".independent(continuous.ppo)"),
])
def test_bad_environment_paths_fail_in_one_line(args, message, capsys, tmp_path) -> None:
    assert cli(["train", *args, "--frames", "8", "--logdir", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0], error


@pytest.mark.parametrize("name, agents", [
    (f"{USER}:SignMatchEnv", 1), (f"{USER}:SignMatch-v0", 1),
    (f"{USER}:SignMatchPair", 2), (f"{USER}:sign_match_pair", 2),
])
def test_make_builds_an_environment_by_import_path(name, agents) -> None:
    """What a Ray actor calls for ``remote_env()``'s name: ``make`` imports the module."""
    from looprl.environments import make

    env = make(name)
    results = env.reset()
    assert env.agent_count == agents and len(results) == agents
    assert results[0].obs["obs"].shape == (1,)
    env.close()
