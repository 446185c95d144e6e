"""The Ray runtime on a real local instance (loopback only, started once for this module):
learning, fault tolerance and bad input."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import pytest

from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig

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


def test_ppo_on_two_actors_learns_and_survives_a_killed_actor(local_ray, tmp_path, caplog):
    killed = []

    def kill_an_actor(run: DistributedRun) -> None:
        if not killed and run.result.frames > 6000:
            killed.append(run.result.frames)
            ray.kill(run.workers["actor0"], no_restart=False)

    caplog.set_level(logging.WARNING, "looprl.distributed")
    run = DistributedRun(ppo_spec(), runtime(eval_workers=1),
                         frames=36_000, logdir=str(tmp_path), quiet=True)
    result = run.run(callback=kill_an_actor)
    assert killed and [name for name, _ in result.restarts] == ["actor0"]
    assert "actor0 worker died" in caplog.text
    assert result.frames >= 36_000 and result.train_steps > 10
    assert result.mean_return(20) > 150, result.mean_return(20)  # random play: ~22
    assert len(result.eval_returns) >= 5  # the evaluation worker played with new parameters
    assert max(result.eval_returns) > 150, result.eval_returns
    log_dir = Path(result.log_dir)
    rows = (log_dir / "results.csv").read_text().splitlines()
    assert len(rows) == len(result.returns) + 1  # every episode reported is in results.csv
    for name in ("returns100.csv", "losses.csv", "throughput.csv", "policy.pt"):
        assert (log_dir / name).exists(), name
    throughput = (log_dir / "throughput.csv").read_text().splitlines()
    assert throughput[0].startswith("time,worker,frames_per_s") and len(throughput) > 4


def test_a_killed_trainer_resumes_from_its_checkpoint(local_ray, tmp_path, caplog):
    killed = []

    def kill_the_trainer(run: DistributedRun) -> None:
        if not killed and run.result.train_steps >= 4:
            killed.append(run.result.train_steps)
            ray.kill(run.workers["trainer"], no_restart=False)

    caplog.set_level(logging.WARNING, "looprl.distributed")
    run = DistributedRun(ppo_spec(), runtime(checkpoint_every=2), frames=10_000,
                         logdir=str(tmp_path), quiet=True)
    result = run.run(callback=kill_the_trainer)
    assert [name for name, _ in result.restarts] == ["trainer"]
    resumed = [r.getMessage() for r in caplog.records if "resumed from its checkpoint" in
               r.getMessage()]
    assert resumed, caplog.text
    step = int(resumed[-1].split()[-1])
    assert 2 <= step <= killed[0] + 2  # the latest checkpoint, not a fresh start
    assert result.train_steps > step  # and it trained on
    assert (Path(result.log_dir) / "trainer_checkpoint.pt").exists()


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
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="actor0 worker failed: .*returned 3 actions for a "
                                           "request of 4 rows"):
        DistributedRun(spec, runtime(groups=1), frames=10**6, logdir=None, quiet=True).run()
    assert time.perf_counter() - start < 60


def test_looprl_run_with_runtime_ray_trains_ape_x_dqn_through_a_policy_worker(local_ray, tmp_path):
    """``looprl run algorithm=dqn runtime=ray``: the preset's hyperparameters on Ray workers
    (Ape-X: an epsilon per actor, prioritized segments; a policy worker batching both actors'
    requests), then a local evaluation."""
    import json

    from looprl.configs.app import main

    code = main(["algorithm=dqn", "runtime=ray", "runtime.actors=2", "runtime.envs_per_actor=2",
                 "runtime.policy_workers=1",
                 "algorithm.replay_start_size=200", "algorithm.hidden=32", "frames=1500",
                 "test_episodes=2", "logging.quiet=true", f"hydra.run.dir={tmp_path}"])
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["train"]["frames"] >= 1500 and results["train"]["train_steps"] > 0
    assert len(results["eval"]["returns"]) == 2
    run_dir = tmp_path / "dqn" / "CartPole-v1"
    assert (run_dir / "throughput.csv").exists() and (run_dir / "policy.pt").exists()
    assert "td" in (run_dir / "losses.csv").read_text()
    rows = [line.split(",") for line in (run_dir / "throughput.csv").read_text().splitlines()]
    batch_rows = [float(row[5]) for row in rows[1:] if row[5]]
    # 2 envs in 2 groups: 1 row per request; more rows per rollout = requests batched together
    assert batch_rows and max(batch_rows) > 1.2, batch_rows
