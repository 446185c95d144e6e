"""Contextual instance sets from the config: ``context.train``, ``context.test``,
``context.ranges``, or files of instances; the run evaluates on the held-out set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("hydra")

from hydra import compose, initialize  # noqa: E402

from looprl.cli import main as cli  # noqa: E402
from looprl.configs import build, register  # noqa: E402
from looprl.configs.app import main as run  # noqa: E402
from looprl.environments import ContextualEnvironment  # noqa: E402

SETS = ["context.train=6", "context.test=4", "++context.ranges.length=[0.2,0.8]"]


def _compose(overrides: list[str]):
    register(overrides)
    with initialize(version_base="1.3", config_path=None):
        return compose("looprl", overrides=overrides)


def test_train_and_test_sets_are_drawn_from_the_ranges() -> None:
    built = build(_compose([*SETS, "frames=64"]))
    train, test = built.env, built.runner.test_env
    assert isinstance(train, ContextualEnvironment) and isinstance(test, ContextualEnvironment)
    train_lengths = [c["length"] for c in train.contextual.contexts.values()]
    test_lengths = [c["length"] for c in test.contextual.contexts.values()]
    assert len(train_lengths) == 6 and len(test_lengths) == 4
    assert all(0.2 <= x <= 0.8 for x in train_lengths + test_lengths)
    assert not set(train_lengths) & set(test_lengths)  # held out: other instances
    plain = build(_compose(["frames=64"]))
    assert not isinstance(plain.env, ContextualEnvironment) and plain.runner.test_env is None


def test_instance_sets_from_yaml_and_json_files(tmp_path: Path) -> None:
    (tmp_path / "train.yaml").write_text("- {length: 0.3}\n- {length: 0.6, masscart: 2.0}\n")
    (tmp_path / "test.json").write_text(json.dumps([{"length": 1.5}]))
    built = build(_compose([f"context.train={tmp_path / 'train.yaml'}",
                            f"context.test={tmp_path / 'test.json'}", "frames=64"]))
    assert [c["length"] for c in built.env.contextual.contexts.values()] == [0.3, 0.6]
    assert built.env.contextual.contexts[1]["masscart"] == 2.0
    assert [c["length"] for c in built.runner.test_env.contextual.contexts.values()] == [1.5]


def test_a_run_reports_train_set_and_test_set_returns(tmp_path: Path) -> None:
    """(It checkpoints too: the contextual copies pickle.)"""
    assert run(["meta=[plr]", *SETS, "frames=128", "test_episodes=3", "algorithm.n_envs=2",
                "algorithm.n_steps=32", "algorithm.hidden=8", "checkpoint_every=64",
                f"hydra.run.dir={tmp_path}"]) == 0
    assert list(tmp_path.glob("*/*/checkpoint.pt"))
    evaluation = json.loads((tmp_path / "results.json").read_text())["eval"]
    # every one of the 4 held-out instances is played (3 test episodes would miss one)
    assert len(evaluation["train_set"]["returns"]) == 3
    assert len(evaluation["test_set"]["returns"]) == 4
    [table] = tmp_path.glob("*/*/test_returns.csv")
    assert table.read_text().splitlines()[0] == "set,return"
    assert evaluation["mean_eval_reward"] == evaluation["test_set"]["mean_eval_reward"]
    log = (tmp_path / "app.log").read_text()
    assert "test return on the training instances" in log and "on the held-out" in log


@pytest.mark.parametrize("overrides, message", [
    (["context.trian=4"], "Unknown context key 'trian'. Did you mean 'train'?"),
    (["context.train=nofile.yaml"], "context.train / context.test: no file 'nofile.yaml' in "),
    (["context.train=abc"], "is a number of instances or a YAML/JSON file"),
    (["context.train=4", "context.ranges.lenght=[0.2,0.8]"], "lenght"),
    (["env={id: CartPole-v1}"], "env is an id or an import path"),
    # (was: "CartPoleVectorEnv has no list of environments to search for a ContextualEnv;
    # make copies with ContextualEnvironment(...).duplicate(n)", once training ran)
    (["meta=[plr]"], "meta plr picks the instances of a contextual environment, and "
                     "env=CartPole-v1 has none: set context.train=N"),
    (["meta=[space]", "algorithm=dqn"], "meta space picks the instances"),
    # (were: a plain CartPole trained without a word, and int()'s or NumPy's own messages)
    (["context.ranges.length=[0.2,0.8]"], "context.ranges is for the instances of "
                                          "context.train / context.test, and neither is set"),
    # (were taken, and trained a plain CartPole without a word)
    *[([f"context.{key}"], f"context.{key.partition('=')[0]} is for the instances of "
                          "context.train / context.test, and neither is set: add context.train=N")
      for key in ("seed=3", "hide_context=false", "instance_mode=round_robin")],
    (["context.train=4", "context.seed=abc"], "context: a seed is a whole number from 0 to "
                                              "2**32 - 1, got 'abc'"),
    (["context.train=4", "context.seed=-1"], "context: a seed is a whole number from 0 to "
                                             "2**32 - 1, got -1"),
])
def test_bad_context_configs_fail_in_one_line(overrides, message, capsys, tmp_path) -> None:
    assert cli(["run", *overrides, "frames=64", f"hydra.run.dir={tmp_path}"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0], error
