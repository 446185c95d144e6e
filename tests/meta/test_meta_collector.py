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


def test_pre_step_runs_once_per_step_of_a_single_environment(tmp_path: Path):
    """A single-env run acts on each terminal state (the agent learns from it) and then
    resets instead of stepping: no pre-step hook there (was: one more per episode, after its
    pre-episode hooks, so a per-step ``HPSchedule`` ran ahead of the frames)."""
    from looprl.experiments import SingleEnvExperiment

    env = GymEnvironment("CartPole-v1")
    preset = dqn.hyperparameters(hidden=8).env(env).device("cpu").build()
    experiment = SingleEnvExperiment(preset, env, quiet=True, logdir=str(tmp_path), seed=0,
                                     meta=[ConstantBonus()])
    experiment.train(frames=100)
    calls = experiment.hub.metrics["calls"]
    assert experiment.episode >= 2
    assert calls["post_step"] == experiment.frame
    assert calls["pre_step"] - calls["post_step"] in (0, 1)  # (1: the next step's, asked)


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


def test_ray_workers_set_their_own_hyperparameters_and_send_the_others_across():
    """On Ray the step hooks run in the actors, whose policy copies do not train: a schedule
    of ``hp/lr`` per step is taken there for the trainer (``take_writes``: the last value of
    each key, which travels with the actor's segments; was: one line), and ``hp/epsilon``
    changes how the actor acts; the trainer's update hooks, the other way round: its writes of
    ``hp/epsilon`` are published (``published_writes``) and each new one is set in the actor."""
    import numpy as np
    import pytest

    from looprl.core import RolloutResult
    from looprl.meta import HPSchedule
    from looprl.meta.hub import Parts
    from looprl.meta.hyperparameters import agent_hyperparameters

    policy = dqn.hyperparameters(hidden=8).env(GymEnvironment("CartPole-v1")).device(
        "cpu").build().agent().unwrapped.policy

    def steps(key: str, start: float):
        schedule = HPSchedule(key, "linear", start, 0.0, duration=10, per="step")
        runner = EnvRunner("CartPole-v1", None, segment_length=None, meta=[schedule],
                           policy=policy, seed=0)
        for _ in range(3):
            request = runner.request(0)
            runner.step(0, RolloutResult(action=np.zeros(len(request.obs), dtype=np.int64)))
        return runner.hooks.hubs[0]

    hub = steps("hp/epsilon", 0.5)
    assert policy.hyperparameters()["hp/epsilon"].get() == pytest.approx(0.5 * 0.8)
    assert hub.take_writes() == {}  # (its own: nothing to send)
    copy_lr = agent_hyperparameters(Parts(policy))["hp/lr"]  # (the copy's optimizer's)
    lr = copy_lr.get()
    hub = steps("hp/lr", 0.01)
    assert copy_lr.get() == lr  # (untouched)
    assert hub.hyperparameters["hp/lr"].get() == pytest.approx(0.01 * 0.8)  # (as written)
    assert hub.take_writes() == {"hp/lr": pytest.approx(0.01 * 0.8)}  # the last write
    assert hub.take_writes() == {}
    # the trainer's update hooks set hp/epsilon on its copy and publish the write
    spec, _ = AlgorithmSpec.of_preset(dqn.hyperparameters(hidden=8).env(
        GymEnvironment("CartPole-v1")).device("cpu").build(), 1000)
    schedule = HPSchedule("hp/epsilon", "linear", 0.5, 0.0, duration=10, per="update")
    core = trainer_core(replace(spec, meta=[schedule]))
    core.hooks.run("pre_update")
    written = core.hooks.published_writes()
    assert [value for _, value in written.values()] == [0.5]
    hub.trainer_values({}, written)  # (an actor's, from the publication)
    assert policy.hyperparameters()["hp/epsilon"].get() == 0.5
    policy.hyperparameters()["hp/epsilon"].set(0.3)  # (its own step hook's, say)
    hub.trainer_values({}, written)  # the same write again: not set again
    assert policy.hyperparameters()["hp/epsilon"].get() == 0.3
    # and the actors' writes of the trainer's keys are set in the trainer's hub
    schedule = HPSchedule("hp/lr", "linear", 0.5, 0.0, duration=10, per="update")
    core = trainer_core(replace(spec, meta=[schedule]))
    core.hooks.apply_writes({"hp/lr": 0.25})
    assert core.hooks.hyperparameters["hp/lr"].get() == 0.25
    with pytest.raises(ValueError, match=r"^hp/lr must be"):
        core.hooks.apply_writes({"hp/lr": -1.0})


def test_a_ray_actors_step_hooks_read_the_trainers_hyperparameters_as_it_published_them():
    """(Was: a step hook on Ray read only the actor's own keys, the trainer's missing or at the
    actor copy's first values, while a local run's read the trainer's as they change.) The
    actor's hub reads each key the trainer published (``MetaHub.trainer_values``, from each
    publication), its exploration's (``hp/epsilon``) its own; writing the trainer's is sent."""
    import numpy as np
    from tests.distributed.user_components import ReadsLR, SetsLR

    from looprl.core import RolloutResult

    policy = dqn.hyperparameters(hidden=8).env(GymEnvironment("CartPole-v1")).device(
        "cpu").build().agent().unwrapped.policy

    def runner(component):
        made = EnvRunner("CartPole-v1", None, segment_length=None, meta=[component],
                         policy=policy, seed=0)
        made.request(0)
        return made, made.hooks.hubs[0]

    def step(made) -> None:
        made.step(0, RolloutResult(action=np.zeros(1, dtype=np.int64)))
        made.request(0)

    made, hub = runner(ReadsLR())
    hub.trainer_values({"hp/lr": 1e-3, "hp/target_period": 7, "hp/epsilon": 0.0})
    step(made)
    assert hub.metrics["log/seen_lr"] == 1e-3
    assert hub.metrics["hp/target_period"] == 7  # (the trainer's, not the copy's)
    assert hub.metrics["hp/epsilon"] == policy.hyperparameters()["hp/epsilon"].get() > 0
    hub.trainer_values({"hp/lr": 5e-4, "hp/target_period": 7, "hp/epsilon": 0.0})
    step(made)
    assert hub.metrics["log/seen_lr"] == 5e-4
    made, hub = runner(SetsLR())
    hub.trainer_values({"hp/lr": 1e-3})
    step(made)  # its write reads back until the trainer publishes, and is sent
    assert hub.metrics["hp/lr"] == 0.1 and hub.take_writes() == {"hp/lr": 0.1}
    hub.trainer_values({"hp/lr": 0.1})
    step(made)  # (the value it holds: no write, as locally)
    assert hub.take_writes() == {}
    hub.trainer_values({"hp/lr": 1e-3})  # (an update hook's, say)
    step(made)
    assert hub.take_writes() == {"hp/lr": 0.1}


def test_update_hooks_set_the_trainer_a_learner_loaded_or_was_given():
    """A Ray trainer loads its checkpoint (``Learner.load_state_dict``) or takes rank 0's
    trainer in a trainer group: its update hooks then set that trainer's ``hp/lr`` and read its
    policy (was: the trainer it was built with, which no longer trained: silently lost)."""
    from looprl.meta import HPSchedule

    spec, _ = AlgorithmSpec.of_preset(dqn.hyperparameters(hidden=8).env(
        GymEnvironment("CartPole-v1")).device("cpu").build(), 1000)
    schedule = HPSchedule("hp/lr", "linear", 0.5, 0.0, duration=10, per="update")
    core = trainer_core(replace(spec, meta=[schedule]))
    core.load_state_dict(trainer_core(spec).state_dict())
    core.hooks.run("pre_update")
    assert core.trainer.policy.approximations()["q"].optimizer.param_groups[0]["lr"] == 0.5
    assert core.hooks.metrics["policy"] is core.trainer.policy
