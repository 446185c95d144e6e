"""Several trainers synchronized with torch DDP (``runtime.trainers``): the gradient averaging
in two plain processes (gloo, meeting through a rendezvous file, then over tcp; the built-in
policies and a user's ``SingleModelPytorchPolicy``), then a Ray run
with two trainers, one of them killed mid-run, and the bad input."""

from __future__ import annotations

import copy
import logging
import multiprocessing
import os
import pickle
from pathlib import Path

import pytest
import torch

from helpers import LinearPolicy, kill_worker_when
from looprl.agents import PPGTrainer, PPOTrainer
from looprl.agents.dqn import DQNPolicy, DQNTrainer
from looprl.approximation import QNetwork
from looprl.core import NamedArray, Policy, SampleBatch
from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig
from looprl.distributed.trainer_worker import TrainerGroup, rendezvous, tcp_rendezvous

CARTPOLE = {"obs_dim": {"obs": 4}, "action_dim": 2}


def policy(kind: str = "actor-critic-separate") -> Policy:
    return Policy(type_=kind, args={**CARTPOLE, "seed": 0, "lr": 1e-2})


def sample(seed: int, ends: bool, rows: int = 9, streams: int = 6) -> SampleBatch:
    """Random ``[rows, streams]`` CartPole segments; with ``ends``, episodes end at random."""
    g = torch.Generator().manual_seed(seed)
    done = (torch.rand(rows, streams, generator=g) < 0.2) if ends else torch.zeros(
        rows, streams, dtype=torch.bool)
    return SampleBatch(
        obs=NamedArray(obs=torch.randn(rows, streams, 4, generator=g)),
        action=torch.randint(2, (rows, streams), generator=g), done=done,
        reward=torch.randn(rows, streams, generator=g), truncated=torch.zeros_like(done),
        log_prob=-torch.rand(rows, streams, generator=g) - 0.5,
        value=torch.randn(rows, streams, generator=g),
    )


def vector(p: Policy) -> torch.Tensor:
    return torch.nn.utils.parameters_to_vector(p.module.parameters()).detach().clone()


def one_rank(rank: int, init_methods: tuple[str, str], out: str) -> None:
    """Trainer ``rank`` of 2, in a group met through a file: a PPO step, PPG steps on unequal
    valid rows (several minibatches and an auxiliary phase) and a DQN step, each on this
    rank's own samples; then in a group met over ``tcp://`` (``tcp_collectives``)."""
    torch.set_num_threads(1)
    group = TrainerGroup(rank, 2, gpus=False, timeout=180)  # (a loaded machine)
    group.join(init_methods[0])
    results = {}
    ppo = policy()
    trainer = PPOTrainer(ppo, epochs=1, minibatch_size=1000)  # one gradient step
    group.distribute(ppo)
    trainer.step(sample(seed=rank, ends=False))
    results["ppo"] = vector(ppo)
    ppg = policy("actor-critic-auxiliary")
    trainer = PPGTrainer(ppg, n_policy=2, aux_epochs=1, epochs=2, minibatch_size=8)
    group.distribute(ppg)
    for step in range(2):
        trainer.step(sample(seed=10 * step + rank, ends=True))
    results["ppg"], results["aux_phases"] = vector(ppg), trainer.aux_phases
    dqn = Policy(type_="q-network", args={**CARTPOLE, "seed": 0})
    trainer = DQNTrainer(dqn, n_step=3, double_q=True)
    group.distribute(dqn)
    segment = sample(seed=rank, ends=True)
    segment.weight = torch.rand(6).expand(segment.reward.shape[0], 6)
    trainer.step(segment)
    results["dqn"] = vector(dqn)
    results["user"] = user_policy_step(group, rank)
    torch.distributed.destroy_process_group()
    results["tcp"] = tcp_collectives(rank, init_methods[1])
    torch.save(results, out)


def user_policy_step(group: TrainerGroup, rank: int) -> dict:
    """A user's ``SingleModelPytorchPolicy`` in the group (``distributed()``): one backward
    pass through ``net`` on this rank's input; its gradient and what a copy and a pickle of
    the distributed policy are."""
    user = LinearPolicy()
    group.distribute(user)
    user.analyze(torch.full((1, 3), float(rank + 1))).sum().backward()
    group.check_in_sync(user.module)
    return {"grad": user.module.weight.grad.clone(), "wrapped": type(user.net).__name__,
            "copy": type(copy.deepcopy(user).net).__name__,
            "pickle": type(pickle.loads(pickle.dumps(user)).net).__name__,
            "keys": sorted(user.get_checkpoint()["state_dict"])}


def mean_gradient_step() -> torch.Tensor:
    """The parameters after one PPO step on the mean of the two ranks' gradients."""
    gradients = []
    for rank in range(2):
        p = policy()
        trainer = PPOTrainer(p, epochs=1, minibatch_size=1000)
        p.approximation.step = lambda loss=None, p=p: None  # backward only
        trainer.step(sample(seed=rank, ends=False))
        gradients.append([q.grad.clone() for q in p.module.parameters()])
    reference = policy()
    for q, g0, g1 in zip(reference.module.parameters(), *gradients, strict=True):
        q.grad = (g0 + g1) / 2
    reference.approximation.step()
    return vector(reference)


def two_ranks(init_methods: tuple[str, str], tmp_path: Path) -> list[dict]:
    """Run ``one_rank(rank, init_methods, out)``, rank 1 in a spawned process and rank 0 in
    this one (a process's start, importing torch and looprl, costs seconds: one pair serves
    every check); their saved outputs."""
    process = multiprocessing.get_context("spawn").Process(
        target=one_rank, args=(1, init_methods, str(tmp_path / "1.pt")))
    process.start()
    try:
        one_rank(0, init_methods, str(tmp_path / "0.pt"))
    finally:
        if torch.distributed.is_initialized():  # (rank 0 failed halfway: no group left here)
            torch.distributed.destroy_process_group()
        process.join(timeout=360)
        if process.is_alive():
            process.kill()
    assert process.exitcode == 0
    return [torch.load(tmp_path / f"{r}.pt") for r in range(2)]


def tcp_collectives(rank: int, init_method: str) -> dict:
    """Trainer ``rank`` of 2 meeting over ``tcp://``: the collectives a trainer group runs."""
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # the test stays on loopback
    group = TrainerGroup(rank, 2, gpus=False, timeout=180)  # (a loaded machine)
    group.join(init_method)
    torch.manual_seed(0)
    module = torch.nn.Linear(3, 2)
    group.check_in_sync(module)  # equal parameters pass
    torch.nn.init.constant_(module.weight, float(rank))
    try:
        group.check_in_sync(module)
        differ = False
    except ValueError:
        differ = True
    answers = {"agree": group.agree(rank == 0), "differ": differ,
               "gather": group.agree(True, {"hp/lr": 0.5} if rank == 1 else None),
               "share": group.share(b"rank 0" if rank == 0 else None)}
    torch.distributed.barrier()  # rank 0 serves the tcp store: it leaves last
    torch.distributed.destroy_process_group()
    return answers


def test_two_trainers_average_their_gradients_meeting_through_a_file_or_over_tcp(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")  # (tcp_collectives' in this process)
    tcp = tcp_rendezvous("127.0.0.1")
    assert tcp.startswith("tcp://127.0.0.1:") and rendezvous("127.0.0.1").startswith("file://")
    first, second = two_ranks((f"file://{tmp_path / 'rendezvous'}", tcp), tmp_path)
    for key in ("ppo", "ppg", "dqn"):
        assert torch.equal(first[key], second[key]), key  # the ranks stayed in sync
    assert first["aux_phases"] == second["aux_phases"] == 1
    alone = policy()
    PPOTrainer(alone, epochs=1, minibatch_size=1000).step(sample(seed=0, ends=False))
    assert not torch.allclose(first["ppo"], vector(alone), atol=1e-5)  # rank 0 did not step alone
    torch.testing.assert_close(first["ppo"], mean_gradient_step(), rtol=0, atol=1e-6)
    for answers in (first["tcp"], second["tcp"]):
        assert answers == {"agree": (False, []), "share": b"rank 0", "differ": True,
                           "gather": (True, [{"hp/lr": 0.5}])}  # (rank 1's writes on both)
    user = first["user"]  # a user's own policy: its gradients are averaged too
    assert torch.allclose(user["grad"], torch.full((2, 3), 1.5))  # the mean of 1 and 2
    assert torch.equal(user["grad"], second["user"]["grad"])
    assert user["wrapped"] == "DistributedDataParallel"
    assert user["copy"] == user["pickle"] == "Linear"  # copies: the plain network
    assert user["keys"] == ["bias", "weight"]  # no DDP "module." prefix


def test_ddp_looks_for_unused_parameters_only_where_a_loss_leaves_some_out(tmp_path):
    """PPO's and DQN's losses train every parameter of looprl's networks: DDP does not look
    for unused ones (was: always, an extra pass at every step and torch's warning "find_unused_
    parameters=True was specified ... but did not find any unused parameters" in the user's
    console); PPO's loss and PPG's policy phase leave an auxiliary value head out."""
    group = TrainerGroup(0, 1, gpus=False, timeout=60)
    group.join(f"file://{tmp_path / 'rendezvous'}")
    try:
        looked = {}
        for name, made in (("ppo", policy()), ("shared", policy("actor-critic-shared")),
                           ("auxiliary", policy("actor-critic-auxiliary")),
                           ("dqn", Policy(type_="q-network", args={**CARTPOLE, "seed": 0}))):
            group.distribute(made)
            looked[name] = made.approximation._ddp.find_unused_parameters
        user = LinearPolicy()
        group.distribute(user)
        looked["user"] = user.net.find_unused_parameters  # (unknown: DDP looks)
        linear = torch.nn.Linear(4, 2)  # (a user's network)
        own_q = DQNPolicy(QNetwork(linear, torch.optim.Adam(linear.parameters())), 2)
        group.distribute(own_q)
        looked["user q"] = own_q.approximation._ddp.find_unused_parameters
    finally:
        torch.distributed.destroy_process_group()
    assert looked == {"ppo": False, "shared": False, "auxiliary": True, "dqn": False,
                      "user": True, "user q": True}


def test_more_trainers_than_actors_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"^runtime.trainers \(3\) cannot exceed runtime.actors "
                                         r"\(2\): each trainer learns from its own actors$"):
        RuntimeConfig(actors=2, trainers=3)
    with pytest.raises(ValueError, match="gpus_per_trainer >= 1"):
        RuntimeConfig(trainers=2, gpus_per_trainer=0.5)
    assert RuntimeConfig(actors=4, trainers=2, cpus_per_trainer=0.5).reserved_cpus() == 5


def test_looprl_run_accepts_runtime_trainers(tmp_path):
    pytest.importorskip("hydra")
    from hydra import compose, initialize

    from looprl.configs import build_distributed, register

    register()
    with initialize(version_base="1.3", config_path=None):
        cfg = compose("looprl", overrides=["runtime=ray", "runtime.trainers=2"])
    run = build_distributed(cfg, str(tmp_path))
    assert run.runtime.trainers == 2 and run.runtime.actors == 2


def test_two_ddp_trainers_stay_in_sync_and_survive_a_killed_trainer(local_ray, tmp_path, caplog):
    kill_trainer1, killed = kill_worker_when("trainer1", "train_steps", 4)
    caplog.set_level(logging.WARNING, "looprl.distributed")
    spec = AlgorithmSpec(
        env="CartPole-v1", policy="actor-critic-separate", policy_args={**CARTPOLE, "lr": 1e-3},
        trainer="ppo", trainer_args={"epochs": 2, "minibatch_size": 64},
        buffer_args={"batch_streams": 4})
    runtime = RuntimeConfig(actors=2, trainers=2, envs_per_actor=4, segment_length=32,
                            cpus_per_actor=0.5, cpus_per_trainer=0.5, checkpoint_every=2)
    # (a budget the callback ends first: on a loaded machine the kill can land late, and the
    # trainers must still step on after their restart)
    run = DistributedRun(spec, runtime, frames=30_000, logdir=str(tmp_path), quiet=True)

    def callback(run: DistributedRun) -> None:
        kill_trainer1(run)
        if run.result.restarts and run.result.train_steps > killed[0] + 4:
            run.frames = run.result.frames  # both trained on after the restart: done

    result = run.run(callback=callback)
    assert [name for name, _ in result.restarts] == ["trainer1"], caplog.text
    assert "restarting all 2 trainers" in caplog.text
    resumed = [r.getMessage() for r in caplog.records
               if "resumed from its checkpoint" in r.getMessage()]
    step = int(resumed[-1].split()[-1])
    # trainer 0's latest checkpoint (every 2 steps), not a fresh start (a loaded machine may
    # let the trainers step on for a while before the kill lands)
    assert step >= 2 and step % 2 == 0
    steps = result.trainer_steps
    assert len(steps) == 2 and steps[0] == steps[1] > step, steps  # both stepped, together
    assert result.trainers_in_sync  # identical parameters on both ranks
    assert (Path(result.log_dir) / "policy.pt").exists()
