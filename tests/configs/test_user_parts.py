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
    (["ppo", f"{USER}:SignMatchPair"], "is an SRL environment: train it with a multi-agent"),
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
