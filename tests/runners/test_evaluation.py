"""Held-out evaluation (``context.test``): every held-out instance is played, and both sets
are logged under their own names (TensorBoard, ``test_returns.csv``, ``eval_results.csv``)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from tests.meta.test_log_scalars import _scalars

from looprl.environments import ContextualEnvironment, GymEnvironment
from looprl.presets.classic_control import ppo
from looprl.runners import OnlineRunner
from looprl.runners.evaluation import held_out_returns, instance_plan

TRAIN = {i: {"length": 0.3 + 0.05 * i} for i in range(6)}
TEST = {i: {"length": 0.9 + 0.1 * i} for i in range(4)}
SMALL_PPO = ppo.hyperparameters(n_envs=2, n_steps=16, minibatch_size=16, epochs=1, hidden=8)


def _lengths(env: ContextualEnvironment) -> list[float]:
    return [context["length"] for context in env.contextual.contexts.values()]


def test_the_plan_plays_every_held_out_instance_and_shares_the_episodes() -> None:
    env = ContextualEnvironment("CartPole-v1", TEST, seed=0)
    plan = instance_plan(env, 10)
    assert [n for _, n in plan] == [3, 3, 2, 2]  # 10 episodes over 4 instances
    assert [_lengths(single) for single, _ in plan] == [[c["length"]] for c in TEST.values()]
    assert [n for _, n in instance_plan(env, 2)] == [1, 1, 1, 1]  # each at least once
    plain = GymEnvironment("CartPole-v1")
    assert instance_plan(plain, 5) == [(plain, 5)]

    played = []

    def test(episodes, env):
        played.append((_lengths(env), episodes))
        return [float(len(played))] * episodes

    assert held_out_returns(test, env, 2) == [1.0, 2.0, 3.0, 4.0]
    assert played == [([c["length"]], 1) for c in TEST.values()]


def test_both_sets_are_logged_under_their_names(tmp_path: Path) -> None:
    runner = OnlineRunner(SMALL_PPO, ContextualEnvironment("CartPole-v1", TRAIN, seed=0),
                          num_steps=128, seed=0, eval_episodes=2, quiet=True,
                          logdir=str(tmp_path), eval_every=64, device="cpu",
                          test_env=ContextualEnvironment("CartPole-v1", TEST, seed=1))
    _, evaluation = runner.run()
    runner.close()
    assert evaluation["train_set"]["episodes"] == 2
    assert evaluation["test_set"]["episodes"] == 4  # each of the 4 held-out instances
    [run_dir] = {path.parent for path in tmp_path.glob("*/*/test_returns.csv")}
    scalars = _scalars(str(run_dir))
    train, test = scalars["eval/train_set/returns/mean"], scalars["eval/test_set/returns/mean"]
    assert len(train) == len(test) == 2  # (at 64 and at the end, which is the final one)
    assert "eval/returns/mean" not in scalars  # no unnamed set to mistake for the held-out
    assert test[-1][1] == evaluation["test_set"]["mean_eval_reward"]
    with open(run_dir / "test_returns.csv", newline="") as file:
        rows = [(row["set"], float(row["return"])) for row in csv.DictReader(file)]
    assert rows == [("train_set", r) for r in evaluation["train_set"]["returns"]] + [
        ("test_set", r) for r in evaluation["test_set"]["returns"]]
    with open(tmp_path / "eval_results.csv", newline="") as file:
        table = list(csv.DictReader(file))
    assert [row["set"] for row in table] == ["train_set", "test_set"] * 2
    assert [int(row["episodes"]) for row in table] == [2, 4] * 2
    assert [e[1] for e in runner.evaluations] == [float(r["mean_eval_reward"])
                                                 for r in table if r["set"] == "test_set"]
    assert runner._read_evaluations() == runner.evaluations  # a resume reads the held-out's


def test_a_held_out_environment_is_checked_at_construction_and_may_be_an_id() -> None:
    """``test_env`` that is no environment was a ``SingleEnvExperiment.test`` error after the
    whole training; an id (which ``env`` takes) was refused then too."""
    with pytest.raises(TypeError) as error:
        OnlineRunner(SMALL_PPO, "CartPole-v1", test_env=5)
    assert str(error.value) == ("test_env: expected an Environment, a MultiagentEnvironment or "
                                "a Gymnasium id, got int")
    runner = OnlineRunner(SMALL_PPO, "CartPole-v1", num_steps=32, seed=0, eval_episodes=1,
                          quiet=True, device="cpu", test_env="CartPole-v1")
    assert isinstance(runner.test_env, GymEnvironment)
    _, evaluation = runner.run()
    runner.close()
    assert evaluation["train_set"]["episodes"] == evaluation["test_set"]["episodes"] == 1
