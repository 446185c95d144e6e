"""The Ray runtime on a real local instance (loopback only, started once for this module):
learning, fault tolerance and bad input."""

from __future__ import annotations

import io
import logging
import os
import re
import sys
from pathlib import Path

import pytest
import torch

from helpers import kill_worker_when
from looprl.agents import PPOTrainer
from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig
from looprl.distributed.watch import load_run

ray = pytest.importorskip("ray")

CARTPOLE = {"obs_dim": {"obs": 4}, "action_dim": 2}


def ppo_spec(**policy_args) -> AlgorithmSpec:
    return AlgorithmSpec(
        env="CartPole-v1", policy="actor-critic-separate",
        policy_args={**CARTPOLE, "lr": 1e-3, **policy_args},
        trainer="ppo", trainer_args={"epochs": 4, "minibatch_size": 128, "entropy_coef": 0.0},
        buffer_args={"batch_streams": 8},
    )


def runtime(**options) -> RuntimeConfig:
    return RuntimeConfig(**{"actors": 2, "envs_per_actor": 4, "segment_length": 32,
                            "cpus_per_actor": 1, "cpus_per_trainer": 1, **options})


def test_ppo_learns_and_survives_a_killed_actor_policy_worker_and_trainer(local_ray, tmp_path,
                                                                          caplog):
    """One run, three deaths one after another (each worker is started again and the run goes
    on), and PPO still learns: an actor acting through a policy worker, an evaluation worker,
    trainer checkpoints every 2 steps. The workers of a local instance run at the driver's priority:
    at Ray's default worker niceness (15), any other busy process on the machine starves them
    (``local_instance_settings``)."""
    kills = {"actor0": kill_worker_when("actor0", "frames", 1000),
             "policy0": kill_worker_when("policy0", "frames", 2000),
             "trainer": kill_worker_when("trainer", "train_steps", 10)}
    # what a worker's start need not import: the controller's logging and experiment code
    # (``looprl.distributed``'s lazy names); the parameter server, torch (it holds pickled
    # parameters: ``looprl.distributed.server``)
    unneeded = ("looprl.distributed.controller", "looprl.experiments")
    imported: dict[str, object] = {}
    modules = lambda worker: ([m for m in unneeded if m in sys.modules],  # noqa: E731 (by value)
                              os.nice(0))

    def callback(run: DistributedRun) -> None:
        if not imported:
            imported.update({name: ray.get(run.workers[name].__ray_call__.remote(modules))
                             for name in ("actor0", "policy0", "eval0")})
            imported["server imports torch"] = ray.get(run.workers["server"].__ray_call__.remote(
                lambda worker: "torch" in sys.modules))
        for order, (kill, _) in enumerate(kills.values()):
            if len(run.result.restarts) >= order:  # each once the one before is back
                kill(run)
        killed_at = kills["trainer"][1]
        trained_on = bool(killed_at) and run.result.train_steps > killed_at[0] + 2
        if len(run.result.restarts) == len(kills) and trained_on and learned(run.result):
            run.frames = run.result.frames  # all three came back and PPO learned: done

    caplog.set_level(logging.WARNING, "looprl.distributed")
    run = DistributedRun(ppo_spec(), runtime(actors=1, eval_workers=1, policy_workers=1,
                                             cpus_per_actor=0.5, checkpoint_every=2),
                         frames=FRAMES_KILLED, logdir=str(tmp_path), quiet=True)
    result = run.run(callback=callback)
    assert imported == {**{name: ([], os.nice(0)) for name in ("actor0", "policy0", "eval0")},
                        "server imports torch": False}, imported
    assert all(killed for _, killed in kills.values()), kills
    assert [name for name, _ in result.restarts] == ["actor0", "policy0", "trainer"], caplog.text
    assert "actor0 worker died" in caplog.text, "the killed actor was not restarted"
    assert "policy0 worker died and Ray restarted it" in caplog.text, "the killed policy worker"
    resumed = [r.getMessage() for r in caplog.records if "resumed from its checkpoint" in
               r.getMessage()]
    assert resumed, f"the killed trainer did not resume: {caplog.text}"
    step = int(resumed[-1].split()[-1])
    trainer_killed_at = kills["trainer"][1][0]
    assert 2 <= step <= trainer_killed_at + 2, step  # the latest checkpoint, not a fresh start
    assert result.train_steps > step  # and it trained on
    # (from the parameter server's copy: without checkpoint_every no files, as a local run)
    assert not (Path(result.log_dir) / "trainer_checkpoint.pt").exists()
    # it reaches a return far above random play (~22; a rolling mean of 20 passes 100 after
    # 5,100-6,100 frames, kills included), and so does the evaluation worker, which played
    # with new parameters: the callback then ends the run
    assert learned(result) and result.frames < FRAMES_KILLED, (result.frames, result.returns,
                                                               result.eval_returns)
    log_dir = Path(result.log_dir)
    rows = (log_dir / "results.csv").read_text().splitlines()
    assert len(rows) == len(result.returns) + 1  # every episode reported is in results.csv
    for name in ("returns100.csv", "losses.csv", "throughput.csv", "policy.pt", "algorithm.pt"):
        assert (log_dir / name).exists(), name
    spec, policy = load_run(log_dir)  # what looprl watch plays
    assert spec.env == "CartPole-v1" and policy.version == result.trainer_steps[0]
    throughput = (log_dir / "throughput.csv").read_text().splitlines()
    assert throughput[0].startswith("time,worker,frames_per_s") and len(throughput) > 4


FRAMES_KILLED = 20_000  # the most it may take; the callback ends the run once PPO learned


def learned(result) -> bool:
    """Whether a rolling mean of 20 training returns and an evaluation return (of at least
    5) passed 100."""
    returns = result.returns
    best = max((sum(returns[i - 20:i]) / 20 for i in range(20, len(returns) + 1)), default=0)
    return best > 100 and len(result.eval_returns) >= 5 and max(result.eval_returns) > 100


class WrongSizePolicy:
    """An actor-critic policy whose ``rollout`` answers one row fewer than asked."""

    def __init__(self, **args):
        from looprl.core import Policy

        self.inner = Policy(type_="actor-critic-separate", args=args)
        self.default_policy_state = None
        self.version = 0
        self.module = self.inner.module

    def rollout(self, request):
        return self.inner.rollout(request)[:-1]


def test_a_policy_answering_the_wrong_batch_size_stops_the_run_in_one_line(local_ray, tmp_path):
    from looprl.core import register_policy

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests
    register_policy("wrong-size", WrongSizePolicy)
    spec = ppo_spec()
    spec.policy = "wrong-size"
    frames: list[int] = []
    with pytest.raises(RuntimeError, match="actor0 worker failed: .*returned 3 actions for a "
                                           "request of 4 rows"):
        DistributedRun(spec, runtime(actors=1, groups=1), frames=10**6, logdir=None,
                       quiet=True).run(callback=lambda run: frames.append(run.result.frames))
    assert max(frames, default=0) < 10**4  # it stopped at once, not at the end of its budget
    # through a policy worker, with two groups: the other group's request, failed too, is
    # collected (was: Ray's "Unhandled error" block in the console before the line)
    with pytest.raises(RuntimeError, match="actor0 worker failed: .*returned 1 actions for a "
                                           "request of 2 rows"):
        DistributedRun(spec, runtime(actors=1, groups=2, policy_workers=1, cpus_per_policy=0.5),
                       frames=10**6, logdir=None, quiet=True).run()


def test_a_run_interrupted_says_where_its_logs_are_and_stops_its_workers(local_ray, tmp_path):
    """Ctrl-C in a notebook: a bare KeyboardInterrupt before."""
    from looprl.experiments import TrainingInterrupted

    def ctrl_c(run: DistributedRun) -> None:
        if run.result.frames:
            raise KeyboardInterrupt

    run = DistributedRun(ppo_spec(), runtime(actors=1), frames=10**6, logdir=str(tmp_path),
                         quiet=True)
    with pytest.raises(TrainingInterrupted, match="Training interrupted at frame") as stop:
        run.run(callback=ctrl_c)
    assert stop.value.log_dir == run.result.log_dir and stop.value.frame > 0
    assert not run.workers, "the workers were left running"


def test_a_run_called_again_is_one_line_not_a_new_untrained_run(local_ray, tmp_path):
    """A notebook cell run twice: ``run()`` again on the same ``DistributedRun`` says how to go
    on (was: a second run directory with a fresh, untrained trainer's policy.pt, which ``test``
    then played, and the first run's result pointed at it)."""
    run = DistributedRun(ppo_spec(), runtime(actors=1), frames=200, logdir=str(tmp_path),
                         quiet=True)
    first = run.run()
    log_dir = first.log_dir
    with pytest.raises(RuntimeError, match=r"^this DistributedRun ran already \(.* frames\): "
                                           r"make a new DistributedRun to train again, or go on "
                                           r"with DistributedRun\(..., resume_from="
                                           + re.escape(repr(log_dir)) + r"\) and a larger "
                                           r"frames$"):
        run.run()
    assert run.result.log_dir == log_dir
    assert [path.name for path in Path(log_dir).parent.iterdir()] == [Path(log_dir).name]


def test_a_run_called_again_after_ctrl_c_goes_on_with_the_same_frames(tmp_path):
    """(Was: "and a larger frames" after a Ctrl-C too, whose run resumes with the same.)"""
    run = DistributedRun(ppo_spec(), runtime(actors=1), frames=200, logdir=None, quiet=True)
    run._pool = object()  # (as ``run()`` leaves it, interrupted)
    run.result.log_dir, run.result.frames = str(tmp_path), 100
    with pytest.raises(RuntimeError, match=r", or go on with DistributedRun\(..., resume_from="
                                           + re.escape(repr(str(tmp_path))) + r"\)$"):
        run.run()


def test_the_parameter_server_is_placed_on_the_drivers_node(local_ray, monkeypatch):
    """The server, which Ray never restarts and which hands the checkpoints to the driver,
    runs on the driver's node (was: any node of a cluster, whose loss ended the run)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from looprl.distributed.placement import WorkerPool
    from looprl.distributed.run_state import DistributedResult, SampleCounts

    pool, options = WorkerPool(ppo_spec(), runtime(), DistributedResult(), SampleCounts()), {}

    def recorded(name: str, cls: object, args: tuple, **given: object) -> str:  # (not created)
        options[name] = given
        return name

    monkeypatch.setattr(pool, "_start", recorded)
    pool._create(None, seed=0, frames=None, meta_state={}, checkpoint_steps=0)
    strategy = options["server"].get("scheduling_strategy")
    assert isinstance(strategy, NodeAffinitySchedulingStrategy)
    assert strategy.node_id == ray.get_runtime_context().get_node_id() and not strategy.soft


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_gpus_a_cluster_lacks_fail_after_the_placement_timeout_in_one_line(local_ray):
    """No node has the GPU a policy worker reserves: the line says so, and what to lower."""
    with pytest.raises(RuntimeError, match=r"^no node of the cluster can place policy workers: "
                                           r"each reserves 1 CPUs and 1 GPUs \(runtime.cpus_per_"
                                           r"policy, runtime.gpus_per_policy\) and the largest "
                                           r"node has .* CPUs and 0 GPUs; lower them"):
        DistributedRun(ppo_spec(), runtime(policy_workers=1, gpus_per_policy=1,
                                           placement_timeout=3),
                       frames=10**6, logdir=None, quiet=True).run()


def test_a_worker_larger_than_every_node_is_warned_of_before_any_worker_is_created(
        monkeypatch, caplog):
    """Two alive nodes of 2 CPUs (4 in all) and a trainer that reserves 3: no node can hold it
    now, so a warning says so at once (was: silence for placement_timeout, 60 s by default),
    and the workers wait for an autoscaler to add one."""
    from looprl.distributed.placement import WorkerPool
    from looprl.distributed.run_state import DistributedResult, SampleCounts

    nodes = [{"Alive": True, "Resources": {"CPU": 2.0}}, {"Alive": True, "Resources": {"CPU": 2.0}},
             {"Alive": False, "Resources": {"CPU": 8.0}}]
    monkeypatch.setattr(ray, "nodes", lambda: nodes)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 4.0})
    pool = WorkerPool(ppo_spec(), runtime(actors=1, cpus_per_trainer=3), DistributedResult(),
                      SampleCounts())

    def created(*args: object) -> None:
        raise RuntimeError("created")

    monkeypatch.setattr(pool, "_create", created)
    with pytest.raises(RuntimeError, match="^created$"):
        pool.start(None, seed=0)
    assert any(re.fullmatch(r"no node of the cluster can place trainer workers: each reserves 3 "
                            r"CPUs and 0 GPUs \(runtime.cpus_per_trainer, runtime.gpus_per_"
                            r"trainer\) and the largest node has 2 CPUs and 0 GPUs; .*; the "
                            r"workers wait up to runtime.placement_timeout=\d+s for an "
                            r"autoscaler to add one", message) for message in caplog.messages)


def test_a_run_larger_than_the_users_ray_instance_says_so_before_it_waits(local_ray, caplog):
    """The user's own Ray instance (4 CPUs) cannot ever hold what the run reserves (5): a
    warning line says so at once, before the wait for an autoscaler (was: silence for the
    whole placement_timeout, 60 s by default)."""
    caplog.set_level(logging.WARNING, "looprl.distributed")
    with pytest.raises(RuntimeError, match="within 1s"):
        DistributedRun(ppo_spec(), runtime(actors=1, cpus_per_trainer=4, placement_timeout=1),
                       frames=10**6, logdir=None, quiet=True).run()
    assert ("the run reserves 5 CPUs and 0 GPUs and the Ray cluster has 4 CPUs and 0 GPUs in "
            "all: its workers wait up to runtime.placement_timeout=1s for an autoscaler"
            ) in caplog.text


def test_workers_that_start_too_slowly_are_one_line_that_says_so(local_ray):
    """The cluster holds what the run reserves, but its processes do not start in time (an
    overloaded machine): the error says so, not to lower the number of actors."""
    with pytest.raises(RuntimeError, match=r"^worker\(s\) \[.*'actor0'.*\] did not start within "
                                           r"0.5s, although the cluster holds what the run "
                                           r"reserves .*overloaded, or an actor's environment "
                                           r"hangs in its first reset .*test_environment\); "
                                           r"raise runtime.placement_timeout"):
        DistributedRun(ppo_spec(), runtime(actors=1, placement_timeout=0.5), frames=10**6,
                       logdir=None, quiet=True).run()


def test_looprl_run_with_runtime_ray_trains_ape_x_dqn_through_a_policy_worker(local_ray, tmp_path):
    """``looprl run algorithm=dqn algorithm.apex=true runtime=ray``: the preset's
    hyperparameters on Ray workers (Ape-X, the preset's explicit option: an epsilon per
    actor, prioritized n-step replay; a policy worker batching both actors' requests), then
    a local evaluation."""
    import json

    from looprl.configs.app import main

    code = main(["algorithm=dqn", "algorithm.apex=true", "runtime=ray", "runtime.actors=2",
                 "runtime.envs_per_actor=2",
                 "runtime.policy_workers=1",
                 "algorithm.replay_start_size=200", "algorithm.hidden=32",
                 "algorithm.gradient_steps=16", "frames=1000",
                 "test_episodes=2", "logging.quiet=true", f"hydra.run.dir={tmp_path}"])
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["train"]["frames"] >= 1000 and results["train"]["train_steps"] > 0
    assert len(results["eval"]["returns"]) == 2
    run_dir = tmp_path / "dqn" / "CartPole-v1"
    assert (run_dir / "throughput.csv").exists() and (run_dir / "policy.pt").exists()
    assert "q," in (run_dir / "losses.csv").read_text()  # (its trainer's td: every 1,000th step)
    rows = [line.split(",") for line in (run_dir / "throughput.csv").read_text().splitlines()]
    batch_rows = [float(row[5]) for row in rows[1:] if row[5]]
    # 2 envs in 2 groups: 1 row per request; more rows per rollout = requests batched together
    assert batch_rows and max(batch_rows) > 1.2, batch_rows


def _mean_sample_lag(log_dir: str) -> float:
    import csv

    with open(Path(log_dir) / "losses.csv", encoding="utf-8") as file:
        lags = [float(r["value"]) for r in csv.DictReader(file) if r["name"] == "sample_lag"]
    return sum(lags) / len(lags)


def test_continuous_ppo_preset_learns_pendulum_on_two_actors_sampling_in_sync(local_ray,
                                                                                tmp_path):
    """``DistributedRun(preset, ...)`` from Python, as ``looprl run algorithm=continuous/ppo
    runtime=ray``: the preset's own Gaussian policy and trainer learn, at lr 3e-3 (random
    play and the untrained policy: about -1200, its means of 20 episodes -1260 to -1160; the
    mean of 20 episodes passes -800 after 19,000-22,000 frames, which ends the run, and -600
    after 21,000-28,000, in 6 runs of which one reached only -620 in 35,000; with the
    surrogate's sign flipped it stays below -1300 to the end of the budget).

    ``runtime.sync``: the two actors fill each 8-stream batch together and wait for the step
    trained on it, so samples are not older than the trained policy (asynchronous sampling:
    2-4 versions) and no actor runs ahead of the trainer."""
    from looprl.environments import GymEnvironment
    from looprl.experiments.experiment import seed_everything
    from looprl.presets.continuous import ppo

    seed_everything(0)
    preset = ppo.env(GymEnvironment("Pendulum-v1")).device("cpu").hyperparameters(
        lr=3e-3).build()
    run = DistributedRun(preset, runtime(sync=True, segment_length=preset.n_steps),
                         frames=35_000, logdir=str(tmp_path), quiet=True)

    def callback(run: DistributedRun) -> None:
        returns = run.result.returns
        if len(returns) >= 20 and sum(returns[-20:]) / 20 > -800:
            run.frames = run.result.frames  # learned: end the run after this poll

    result = run.run(callback=callback)
    returns = result.returns
    means = [sum(returns[i - 20:i]) / 20 for i in range(20, len(returns) + 1)]
    rows = 2 * 4 * preset.n_steps  # one batch: both actors' segments
    assert result.train_steps >= 8
    assert result.frames <= (result.train_steps + 2) * rows, (result.frames, result.train_steps)
    # only a segment's first row (its predecessor's bootstrap row) comes from the version
    # before: a lag of 1 on 1 row in 257 (0.004)
    assert _mean_sample_lag(result.log_dir) < 0.1
    assert means[0] < -1000 and max(means) > -800, means[::20]


def test_sync_sampling_needs_each_actor_to_run_its_own_policy():
    with pytest.raises(ValueError, match="runtime.sync needs .*runtime.policy_workers=0"):
        RuntimeConfig(sync=True, policy_workers=1)


class ControllerDied(Exception):
    """Stands for the controller's process dying mid-run."""


def test_a_run_whose_controller_died_resumes_from_its_directory(local_ray, tmp_path, caplog):
    """... its trainer from its checkpoint, its actor's meta components as the controller's
    checkpoint saved them (``StepCounter``), and its actor's epsilon schedule, which counts its
    env steps, from the steps that checkpoint saved (it started again from epsilon 1, and the
    resumed DQN explored anew), so ``hp/epsilon`` only decays over the run. The trainer's loss
    rows go on from the checkpoint's frame (was: from its own checkpoint's count, ahead of the
    controller's, past the run's last frame). The same run resumed with other hyperparameters
    is one line, before any worker starts (was: a late ``state_dict`` error in the trainer)."""
    import csv

    from tests.configs.user_parts import StepCounter

    from looprl.distributed.run_state import find_controller_checkpoint
    from looprl.environments import GymEnvironment
    from looprl.experiments.checkpoint import load_checkpoint
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")

    def preset(hidden: int):
        return dqn.hyperparameters(hidden=hidden, replay_start_size=40, minibatch_size=8,
                                   update_frequency=32, gradient_steps=4,
                                   replay_buffer_size=500, final_exploration_step=20_000).env(
            env).device("cpu").build()

    options = RuntimeConfig(actors=1, envs_per_actor=2, checkpoint_every=20, cpus_per_actor=1,
                            cpus_per_trainer=1)

    def die(run: DistributedRun) -> None:
        if run.result.frames >= 1_000 and list(tmp_path.glob("*/*/controller_checkpoint.pt")):
            run._finish = lambda: None  # a dead controller saves nothing on its way out
            raise ControllerDied

    with pytest.raises(ControllerDied):
        DistributedRun(preset(16), options, frames=10**6, logdir=str(tmp_path), quiet=True,
                       seed=0, meta=[StepCounter()], checkpoint_every=200).run(callback=die)
    state = load_checkpoint(find_controller_checkpoint(tmp_path))
    (saved,) = state.actors_meta[0]
    assert saved[0] == "StepCounter" and saved[1]["steps"] > 0
    # (the checkpoint's frame, not a fixed one: a loaded machine checkpoints past 2,000 first)
    budget = state.result.frames + 1_000
    with pytest.raises(ValueError, match=r"another config \(hidden: 16 -> 32\)"):
        DistributedRun(preset(32), options, frames=budget, logdir=str(tmp_path), quiet=True,
                       resume_from=str(tmp_path), meta=[StepCounter()]).run()  # (hidden=16's)
    caplog.set_level(logging.WARNING, "looprl.distributed")
    run = DistributedRun(preset(16), options, frames=budget, logdir=str(tmp_path), quiet=True,
                         resume_from=str(tmp_path), meta=[StepCounter()], checkpoint_every=200)
    assert run.run() is run.result
    env.close()
    resumed = [r.getMessage() for r in caplog.records if "resumed from its checkpoint" in
               r.getMessage()]
    step = int(resumed[-1].split()[-1])
    assert step >= 20 and run.result.train_steps > step  # the trainer went on from its checkpoint
    runs = list(tmp_path.glob("*/*/results.csv"))
    assert len(runs) == 1  # the same run directory, continued
    rows = [line.split(",") for line in runs[0].read_text().splitlines()[1:]]
    # the rows the dead controller wrote after its checkpoint are gone, none is repeated
    assert [int(row[1]) for row in rows] == list(range(1, len(rows) + 1))
    assert len(rows) == len(run.result.returns)
    frames = [int(row[0]) for row in rows]
    assert frames == sorted(frames) and run.result.frames >= budget
    assert run.result.meta["actor0"]["log/counter/start"] == saved[1]["steps"]
    (table,) = tmp_path.glob("*/*/hyperparameters.csv")
    epsilons = [float(row["hp/epsilon"]) for row in csv.DictReader(table.open())]
    assert len(epsilons) >= 2 and epsilons == sorted(epsilons, reverse=True), epsilons
    (losses,) = tmp_path.glob("*/*/losses.csv")
    frames = [int(row["frame"]) for row in csv.DictReader(losses.open())]
    assert frames == sorted(frames) and frames[-1] <= run.result.frames, frames


def test_a_worker_ray_restarted_explores_on_from_the_runs_epsilon(local_ray):
    """An actor or policy worker that Ray restarts starts its epsilon schedule anew: the pool
    moves it to the furthest steps polled (was: epsilon 1 again, mid-run)."""
    from looprl.distributed.placement import WorkerPool
    from looprl.distributed.run_state import DistributedResult, SampleCounts

    class Handle:  # stands for a worker's Ray handle
        def __init__(self, steps):
            self.steps, self.explored = steps, []
            self.stats = self.ready = self
            self.explore_from = type("Call", (), {"remote": lambda _, steps: ray.put(
                self.explored.append(steps))})()

        def remote(self):
            return ray.put({"schedules": self.steps, "id": 1, "node": "n"})

    pool = WorkerPool(ppo_spec(), runtime(actors=1), DistributedResult(), SampleCounts())
    pool.workers = {"actor0": Handle([500]), "policy0": Handle([700])}
    pool.stats()
    for handle in pool.workers.values():
        handle.steps = [3]  # restarted: its schedule's first steps
    pool.stats()
    assert pool.schedules == {"actor0": [500], "policy0": [700]}
    pool.placed("actor0", {"node": "n", "id": 2})  # (a restarted actor, before its loop)
    pool.explore_on("policy0")  # (a restarted policy worker: ``Supervisor.check_workers``)
    assert [h.explored for h in pool.workers.values()] == [[[500]], [[700]]]


def test_a_runtime_env_with_ray_already_initialized_is_one_line(local_ray):
    with pytest.raises(RuntimeError, match="runtime.runtime_env takes effect when the run"):
        DistributedRun(ppo_spec(), runtime(runtime_env={"py_modules": ["."]}), logdir=None,
                       quiet=True).run()


def test_looprl_run_trains_independent_ppo_on_tictactoe_with_runtime_ray(local_ray, tmp_path):
    """``looprl run algorithm=multiagent/ppo env=tictactoe_v3 meta=[rnd] runtime=ray``: one
    PPO per agent (each its own trainer on its own streams, as locally) with its own RND in
    the actor and the trainer, then a local evaluation."""
    import json

    from tests.meta.test_log_scalars import _scalars

    from looprl.configs.app import main

    pytest.importorskip("pettingzoo")
    code = main(["algorithm=multiagent/ppo", "env=tictactoe_v3", "meta=[rnd]", "runtime=ray",
                 "runtime.actors=1", "runtime.envs_per_actor=2", "algorithm.n_steps=16",
                 "algorithm.minibatch_size=16", "frames=300", "test_episodes=2",
                 "logging.quiet=true", f"hydra.run.dir={tmp_path}"])
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["train"]["frames"] >= 300 and results["train"]["train_steps"] >= 2
    assert len(results["eval"]["returns"]) == 2
    run = tmp_path / "independent_ppo" / "tictactoe_v3"  # (the preset's name, as locally)
    meta = {key for values in results["train"]["meta"].values() for key in values}
    assert {"log/rnd/intrinsic_reward_mean/player_1",
            "log/rnd/intrinsic_reward_mean/player_2"} <= meta, meta
    assert not (run / "losses.csv").exists()  # (each agent's trainer logs in its own, as locally)
    assert not [tag for tag in _scalars(str(run)) if tag.startswith("log/rnd/")]
    tests = []
    for agent in ("player_1", "player_2"):  # each agent's returns, as locally (their sum is 0)
        own = run / f"independent_ppo.{agent}" / "tictactoe_v3"
        assert f"{agent}/policy," in (own / "losses.csv").read_text()  # (its trainer's, as locally)
        assert _scalars(str(own))["log/rnd/intrinsic_reward_mean"]  # (its RND's, as locally)
        rows = (run / f"independent_ppo.{agent}" / "tictactoe_v3" /
                "results.csv").read_text().splitlines()[1:]
        assert rows and any(float(row.split(",")[2]) != 0 for row in rows), rows
        tests.append((run / f"independent_ppo.{agent}" / "tictactoe_v3" /
                      "test_returns.csv").read_text().splitlines()[1:])
    assert [len(rows) for rows in tests] == [2, 2]  # and each agent's test returns
    assert [float(a) + float(b) for a, b in zip(*tests)] == results["eval"]["returns"]


class _Recorder:
    """Stands for a worker class: records what each worker is constructed with, and answers
    an object reference where Ray answers an actor handle."""

    def __init__(self, created: list[tuple[str, tuple]]):
        self.created, self.name = created, ""

    def options(self, name: str, **options) -> _Recorder:
        self.name = name.rpartition("-")[2]
        return self

    def remote(self, *args):
        self.created.append((self.name, args))
        return ray.put(None)


def _references_and_size(value) -> tuple[list, int]:
    """The object references and actor handles inside ``value`` and its size pickled as Ray
    pickles arguments (cloudpickle, protocol 5, buffers in band), through public APIs only."""
    from ray import cloudpickle
    from ray.actor import ActorHandle

    references: list = []

    class Finder(cloudpickle.CloudPickler):
        def persistent_id(self, obj):
            if isinstance(obj, (ray.ObjectRef, ActorHandle)):
                references.append(obj)
                return len(references)
            return None

    out = io.BytesIO()
    Finder(out, protocol=5).dump(value)
    return references, out.tell()


def test_the_reference_finder_finds_references(local_ray):
    """(The check below finds what Ray would pass by reference, and measures size.)"""
    reference = ray.put(1)
    found, size = _references_and_size({"args": [reference], "big": bytes(200_000)})
    assert found == [reference] and size > 200_000
    assert _references_and_size(("name", 3))[0] == []


def test_no_worker_gets_an_object_reference_in_its_constructor_arguments(local_ray,
                                                                         monkeypatch):
    """Ray notes (once per driver process, on stderr) each restartable actor whose constructor
    arguments hold an object reference -- an actor handle too, or an argument over 100 KiB,
    which Ray passes through the object store: such an actor may not restart. The workers
    find each other by name instead. Every constructor argument of every kind of worker,
    pickled as Ray pickles it (cloudpickle), holds no reference and stays small."""
    from looprl.distributed import policy_worker, trainer_worker, workers
    from looprl.distributed.placement import WorkerPool
    from looprl.distributed.run_state import DistributedResult, SampleCounts
    from looprl.environments import GymEnvironment
    from looprl.presets.continuous import ppo

    created: list[tuple[str, tuple]] = []
    for module, name in ((workers, "ParameterServer"), (workers, "ActorWorker"),
                         (policy_worker, "PolicyWorker"), (trainer_worker, "TrainerWorker")):
        monkeypatch.setattr(module, name, _Recorder(created))
    preset = ppo.env(GymEnvironment("Pendulum-v1")).device("cpu").build()
    rt = runtime(actors=3, trainers=2, policy_workers=1, eval_workers=1, cpus_per_actor=0.5,
                 segment_length=preset.n_steps)
    for spec in (ppo_spec().portable(), DistributedRun(preset, rt, logdir=None).spec):
        created.clear()
        pool = WorkerPool(spec, rt, DistributedResult(), SampleCounts())
        pool._create("/tmp/run", 0, None, {}, 0)
        kinds = {name.rstrip("0123456789") for name, _ in created}
        assert kinds == {"server", "trainer", "policy", "actor", "eval"}, kinds
        for name, args in created:
            for i, arg in enumerate(args):
                references, size = _references_and_size(arg)
                assert not references, (spec.policy, name, i, arg)
                assert size < 100 * 1024, (spec.policy, name, i)


class NaNLossTrainer(PPOTrainer):
    """A PPO trainer whose reported ``loss`` is NaN: training diverged."""

    def step(self, sample):
        result = super().step(sample)
        result.stats["loss"] = float("nan")
        return result


def test_a_diverging_run_stops_with_the_local_one_line(local_ray, tmp_path, caplog,
                                                      monkeypatch):
    """Was: ``RuntimeError: trainer worker failed: FloatingPointError: ...`` without the run or
    its logs, which the runners (that count a ``FloatingPointError`` as a failed trial) let
    end a whole search. Its actors stop at once (the failed trainer is stopped too: its
    ``put`` held an actor's segments, which waited until the run's waits ran out)."""
    from looprl.distributed import placement

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests
    monkeypatch.setattr(placement, "answer_timeout", lambda runtime: 20.0)
    spec = ppo_spec()
    spec.trainer = NaNLossTrainer
    run = DistributedRun(spec, runtime(actors=1, groups=1), frames=10**6, logdir=str(tmp_path),
                         quiet=True, name="nanppo")
    with pytest.raises(FloatingPointError) as raised, caplog.at_level(logging.WARNING):
        run.run()
    assert "did not stop" not in caplog.text, caplog.text
    message = str(raised.value)
    assert message.startswith("nanppo: Training diverged at frame ")
    assert "returned non-finite ['loss']" in message and len(message.splitlines()) == 1
    assert message.endswith(f" Logs until then: {run.result.log_dir}")


def test_a_restarted_worker_is_waited_for_as_long_as_placement_timeout(monkeypatch):
    """A worker Ray restarts is placed again: the wait is ``runtime.placement_timeout`` where it
    is longer than 120 s (was: 120 s always, which a loaded machine's restart could exceed)."""
    from types import SimpleNamespace

    from looprl.distributed.placement import Supervisor

    waits: list[float] = []

    def get(ref: object, timeout: float) -> dict[str, int]:
        waits.append(timeout)
        return {"id": 2}

    monkeypatch.setattr(ray, "get", get)
    worker = SimpleNamespace(ready=SimpleNamespace(remote=lambda: None))
    for placement, wait in ((30.0, 120.0), (300.0, 300.0)):
        pool = SimpleNamespace(runtime=runtime(actors=1, placement_timeout=placement),
                               result=None, workers={"trainer": worker})
        assert Supervisor(pool)._wait_restarted(ray, "trainer", former=1) == {"id": 2}
        assert waits[-1] == wait


def test_the_drivers_waits_on_starting_and_stopping_workers_follow_placement_timeout(
        monkeypatch):
    """A worker's answers as it starts and as the run stops are waited for as long as
    ``runtime.placement_timeout`` where it is longer than 120 s (was: 120 s to start, 30 s and
    60 s to stop, whatever it was), and a wait that runs out names the option to raise."""
    from types import SimpleNamespace

    from looprl.distributed.placement import WorkerPool
    from looprl.distributed.run_state import DistributedResult, SampleCounts

    waits: list[float] = []
    answer: list[object] = [[{"steps": 3, "digest": "d"}]]

    def get(ref: object, timeout: float) -> object:
        waits.append(timeout)
        if isinstance(answer[0], Exception):
            raise answer[0]
        return answer[0]

    monkeypatch.setattr(ray, "get", get)
    monkeypatch.setattr(ray, "wait", lambda refs, num_returns, timeout: (waits.append(timeout),
                                                                         (refs, []))[1])
    call = SimpleNamespace(remote=lambda *args: None)
    pool = WorkerPool(ppo_spec(), runtime(actors=1, placement_timeout=300), DistributedResult(),
                      SampleCounts())
    pool.workers = {"trainer": SimpleNamespace(stop=call, digest=call, explore_from=call)}
    pool.runs, pool.schedules = {"trainer": None}, {"trainer": [5]}
    pool.stop()
    assert waits == [300.0, 300.0] and pool.result.train_steps == 3
    answer[0] = ray.exceptions.GetTimeoutError("Get timed out: some object(s) not ready.")
    with pytest.raises(RuntimeError, match=r"^trainer worker failed to start: .*\(no answer "
                                           r"within 300s: .*; raise runtime.placement_timeout\)$"):
        pool.explore_on("trainer")
    assert waits[-1] == 300.0
