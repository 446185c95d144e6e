"""Meta components on Ray: the actors run the step and episode hooks of their own copies,
the trainer worker the update hooks of its own, and what the trainer's copy learns (RND's
networks) reaches the actors with the parameters of the same version."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch

pytest.importorskip("ray")
pytest.importorskip("hydra")

from tests.distributed.user_components import Warns  # noqa: E402
from tests.meta.constant_bonus import ConstantBonus, records  # noqa: E402

from looprl.core import SampleBatch  # noqa: E402
from looprl.distributed import DistributedRun, RuntimeConfig  # noqa: E402
from looprl.environments import GymEnvironment  # noqa: E402
from looprl.meta import RND  # noqa: E402
from looprl.presets.classic_control import a2c  # noqa: E402


def test_an_actor_loads_the_rnd_networks_published_with_the_parameters(local_ray):
    from looprl.distributed.config import AlgorithmSpec
    from looprl.distributed.sender import PolicyCopy
    from looprl.distributed.server import publication
    from looprl.distributed.workers import ParameterServer

    spec = AlgorithmSpec(env="CartPole-v1", policy="q-network", trainer="dqn",
                         policy_args={"obs_dim": {"obs": 4}, "action_dim": 2, "hidden_dim": 8})
    trainer_rnd, actor_rnd = RND(obs_shape=(4,), seed=0), RND(seed=1)
    no = torch.zeros(2, 32, dtype=torch.bool)
    batch = SampleBatch(obs=torch.randn(2, 32, 4), action=torch.zeros(2, 32, dtype=torch.long),
                        reward=torch.zeros(2, 32), done=no, truncated=no)
    trainer_rnd.update_predictor({"batch": batch})
    server = ParameterServer.remote()
    policy = spec.make_policy()
    server.put.remote(7, publication(policy.module.state_dict(), [trainer_rnd.shared_state()]))
    copy = PolicyCopy(spec, server, 0.0)
    copy.components = [actor_rnd]  # (an actor gives it its runner's)
    copy.maybe_pull(wait=True)
    assert copy.policy.version == 7
    for mine, theirs in zip(actor_rnd.rnd_net.parameters(), trainer_rnd.rnd_net.parameters(),
                            strict=True):
        assert torch.equal(mine, theirs)


def test_a_user_component_runs_unchanged_on_ray(local_ray, tmp_path: Path, caplog):
    """Its hooks run in the actor and the trainer; their warnings are logged on the driver,
    where its console and run log are, once in the run (were: in Ray's session logs only,
    ``log_to_driver=False``)."""
    env = GymEnvironment("CartPole-v1")
    preset = a2c.hyperparameters(n_envs=2, n_steps=5, hidden=16).env(env).device("cpu").build()
    run = DistributedRun(preset, RuntimeConfig(actors=1, envs_per_actor=2, groups=1),
                         frames=600, logdir=None, quiet=True,
                         meta=[ConstantBonus(record=str(tmp_path)), Warns()])
    with caplog.at_level(logging.WARNING):
        result = run.run()
    assert result.train_steps > 0
    lines = [record.getMessage() for record in caplog.records]
    assert [(r.name, r.getMessage()) for r in caplog.records if "hook warns" in r.getMessage()
            and r.name == "user.component"] == [("user.component", "the step hook warns")], lines
    assert len([line for line in lines if "UserWarning: the update hook warns" in line]) == 1, \
        lines
    copies = records(tmp_path)
    actor = [c for c in copies if "post_step" in c]
    trainer = [c for c in copies if "pre_update" in c]
    assert len(actor) == 1 and len(trainer) == 1, copies
    assert actor[0]["pre_step"] > 0 and actor[0]["post_episode"] > 0
    assert trainer[0]["post_update"] > 0 and trainer[0]["max_batch_reward"] >= 100
    env.close()


def test_the_warnings_a_worker_logs_after_the_last_poll_reach_the_driver(caplog) -> None:
    """What a worker warns between the driver's last poll and the run's end (as it stops) is
    logged on the driver, once (was: lost); a stand-in pool, no Ray run."""
    from types import SimpleNamespace

    from looprl.distributed.controller import DistributedRun as Run
    from looprl.distributed.run_state import DistributedResult, RunMonitor, SampleCounts

    class StoppedPool:  # (its loops stopped; its trainer warned as it stopped)
        def stop(self) -> bool:
            return True

        def stats(self) -> dict:
            return {"trainer0": {"warnings": [("user.component", "warned as it stopped")]}}

    result = DistributedResult()
    run = SimpleNamespace(_pool=StoppedPool(), result=result,
                          _monitor=RunMonitor(result, SampleCounts(), None, ["trainer0"]))
    with caplog.at_level(logging.WARNING):
        Run._finish(run)
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("user.component", "warned as it stopped")]


def test_a_step_hook_on_ray_reads_the_trainers_hyperparameters_as_they_change(local_ray):
    """As a local run's: a step hook reads ``hp/lr`` as the trainer's update hooks schedule it
    (from each publication), not the actor copy's first value (was: the copy's)."""
    from tests.distributed.user_components import ReadsLR

    from looprl.meta import HPSchedule

    env = GymEnvironment("CartPole-v1")
    preset = a2c.hyperparameters(n_envs=2, n_steps=5, hidden=16).env(env).device("cpu").build()
    schedule = HPSchedule("hp/lr", "linear", 0.01, 0.0, duration=100, per="update")
    result = DistributedRun(preset, RuntimeConfig(actors=1, envs_per_actor=2, groups=1,
                                                  sync=True),
                            frames=1500, logdir=None, quiet=True,
                            meta=[ReadsLR(), schedule]).run()
    assert result.train_steps > 100
    assert result.meta["actor0"]["log/seen_lr"] == 0.0  # (the schedule's end)
    env.close()


def test_step_hooks_writes_of_a_trainer_key_reach_every_trainer_alike(local_ray,
                                                                       tmp_path) -> None:
    """Two actors' step hooks set ``hp/lr``, each from its own step count; each trainer
    receives its actors' writes, and every trainer sets all of them, in rank order, before the
    same step (``TrainerGroup.agree``): the trainers stay in sync, at the actors' learning
    rates (was: one line, "a step or episode hook cannot set the trainers' hp/lr")."""
    import csv

    from tests.distributed.user_components import StepsLR

    env = GymEnvironment("CartPole-v1")
    preset = a2c.hyperparameters(n_envs=2, n_steps=8, hidden=16, lr=0.05).env(env).device(
        "cpu").build()
    result = DistributedRun(preset, RuntimeConfig(actors=2, trainers=2, envs_per_actor=2,
                                                  cpus_per_actor=0.5, cpus_per_trainer=0.5),
                            frames=3000, logdir=str(tmp_path), quiet=True,
                            meta=[StepsLR()]).run()
    env.close()
    assert result.train_steps > 20 and result.trainers_in_sync, result.trainer_steps
    with open(Path(result.log_dir) / "hyperparameters.csv") as rows:
        rates = {float(row["hp/lr"]) for row in csv.DictReader(rows)}
    assert rates - {0.05} and rates - {0.05} <= {1e-3 * k for k in range(1, 6)}, rates


CONTEXTUAL_CARTPOLE = ["context.train=6", "context.ranges.length=[0.2,1.0]"]


def test_looprl_run_ppo_with_plr_on_a_contextual_env_on_ray(local_ray, tmp_path: Path):
    """The actor plays ``make("contextual")`` with the config's instance set and runs its
    own PLR (value_l1 from its own policy copy): it reports the levels it saw and scored; the
    final policy is evaluated on the held-out set and on the training set."""
    from looprl.configs.app import main

    code = main(["algorithm=ppo", *CONTEXTUAL_CARTPOLE, "context.test=3", "meta=[plr]",
                 "runtime=ray", "runtime.actors=1", "runtime.envs_per_actor=2",
                 "algorithm.n_envs=2",
                 "algorithm.n_steps=32", "algorithm.hidden=16", "frames=600",
                 "test_episodes=1", "logging.quiet=true", f"hydra.run.dir={tmp_path}"])
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["train"]["train_steps"] > 0
    evaluation = results["eval"]  # on the held-out set, the training set's beside
    assert len(evaluation["train_set"]["returns"]) == 1
    assert len(evaluation["test_set"]["returns"]) == 3  # each held-out context once
    [table] = tmp_path.glob("**/test_returns.csv")  # both sets, named, where a local run's are
    assert [line.split(",")[0] for line in table.read_text().split()] == [
        "set", "train_set", "test_set", "test_set", "test_set"]
    assert evaluation["mean_eval_reward"] == evaluation["test_set"]["mean_eval_reward"]
    meta = results["train"]["meta"]
    assert set(meta) == {"actor0"}, meta  # 600 frames of ~20-step episodes: most levels
    assert meta["actor0"]["log/plr/seen"] >= 4 and meta["actor0"]["log/plr/mean_score"] > 0, meta


def test_an_actor_whose_loop_failed_answers_for_its_components_at_once() -> None:
    """(Was: the controller's last checkpoint of a run whose actor failed, a step hook that set
    the trainer's ``hp/lr`` say, waited 10 s for a step that would never end before the error
    line.)"""
    import threading
    from types import SimpleNamespace

    from looprl.distributed import workers

    def fail(wait: bool = False) -> None:
        raise ValueError("a step hook failed")

    waited = []

    class Lock(threading.Condition):
        def wait_for(self, predicate, timeout=None):  # (no waiting: was it needed?)
            waited.append(predicate())
            return waited[-1]

    actor = object.__new__(workers.ActorWorker.__ray_actor_class__)
    actor.__dict__.update(local=SimpleNamespace(maybe_pull=fail), runner=SimpleNamespace(
        hooks=object()), _stop=threading.Event(), _lock=Lock(), _finished=False, _failed=False,
        _meta_state=None)
    with pytest.raises(ValueError, match="a step hook failed"):
        actor.run()
    assert actor.components_state(10.0) is None and waited == [True]


def test_meta_components_run_in_actors_that_policy_workers_serve(local_ray, tmp_path) -> None:
    """With ``runtime.policy_workers`` each actor runs its step and episode hooks beside a copy
    of the published parameters that never acts: its components load the trainer's shared
    state (RND's networks; here a count of updates) and read the trainer's ``hp/*``, and a step
    hook's ``hp/epsilon`` reaches the policy worker through the trainer, which publishes it as
    it publishes its update hooks' (``test_a_policy_workers_copy_sets_each_new_exploration_...``
    below), and the policy worker acts with it (was: one line, "meta components on Ray need
    each actor's own policy copy")."""
    import csv

    from tests.distributed.user_components import SharesUpdates

    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    preset = dqn.hyperparameters(replay_start_size=100, hidden=16).env(env).device("cpu").build()
    result = DistributedRun(preset, RuntimeConfig(actors=1, policy_workers=1, envs_per_actor=2),
                            frames=2000, logdir=str(tmp_path), quiet=True,
                            meta=[SharesUpdates(0.25, "step"), RND()]).run()
    env.close()
    seen = result.meta["actor0"]
    assert result.train_steps > 10 and seen["log/loaded_updates"] > 0, seen
    assert seen["log/seen_epsilon"] == 0.25 and "log/rnd/intrinsic_reward_mean" in seen, seen
    with open(Path(result.log_dir) / "hyperparameters.csv") as rows:
        epsilons = [float(row["hp/epsilon"]) for row in csv.DictReader(rows)]
    assert epsilons[-1] == 0.25  # (the policy worker's, which acts)


def test_a_policy_workers_copy_sets_each_new_exploration_write_of_the_trainers_hooks() -> None:
    """A policy worker's ``PolicyCopy`` (with hubs of no component, as an actor's) sets the
    ``hp/epsilon`` that the trainer's update hooks (or the actors', through the trainer) wrote,
    once per write: its own schedule goes on between writes. No Ray: publications handed to
    ``_load``."""
    from looprl.distributed.config import AlgorithmSpec
    from looprl.distributed.sender import PolicyCopy
    from looprl.distributed.server import publication
    from looprl.meta.hub import StreamHooks

    spec = AlgorithmSpec(env="CartPole-v1", policy="q-network", trainer="dqn",
                         policy_args={"obs_dim": {"obs": 4}, "action_dim": 2, "hidden_dim": 8})
    copy = PolicyCopy(spec, None, 0.0)
    copy.hubs = StreamHooks.over([], copy.policy, None).hubs  # (as ``PolicyWorker`` does)
    parameters = copy.policy.module.state_dict()
    epsilon = copy.policy.exploration.hyperparameters()["hp/epsilon"]
    copy._load((1, 1, publication(parameters, values=[{}], written=[{"hp/epsilon": (3, 0.25)}])))
    assert epsilon.get() == 0.25
    epsilon.set(0.5)  # (as its schedule moves it on)
    copy._load((2, 2, publication(parameters, values=[{}], written=[{"hp/epsilon": (3, 0.25)}])))
    assert epsilon.get() == 0.5  # (the same write: not set again)
    copy._load((3, 3, publication(parameters, values=[{}], written=[{"hp/epsilon": (4, 0.25)}])))
    assert epsilon.get() == 0.25 and copy.policy.version == 3
