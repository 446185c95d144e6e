"""Meta components where the work happens, in one process: the step and episode hooks in the
collector (``EnvRunner``), the update hooks around the trainer (its ``Learner``), and what the
trainer's copy learns (RND's networks) handed to the collector's copy, as the Ray workers do."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import torch
from tests.meta.constant_bonus import ConstantBonus, records

from looprl.collector import EnvRunner
from looprl.distributed import AlgorithmSpec, test_pipeline
from looprl.distributed.pipeline import load_shared_state, trainer_core
from looprl.environments import GymEnvironment
from looprl.experiments import ParallelEnvExperiment
from looprl.meta import RND
from looprl.presets.classic_control import a2c, dqn


def small_a2c():
    env = GymEnvironment("CartPole-v1")
    return a2c.hyperparameters(n_envs=2, n_steps=5, hidden=16).env(env).device("cpu").build(), env


def test_a_user_component_runs_unchanged_in_the_local_loop_and_in_the_collector(tmp_path: Path):
    preset, env = small_a2c()
    (tmp_path / "local").mkdir()
    experiment = ParallelEnvExperiment(preset, env, quiet=True, logdir=str(tmp_path),
                                       meta=[ConstantBonus(record=str(tmp_path / "local"))])
    experiment.train(frames=300)
    [local] = records(tmp_path / "local")
    assert {"pre_episode", "pre_step", "post_step", "post_episode", "pre_update",
            "post_update"} <= set(local)
    assert local["max_batch_reward"] >= 100  # the agent learned from the shaped rewards

    (tmp_path / "pipeline").mkdir()
    spec, _ = AlgorithmSpec.of_preset(preset, 1000)
    spec = replace(spec, meta=[ConstantBonus(record=str(tmp_path / "pipeline"))])
    test_pipeline(spec, episodes=3, max_frames=400, n_envs=2, segment_length=5)
    copies = records(tmp_path / "pipeline")
    assert len(copies) == 2  # the collector's copy and the trainer's
    collector = next(c for c in copies if "post_step" in c)
    trainer = next(c for c in copies if "pre_update" in c)
    assert collector["pre_step"] >= collector["post_step"] > 0
    assert collector["post_episode"] > 0 and collector["pre_episode"] >= collector["post_episode"]
    assert "pre_update" not in collector and "post_step" not in trainer
    assert trainer["post_update"] > 0 and trainer["max_batch_reward"] >= 100  # rows shaped


def test_the_collectors_rnd_computes_its_bonus_with_the_trainers_networks():
    env = GymEnvironment("CartPole-v1")
    preset = dqn.hyperparameters(replay_start_size=32, minibatch_size=32,
                                 hidden=16).env(env).device("cpu").build()
    spec, _ = AlgorithmSpec.of_preset(preset, 1000)
    policy = spec.make_policy()
    spec.meta = [RND(seed=0)]
    core = trainer_core(spec, policy)
    collector = RND(seed=1)  # other networks until the trainer's arrive
    runner = EnvRunner(spec.make_env, None, 2, 4, None,
                       meta=[collector], policy=policy)
    trainer_rnd = core.hooks.stack.components[0]

    def collect() -> None:
        request = runner.request(0)
        runner.step(0, policy.rollout(request), policy.version)
        for sample in runner.segments():
            core.put(sample)

    while core.train_step() is None:
        collect()
    load_shared_state(runner.hooks.components, core.shared_state())
    for mine, theirs in zip(collector.rnd_net.parameters(), trainer_rnd.rnd_net.parameters(),
                            strict=True):
        assert torch.equal(mine, theirs)
    collect()
    transition = runner.hooks.hubs[0].metrics["transition"]
    expected = 0.1 * trainer_rnd.rnd_net.get_error(transition["next_state"])
    torch.testing.assert_close(transition["intrinsic_reward"], expected)
    env.close()
