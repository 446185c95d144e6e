"""A user's own parts by import path with ``runtime=ray``: the workers import the user's
module (on the same machine: it is on the driver's path) and build the parts from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("hydra")

from tests.meta.constant_bonus import records  # noqa: E402

from looprl.configs.app import main  # noqa: E402

USER = "tests.configs.user_parts"
SMALL = ["runtime=ray", "runtime.actors=1", "runtime.envs_per_actor=2", "algorithm.n_envs=2",
         "algorithm.n_steps=16", "algorithm.hidden=8", "frames=192", "test_episodes=1",
         "logging.quiet=true"]


def test_a_gymnasium_class_and_a_users_component_on_ray(local_ray, tmp_path: Path):
    """``env=pkg.module:GymEnvClass`` and ``meta=[pkg.module:Component]``: the actor plays
    the user's environment and runs the user's component, both imported in the worker."""
    record = tmp_path / "record"
    record.mkdir()
    code = main(["algorithm=ppo", f"env={USER}:SignMatchEnv",
                 "meta=[tests.meta.constant_bonus:ConstantBonus]",
                 f"meta.ConstantBonus.record={record}", *SMALL, f"hydra.run.dir={tmp_path}"])
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["train"]["train_steps"] > 0
    assert results["train"]["mean_return"] <= 8  # SignMatchEnv's: 8 steps of reward <= 1
    assert len(results["eval"]["returns"]) == 1
    run = json.loads((Path(results["train"]["log_dir"]) / "run.json").read_text())
    assert run["hyperparameters"]["n_steps"] == 16  # run.json records them on Ray too
    actor = [c for c in records(record) if "post_step" in c]
    assert actor and actor[0]["post_episode"] > 0  # the user's component ran in the actor


def test_an_srl_multiagent_class_on_ray(local_ray, tmp_path: Path):
    """``env=pkg.module:SRLEnvClass`` with a multi-agent preset: the actor steps the user's
    SRL environment itself, one policy and trainer per agent."""
    small = [option for option in SMALL if not option.startswith("algorithm.n_envs")]  # (1)
    code = main(["algorithm=multiagent/ppo", f"env={USER}:SignMatchPair", *small,
                 f"hydra.run.dir={tmp_path}"])
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["train"]["train_steps"] > 0 and results["train"]["episodes"] > 0


@pytest.mark.parametrize("algorithm", ["ppo", "dqn", "continuous/ppo"])
def test_a_one_agent_srl_class_learns_on_ray(local_ray, tmp_path: Path, algorithm):
    """``env=pkg.module:SRLEnvClass`` of one agent with a single-agent preset: the actor steps
    SRL copies of what the local run views as a single agent's environment. Pressing the
    value seen earns 8 an episode, the untrained policy (seed 0) 0."""
    box = ["+env_kwargs.continuous=true"] if algorithm.startswith("continuous") else []
    code = main([f"algorithm={algorithm}", f"env={USER}:PressTheBit", *box, "runtime=ray",
                 "runtime.actors=1", "frames=2000", "seed=0", "test_episodes=5",
                 "logging.quiet=true", f"hydra.run.dir={tmp_path}"])
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["eval"]["mean_eval_reward"] >= 7.5, results["eval"]
