"""The local checks before a distributed run (no Ray): ``test_pipeline`` and bad input."""

from __future__ import annotations

import logging
import math
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from looprl.agents import PPOTrainer
from looprl.agents.actor import Actor
from looprl.core import Policy, register_policy
from looprl.distributed import (
    AlgorithmSpec,
    DistributedRun,
    EnvRunner,
    RolloutSizeError,
    RuntimeConfig,
    test_pipeline,
)
from looprl.distributed.controller import _resumed_state
from looprl.distributed.run_state import DistributedResult, RunMonitor, SampleCounts

CARTPOLE = {"obs_dim": {"obs": 4}, "action_dim": 2}


def _checkpointed_run(logdir, done: int = 0, spec: AlgorithmSpec | None = None) -> str:
    """A run directory in ``logdir`` (its path) of ``spec`` (``ppo_spec()``) whose controller
    checkpoint says ``done`` frames."""
    from looprl.distributed.run_state import ControllerCheckpoint

    run = DistributedRun(spec or ppo_spec(), RuntimeConfig(actors=1), logdir=str(logdir),
                         quiet=True)
    counts = run._open_logs()
    run.result.frames = done
    ControllerCheckpoint(2, run._log, run.result, counts).save(final=True)
    run.close()
    return run.result.log_dir


def ppo_spec(**kwargs) -> AlgorithmSpec:
    return AlgorithmSpec(**{"env": "CartPole-v1", "policy": "actor-critic-separate",
                            "policy_args": CARTPOLE, "trainer": "ppo",
                            "trainer_args": {"epochs": 2}, "buffer_args": {"batch_streams": 4},
                            **kwargs})


def test_pipeline_runs_a_ppo_policy_and_trainer() -> None:
    from helpers import leaves_global_random_numbers

    report = leaves_global_random_numbers(  # (was: reseeded, a notebook's sweep drew the
        lambda: test_pipeline(ppo_spec(), episodes=5, segment_length=16, seed=0))  # same again)
    assert report.train_steps >= 1 and len(report.episodes) >= 5
    assert {"policy", "value", "approx_kl"} <= set(report.stats), report.stats
    assert report.frames == pytest.approx(sum(report.episodes), abs=64)  # CartPole: 1 per step


class NaNStatTrainer(PPOTrainer):
    """A PPO trainer whose reported ``value_loss`` is NaN (its own loss, not an
    ``Approximation``'s, which would stop first)."""

    def step(self, sample):
        result = super().step(sample)
        result.stats["value_loss"] = float("nan")
        return result


def test_a_non_finite_stat_stops_the_learner_in_one_line() -> None:
    """The ``Learner`` (every runtime's: the local agents', the trainer worker's and
    ``test_pipeline``'s) stops at the first NaN stat and names it."""
    with pytest.raises(FloatingPointError) as error:
        test_pipeline(ppo_spec(trainer=NaNStatTrainer), episodes=1)
    assert str(error.value) == ("trainer NaNStatTrainer returned non-finite ['value_loss'] at "
                                "step 1: training diverged; try a lower learning rate or "
                                "gradient clipping.")


def test_pipeline_runs_a_dqn_pair_with_prioritized_replay() -> None:
    spec = AlgorithmSpec(env="CartPole-v1", policy="q-network",
                         policy_args={**CARTPOLE, "target_update": 10},
                         trainer="dqn", trainer_args={"n_step": 3, "double_q": True},
                         buffer_args={"batch": 8, "size": 400}, explorations=[0.5])
    report = test_pipeline(spec, episodes=3, segment_length=4, seed=0)
    assert report.train_steps >= 1 and "td" in report.stats


def test_one_dqn_trainer_serves_the_local_agent_and_the_pipeline() -> None:
    """Ape-X is an option of DQN (``apex=True``): the class the local preset trains with
    (prioritized replay, priorities fed back) is the trainer the pipeline (and the Ray
    trainer worker) runs for the Ape-X preset, on the same local replay buffer class."""
    from looprl.agents.dqn import DQNTrainer
    from looprl.distributed import AlgorithmSpec
    from looprl.distributed.pipeline import trainer_core
    from looprl.environments import GymEnvironment
    from looprl.experiments import make_experiment
    from looprl.memory import PrioritizedReplayBuffer
    from looprl.policies import apex_epsilons
    from looprl.presets.classic_control import dqn

    env = GymEnvironment("CartPole-v1")
    preset = dqn.env(env).device("cpu").hyperparameters(
        buffer="prioritized", update="double_q", replay_start_size=64, update_frequency=8,
        gradient_steps=2).build()
    experiment = make_experiment(preset, env, train_steps=300, logdir="/tmp/looprl-test",
                                 quiet=True,
                                 verbose=False)
    experiment.train(frames=300)
    agent = experiment.agent
    local = type(agent.trainer)
    assert local is DQNTrainer and agent.trainer.steps > 0
    assert isinstance(agent.replay_buffer, PrioritizedReplayBuffer)
    assert agent.replay_buffer.max_priority != 1.0  # the trainer's priorities came back
    apex = dqn.env(env).device("cpu").hyperparameters(  # Ape-X: the DQN preset's option
        apex=True, n_steps=3, update="double_q", replay_start_size=64, minibatch_size=8,
        replay_buffer_size=400).build()
    spec, _ = AlgorithmSpec.of_preset(apex, frames=1000, actors=2)
    assert spec.explorations == apex_epsilons(2)
    core = trainer_core(spec)
    assert type(core.trainer) is local and type(core.buffer) is PrioritizedReplayBuffer
    assert core.buffer.n_step == 3 and core.trainer.update == "double_q"
    assert test_pipeline(spec, episodes=2, segment_length=4, seed=0).train_steps >= 1


def test_pipeline_learns_cartpole() -> None:
    """The same loop as the Ray workers, in one process, learns (random play: ~22)."""
    spec = ppo_spec()
    spec.policy_args = {**CARTPOLE, "lr": 1e-3}
    spec.trainer_args = {"epochs": 4, "minibatch_size": 128, "entropy_coef": 0.0}
    spec.buffer_args = {"batch_streams": 8}
    report = test_pipeline(spec, episodes=10**6, max_frames=30_000, n_envs=8, segment_length=32)
    assert report.mean_return > 150, report.mean_return


class WrongSize:
    """A policy answering one row fewer than asked."""

    default_policy_state = None
    version = 0

    def __init__(self, **_):
        from looprl.core import Policy

        self.inner = Policy(type_="actor-critic-separate", args=CARTPOLE)

    def rollout(self, request):
        return self.inner.rollout(request)[:-1]


def test_a_rollout_of_the_wrong_batch_size_is_one_line() -> None:
    runner = EnvRunner("CartPole-v1", n_envs=3)
    request = runner.request(0)
    with pytest.raises(RolloutSizeError, match="returned 2 actions for a request of 3 rows"):
        runner.step(0, WrongSize().rollout(request))


def test_the_last_seed_seeds_every_env_copy() -> None:
    """Copy ``i`` is seeded with ``seed + i``: with the last seed (2**32 - 1) copy 1's seed
    was past every seed's range, a ValueError naming a seed the user never gave."""
    from looprl.environments.base import wrapped_seed

    last = 2**32 - 1
    runner = EnvRunner("CartPole-v1", n_envs=2, segment_length=None, seed=last)
    alone = EnvRunner("CartPole-v1", n_envs=1, segment_length=None, seed=wrapped_seed(last + 1))
    assert np.array_equal(runner.request(0).obs["obs"][1], alone.request(0).obs["obs"][0])


def test_a_rollout_whose_memory_or_outputs_miss_rows_is_one_line() -> None:
    """A recurrent policy answering with one memory for every row (its default_policy_state),
    no memory, or no RolloutResult: one line (was: the memory broadcast to every row, or NaN
    memory, silently; or an AttributeError)."""
    from tests.distributed.seed004_user import MyGRUPolicy, SignPair

    policy = MyGRUPolicy()
    runner = EnvRunner(SignPair, n_envs=2, default_policy_state=policy.default_policy_state)
    answer = policy.rollout(runner.request(0))

    def changed(**fields):
        bad = answer.clone()
        for name, value in fields.items():
            bad.__dict__[name] = value  # (behind its back: setting it checks the rows too)
        return bad

    answers = {
        "returned 1 rows of policy_state for a request of 4 rows": changed(
            policy_state=policy.default_policy_state),
        "returned 1 rows of log_prob": changed(log_prob=answer.log_prob[:1]),
        "returned no policy_state": changed(policy_state=None),
        r"policy_state rows of shape \{'hx': \(1, 1, 3\)\}, but default_policy_state's are "
        r"\{'hx': \(1, 1, 16\)\}": changed(policy_state=type(answer.policy_state)(
            hx=answer.policy_state.hx[..., :3])),
        r"rows of shape \{'hx': \(1, 16\)\}, but default": changed(
            policy_state=type(answer.policy_state)(hx=answer.policy_state.hx[:, 0])),
        "returned a NoneType; return a looprl.core.RolloutResult": None,
    }
    for message, bad in answers.items():
        runner.request(0)
        with pytest.raises((ValueError, TypeError), match=message):
            runner.step(0, bad)
    runner.request(0)
    runner.step(0, answer)  # the right answer still steps


def test_a_default_policy_state_that_is_no_memory_is_one_line() -> None:
    """A dict (was: an object array the rollout met as an AttributeError) or a list."""
    for default, kind in (({"hx": np.zeros((1, 8))}, "dict"), ([0.0, 0.0], "list")):
        with pytest.raises(TypeError, match=rf"^default_policy_state is a {kind}; return one "
                           r"row's memory as a NamedArray \(NamedArray\(hx=\.\.\.\), "
                           r"NamedArray\.from_dict"):
            EnvRunner("CartPole-v1", n_envs=2, default_policy_state=default)


def test_a_rollout_value_of_several_numbers_per_row_is_one_line_to_ppo() -> None:
    """PPO's GAE takes one value per row (was: a torch size error deep in training)."""
    class TwoValues(Policy):
        def __new__(cls, **args):
            policy = Policy(type_="actor-critic-separate", args=CARTPOLE)
            rollout = policy.rollout

            def wide(requests, **kwargs):
                answer = rollout(requests, **kwargs)
                answer.value = torch.stack([answer.value, answer.value], 1)
                return answer
            policy.rollout = wide
            return policy

    with pytest.raises(ValueError, match=r"^PPOTrainer takes one value per row, but the "
                       r"policy's rollout gave rows of shape \(2,\): return "
                       r"RolloutResult\(value=\.\.\.\) of shape \[rows\]$"):
        test_pipeline(ppo_spec(policy=TwoValues, policy_args={}), episodes=1,
                      segment_length=8, max_frames=200)


def test_a_specs_parts_of_the_wrong_kind_are_one_line() -> None:
    """AlgorithmSpec checks what each part is, and test_pipeline what it is given (was: an int
    policy or a list env_args accepted until deep in a run; a dict spec a dataclasses error)."""
    bad = {"policy": (5, r"^AlgorithmSpec policy must be a registered name, a factory or a "
                         r"looprl.core.Policy, got an int$"),
           "env": (5, r"^AlgorithmSpec env must be a registered environment name or a "
                      r"Gymnasium id \(a str\), got an int$"),
           "trainer": (None, r"^AlgorithmSpec trainer must be a registered name or a factory "
                             r"of the policy \(e.g. a Trainer class\), got None: "),
           "env_args": ([1], r"^AlgorithmSpec env_args must be a dict of keyword arguments "
                             r"\(env_args=\{'key': value\}\), got a list$"),
           "trainer_args": ("epochs=2", "trainer_args must be a dict .*, got a str$"),
           "buffer_args": (dict, "buffer_args must be a dict .*, got a type$")}
    for field, (value, message) in bad.items():
        with pytest.raises(TypeError, match=message):
            ppo_spec(**{field: value})
    with pytest.raises(TypeError, match=r"env must be .* \(a str\), got a type$"):
        ppo_spec(env=SimpleNamespace)  # (a class: registered by a name, which the spec takes)
    with pytest.raises(TypeError, match=r"^test_pipeline takes an AlgorithmSpec, got a dict; "
                                        r"pass AlgorithmSpec\(env=\.\.\., "):
        test_pipeline({"env": "CartPole-v1"})
    with pytest.raises(TypeError, match=r"^test_pipeline got an unknown keyword 'trainr_args': "
                                        r"it takes AlgorithmSpec's fields .* Did you mean "
                                        r"'trainer_args'\?$"):
        test_pipeline(env="CartPole-v1", policy="actor-critic-separate", trainer="ppo",
                      trainr_args={})
    with pytest.raises(TypeError, match=r"^test_pipeline needs trainer \(an AlgorithmSpec"):
        test_pipeline(env_name="CartPole-v1", policy_name="actor-critic-separate")


def test_an_action_outside_an_srl_environments_discrete_space_is_one_line() -> None:
    """A policy of 7 actions (``action_dim=7``) on an SRL environment of ``Discrete(2)``, or a
    rollout giving a fraction: was sent to the environment (which took it without a word)."""
    from tests.distributed.seed004_user import MyGRUPolicy, SignPair

    from looprl.environments.faults import PolicyActionError

    policy = MyGRUPolicy()
    runner = EnvRunner(SignPair, n_envs=2, default_policy_state=policy.default_policy_state)
    answer = policy.rollout(runner.request(0))
    for action, shown in ((np.array([0, 1, 6, 1]), "6"), (np.array([0.5, 1.0, 0.0, 1.0]), "0.5"),
                          (np.array([0, -1, 1, 1]), "-1")):
        bad = answer.clone()
        bad.action = action
        runner.request(0)
        with pytest.raises(PolicyActionError, match=rf"^SignPair: the policy gave agent [01] the "
                           rf"action {shown}, not one of its action space Discrete\(2\) \(the "
                           r"whole numbers 0\.\.1\)"):
            runner.step(0, bad)
    runner.request(0)
    runner.step(0, answer)  # the policy's own actions still step
    pipeline = ppo_spec(env="tests.distributed.seed004_user:SignPair",
                        policy_args={"obs_dim": {"obs": 1}, "action_dim": 7})
    with pytest.raises(PolicyActionError, match="give the policy as many actions as the "):
        test_pipeline(pipeline, episodes=1, segment_length=8)


def test_a_trainer_instance_in_the_spec_is_one_line() -> None:
    """The seed builds ``Trainer(type_=..., policy=...)``; the spec needs its name or class
    (was: 'unknown trainer <looprl.agents.ppo.PPOTrainer object at 0x...>')."""
    policy = Policy(type_="actor-critic-separate", args=CARTPOLE)
    trainer = PPOTrainer(policy)
    with pytest.raises(TypeError, match="trainer must be a registered name or a factory of the "
                                        "policy .e.g. a Trainer class., got a PPOTrainer"):
        AlgorithmSpec(env="CartPole-v1", policy=policy, trainer=trainer)
    with pytest.raises(TypeError, match="got a PPOTrainer"):
        test_pipeline(env="CartPole-v1", policy=policy, trainer=trainer)


def _ray_never_starts(monkeypatch) -> None:
    """``ray.init`` fails the test: what it checks comes before Ray (which takes seconds to
    start, or a minute to give up on an address)."""
    ray = pytest.importorskip("ray")
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("Ray was started"))


def test_unknown_names_fail_before_any_worker_starts(monkeypatch) -> None:
    _ray_never_starts(monkeypatch)
    with pytest.raises(KeyError, match="unknown environment 'CartPol-v1'"):
        DistributedRun(AlgorithmSpec(env="CartPol-v1", policy="actor-critic-separate",
                                     trainer="ppo")).run()
    with pytest.raises(ValueError, match="unknown policy 'actor-critic-sep'.*-separate"):
        test_pipeline(AlgorithmSpec(env="CartPole-v1", policy="actor-critic-sep", trainer="ppo"))


def test_an_unreachable_ray_address_is_one_line_without_hanging(monkeypatch) -> None:
    _ray_never_starts(monkeypatch)
    with pytest.raises(ConnectionError, match="cannot reach a Ray cluster at '127.0.0.1:1'"):
        DistributedRun(ppo_spec(), RuntimeConfig(address="127.0.0.1:1"), logdir=None).run()


@pytest.mark.parametrize("address", ["head-node", "127.0.0.1:port"])
def test_a_ray_address_without_a_port_is_one_line(address) -> None:
    with pytest.raises(ConnectionError, match=rf"^runtime.address='{address}' is not HOST:PORT "
                                              r"\(the head node's address and port"):
        DistributedRun(ppo_spec(), RuntimeConfig(address=address), logdir=None).run()


def test_runtime_address_auto_follows_ray_address_and_fails_in_one_line(monkeypatch) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")  # Ray's own rule for address="auto"
    with pytest.raises(ConnectionError, match="cannot reach a Ray cluster at '127.0.0.1:1'"):
        DistributedRun(ppo_spec(), RuntimeConfig(address="auto"), logdir=None).run()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_gpus_a_local_instance_lacks_are_one_line_before_ray_starts() -> None:
    ray = pytest.importorskip("ray")
    with pytest.raises(RuntimeError, match=r"^the run reserves 1.5 GPUs and the local Ray "
                                           r"instance has 0: lower runtime.gpus_per_trainer"):
        DistributedRun(ppo_spec(), RuntimeConfig(actors=1, gpus_per_trainer=1, policy_workers=1,
                                                 gpus_per_policy=0.5),
                       logdir=None, quiet=True).run()
    assert not ray.is_initialized()  # found without starting an instance


def test_a_policy_device_in_the_spec_is_one_line() -> None:
    """Ray workers compute on the GPUs they reserve, not on a device the spec names."""
    spec = ppo_spec()
    spec.policy_args = {**CARTPOLE, "device": "cuda"}
    with pytest.raises(ValueError, match=r"^policy_args device='cuda': on Ray, each worker "
                                         r"computes on the GPUs it reserves; .*gpus_per_trainer"):
        DistributedRun(spec, logdir=None).run()


def test_a_trainer_checkpoint_from_another_kind_of_device_is_refused() -> None:
    """A trainer saved on the CPU does not silently replace one built on a GPU (``meta``
    stands in for CUDA here), nor the other way round."""
    from looprl.agents.learner import Learner, make_learner
    from looprl.core import Trainer

    def core() -> Learner:
        policy = Policy(type_="actor-critic-separate", args=CARTPOLE)
        return make_learner(Trainer(type_="ppo", policy=policy))

    saved = core().state_dict()
    core().load_state_dict(saved)  # the same device: fine
    fresh = core()
    fresh.policy.module.to("meta")
    with pytest.raises(ValueError, match="the checkpoint's trainer trained on cpu and this one "
                                         "runs on meta: resume with the first run's runtime."
                                         "gpus_per_trainer"):
        fresh.load_state_dict(saved)


def test_a_trainer_checkpoint_holds_the_meta_components_of_its_update_hooks() -> None:
    """A Ray trainer restarted (or a run resumed) from its checkpoint goes on with the state of
    its components: the schedule's position, RND's trained predictor (was: started anew)."""
    from looprl.distributed.pipeline import trainer_core
    from looprl.meta import RND, CosineLRSchedule

    spec = ppo_spec(meta=[CosineLRSchedule(initial_lr=1e-3, period=100), RND(obs_shape=(4,))])
    core = trainer_core(spec, seed=0)
    schedule, rnd = core.hooks.stack
    schedule.updates = core.updates = 37
    torch.nn.init.zeros_(rnd.rnd_net.predictor[-1].weight)
    fresh = trainer_core(spec, seed=0)
    fresh.load_state_dict(core.state_dict())
    assert fresh.hooks.stack.components[0].updates == fresh.hooks.metrics["update"] == 37
    assert torch.equal(fresh.hooks.stack.components[1].rnd_net.predictor[-1].weight,
                       torch.zeros_like(rnd.rnd_net.predictor[-1].weight))


def test_sample_counts_survive_trainer_restarts() -> None:
    """The run's received/dropped counts (``throughput.csv``) keep what trainers counted
    before they died: a restarted trainer starts from its checkpoint's counts, or zero."""
    counts = SampleCounts()

    def poll(polled: dict[str, tuple[int, int]]) -> tuple[int, int]:
        for name, (received, dropped) in polled.items():
            counts.polled(name, received, dropped)
        return counts.total(["trainer", "trainer1"])

    assert poll({"trainer": (10, 1), "trainer1": (12, 2)}) == (22, 3)
    counts.started("trainer", (8, 1))  # its checkpoint's counts
    counts.started("trainer1", (0, 0))
    assert poll({"trainer": (9, 1), "trainer1": (3, 0)}) == (9 + 2 + 3 + 12, 1 + 0 + 0 + 2)
    assert poll({"trainer": (11, 1)}) == (11 + 2 + 3 + 12, 3)  # trainer1 missed this poll
    # a resumed run (a new controller) continues the counts its controller checkpoint holds
    counts = SampleCounts(counts.saved())
    counts.started("trainer", (8, 1))  # placed, from its checkpoint
    counts.started("trainer1", (0, 0))
    assert poll({"trainer": (9, 1), "trainer1": (1, 0)}) == (13 - 8 + 9 + 15 + 1, 1 - 1 + 1 + 2)


def test_a_resumed_run_whose_directory_moved_goes_on_where_it_is_now(tmp_path) -> None:
    """The workers (the trainer's checkpoint, ``policy.pt``) use ``result.log_dir``: the run
    directory where it is now, as the logger does, not where the first run wrote it."""
    import shutil


    _checkpointed_run(tmp_path / "a")
    shutil.move(tmp_path / "a", tmp_path / "b")
    resumed = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), logdir=str(tmp_path / "b"),
                             quiet=True, resume_from=str(tmp_path / "b"))
    resumed._resume(_resumed_state(resumed))
    resumed.close()
    assert resumed.result.log_dir == resumed.logger.log_dir
    assert resumed.result.log_dir.startswith(str(tmp_path / "b"))


def test_a_resumed_runs_frames_per_second_count_the_frames_since_it_resumed(tmp_path) -> None:
    """(Was: all of the run's frames over the seconds since it resumed: a run resumed at frame
    2,001 of 2,000 said "2001 frames at 99779 frames/s", in ``results.json`` too.)"""

    _checkpointed_run(tmp_path, 500)
    resumed = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), logdir=str(tmp_path),
                             quiet=True, resume_from=str(tmp_path))
    resumed._resume(_resumed_state(resumed))
    resumed.close()
    resumed.result.frames, resumed.result.seconds = 700, 2.0
    assert resumed.result.frames_per_second == 100.0


class HeldCheckpoint:
    """The server's ``trainer_checkpoint(steps)``: the ``held`` one if taken at ``steps`` or
    later; ``asked``: the steps of each call."""

    def __init__(self, held=None) -> None:
        self.held, self.asked = held, []

    def __call__(self, steps: int):
        self.asked.append(steps)
        return self.held if self.held is not None and self.held[0] >= steps else None


def test_checkpoint_every_saves_past_each_multiple_of_frames_and_keeps_the_latest(
        tmp_path) -> None:
    """(Was: ``checkpoint_every`` and ``keep_checkpoints`` were one line on Ray, which wrote its
    checkpoint at every trainer checkpoint instead, ``runtime.checkpoint_every`` trainer steps.)
    The controller saves at the first poll past each multiple of ``checkpoint_every`` env steps,
    once trainer 0 has checkpointed after the request (asked again at each poll until then: a
    restarted trainer forgot it); ``keep_checkpoints`` keeps the latest pairs numbered by frame,
    as a local run's ``checkpoint_<frame>.pt``; a resumed run counts on from its frames; without
    ``checkpoint_every`` there are none, as locally."""
    from looprl.distributed.run_state import (
        CONTROLLER_CHECKPOINT,
        TRAINER_CHECKPOINT,
        ControllerCheckpoint,
    )
    from looprl.experiments.checkpoint import load_checkpoint, numbered_checkpoints

    run = DistributedRun(ppo_spec(), RuntimeConfig(actors=1, checkpoint_every=None),
                         logdir=str(tmp_path), quiet=True, checkpoint_every=100,
                         keep_checkpoints=2)
    counts = run._open_logs()
    trainer, requests = HeldCheckpoint((1, b"step 1")), []
    saver = ControllerCheckpoint(run.checkpoint_every, run._log, run.result, counts,
                                 trainer=trainer, keep=run.keep_checkpoints,
                                 request=lambda: requests.append(run.result.train_steps))
    run_dir = Path(run._log.log_dir)
    for frames, steps, held in ((60, 2, None), (120, 3, None), (130, 4, None),
                                (140, 5, (4, b"step 4")), (190, 7, None), (250, 9, (9, b"9")),
                                (260, 10, (10, b"10")), (350, 11, (10, b"10")),
                                (420, 13, (12, b"step 12"))):
        run.result.frames, run.result.train_steps = frames, steps
        trainer.held = held or trainer.held
        saver.save()
        if frames == 140:
            assert (run_dir / TRAINER_CHECKPOINT).read_bytes() == b"step 4"
    run.close()
    assert requests == [3, 4, 9, 11]  # (at each poll until one is taken after step 3's)
    assert trainer.asked == [4, 4, 4, 10, 10, 12, 12]
    assert (run_dir / TRAINER_CHECKPOINT).read_bytes() == b"step 12"
    assert list(numbered_checkpoints(run_dir, "controller_checkpoint")) == [260, 420]
    assert list(numbered_checkpoints(run_dir, "trainer_checkpoint")) == [260, 420]
    assert (run_dir / "trainer_checkpoint_260.pt").read_bytes() == b"10"
    assert (run_dir / CONTROLLER_CHECKPOINT).is_file()
    resumed = ControllerCheckpoint(100, run._log, run.result, counts, trainer=trainer)
    run.result.frames, run.result.train_steps, trainer.held = 490, 14, (14, b"step 14")
    resumed.save()  # (420 was saved: the next multiple is 500)
    assert (run_dir / TRAINER_CHECKPOINT).read_bytes() == b"step 12"
    run.result.frames, run.result.train_steps, trainer.held = 510, 15, (16, b"step 16")
    resumed.save()
    assert (run_dir / TRAINER_CHECKPOINT).read_bytes() == b"step 16"
    run.result.frames = 10_000
    ControllerCheckpoint(None, run._log, run.result, counts, trainer=trainer).save(final=True)
    assert load_checkpoint(run_dir / CONTROLLER_CHECKPOINT).result.frames == 510  # (none)
    with pytest.raises(ValueError, match="keep_checkpoints=2 keeps the checkpoints "
                       "checkpoint_every saves: set checkpoint_every too"):
        DistributedRun(ppo_spec(), logdir=str(tmp_path), keep_checkpoints=2)
    with pytest.raises(ValueError, match="checkpoint_every needs a logdir"):
        DistributedRun(ppo_spec(), logdir=None, checkpoint_every=100)


def test_a_resumed_ray_run_keeps_its_checkpoint_every_as_a_runners(tmp_path) -> None:
    """As ``OnlineRunner.resume``: a resume without ``checkpoint_every`` goes on with the run's;
    another is one line before Ray starts (was: a Python resume dropped it silently)."""
    from looprl.distributed.run_state import ControllerCheckpoint

    run = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), frames=1_000,
                         logdir=str(tmp_path), quiet=True, checkpoint_every=100)
    counts = run._open_logs()
    run.result.frames = 500
    ControllerCheckpoint(run.checkpoint_every, run._log, run.result, counts).save(final=True)
    run.close()

    def resumed(every: int | None) -> DistributedRun:
        return DistributedRun(ppo_spec(), RuntimeConfig(actors=1), frames=1_000,
                              logdir=str(tmp_path), quiet=True, resume_from=str(tmp_path),
                              checkpoint_every=every)

    for every in (None, 100):
        again = resumed(every)
        _resumed_state(again)
        assert again.checkpoint_every == 100
    with pytest.raises(ValueError, match=r"was run with another config \(checkpoint_every: "
                                         r"100 -> 50\); resume it with its own"):
        _resumed_state(resumed(50))


def test_a_ray_resume_past_the_planned_budget_says_its_schedules_stay_at_their_end(
        tmp_path, caplog) -> None:
    """As a local run's: ``looprl run --resume DIR frames=N`` of a Ray PPO run past its budget
    trained on at a learning rate of 0, silently."""
    from looprl.distributed.run_state import ControllerCheckpoint

    run = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), frames=1_000,
                         logdir=str(tmp_path), quiet=True)
    counts = run._open_logs()
    run.result.frames = 500
    ControllerCheckpoint(2, run._log, run.result, counts, budget=1_000).save(final=True)
    run.close()
    caplog.set_level(logging.WARNING, "looprl")
    for frames in (1_000, 1_500):
        resumed = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), frames=frames,
                                 logdir=str(tmp_path), quiet=True, resume_from=str(tmp_path))
        resumed._resume(_resumed_state(resumed))
        resumed.close()
    assert caplog.text.count("goes past the") == 1 and (
        "Training to 1500 frames goes past the 1000 its schedules" in
        caplog.text and "start a new run with frames=1500" in caplog.text), caplog.text


def test_resuming_a_finished_run_is_the_clis_one_line(tmp_path, monkeypatch) -> None:
    """``looprl run --resume`` of a finished run was refused; ``DistributedRun(...,
    resume_from=...)`` of one went on to evaluate it again. Both share ``check_unfinished``,
    which ``run`` calls before Ray starts (was: after, seconds later)."""
    from looprl.distributed import controller

    _checkpointed_run(tmp_path, 1_004)
    resumed = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), frames=1_000,
                             logdir=str(tmp_path), quiet=True, resume_from=str(tmp_path))
    monkeypatch.setattr(controller, "start_ray", lambda runtime: pytest.fail("Ray started"))
    with pytest.raises(ValueError, match=rf"^{tmp_path}'s checkpoint is at frame 1004, past "
                                         r"the 1000 frames asked for: nothing to resume; give "
                                         r"a larger budget"):
        resumed.run()


def test_a_run_stopped_in_its_final_evaluation_resumes_to_evaluate_from_the_cli(
        tmp_path) -> None:
    """A Ray run steps a little past its budget (several env copies), so one interrupted in
    its final evaluation had a checkpoint past the budget and a resume was refused ("at frame
    4005, past the 4000 frames asked for"): its evaluation could never be made. With
    ``evaluate_at_budget`` (``looprl run --resume``, whose results.json says whether the run was
    evaluated) and the final policy saved, the resume trains no more and goes on to evaluate;
    without the final policy, or from Python, it is the one line still."""
    log_dir = _checkpointed_run(tmp_path, 1_004)

    def resumed(evaluate: bool) -> DistributedRun:
        run = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), frames=1_000,
                             logdir=str(tmp_path), quiet=True, resume_from=str(tmp_path))
        run.evaluate_at_budget = evaluate
        return run

    for evaluate in (False, True):  # (no policy.pt: stopped before the end of training)
        with pytest.raises(ValueError, match="past the 1000 frames asked for: nothing to resume"):
            _resumed_state(resumed(evaluate))
    (Path(log_dir) / "policy.pt").write_bytes(b"")
    with pytest.raises(ValueError, match="nothing to resume"):
        _resumed_state(resumed(False))
    assert _resumed_state(resumed(True)).result.frames == 1_004


def test_resuming_without_the_trainer_checkpoint_is_one_line_before_ray_starts(
        tmp_path) -> None:
    """(Was: the run went on silently with a new, untrained trainer.) A checkpoint taken
    before the trainer handed one over (train step 0) resumes without it."""
    from looprl.distributed.run_state import ControllerCheckpoint

    run = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), logdir=str(tmp_path), quiet=True)
    counts = run._open_logs()
    run.result.frames, run.result.train_steps = 500, 4
    trainer = (b"weights", 4)
    ControllerCheckpoint(2, run._log, run.result, counts,
                         trainer=lambda steps: (trainer[1], trainer[0])).save(final=True)
    run.close()

    def resumed() -> DistributedRun:
        return DistributedRun(ppo_spec(), RuntimeConfig(actors=1), frames=1_000,
                              logdir=str(tmp_path), quiet=True, resume_from=str(tmp_path))

    assert _resumed_state(resumed()).checkpoint_steps == 4
    (Path(run.result.log_dir) / "trainer_checkpoint.pt").unlink()
    with pytest.raises(FileNotFoundError, match=r"trainer_checkpoint.pt is missing: the run "
                                                r"would go on from frame 500 with a new, "
                                                r"untrained trainer"):
        _resumed_state(resumed())
    _checkpointed_run(tmp_path / "untrained", 500)  # (no trainer checkpoint: step 0)
    assert _resumed_state(DistributedRun(
        ppo_spec(), RuntimeConfig(actors=1), frames=1_000, logdir=str(tmp_path / "untrained"),
        quiet=True, resume_from=str(tmp_path / "untrained"))).checkpoint_steps == 0


def test_a_run_again_after_ray_failed_to_start_resumes_with_the_same_seeds(
        tmp_path, monkeypatch) -> None:
    """(Was: the resume was applied before Ray started: ``run()`` again after a failed start
    added the resumed frames to the seed a second time, other env seeds than the first try's.)"""
    from looprl.distributed import controller

    _checkpointed_run(tmp_path, 500)
    resumed = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), frames=1_000, seed=7,
                             logdir=str(tmp_path), quiet=True, resume_from=str(tmp_path))

    def no_ray(runtime):
        raise ConnectionError("no cluster")

    def not_placed(*args):
        raise RuntimeError("not placed")

    monkeypatch.setattr(controller, "start_ray", no_ray)
    with pytest.raises(ConnectionError):
        resumed.run()
    monkeypatch.setattr(controller, "start_ray", lambda runtime: False)
    monkeypatch.setattr(controller, "WorkerPool", not_placed)
    with pytest.raises(RuntimeError, match="^not placed$"):
        resumed.run()
    assert resumed.seed == 7 + 500 and resumed.result.frames == 500


def test_resuming_another_algorithms_run_is_one_line(tmp_path) -> None:
    """(Was: the trainer loaded a PPO run's checkpoint into a DQN preset's, and the actors
    failed later on the published parameters: "Unexpected key(s) in state_dict".)"""

    _checkpointed_run(tmp_path)
    resumed = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), logdir=str(tmp_path),
                             quiet=True, name="dqn", resume_from=str(tmp_path))
    with pytest.raises(ValueError, match=f"resume_from={tmp_path} holds a run of ppo-ray on "
                       "CartPole-v1, not of dqn on CartPole-v1: resume it with the preset"):
        _resumed_state(resumed)


def test_the_monitor_reports_trainer_0_with_every_trainers_lags_and_counts() -> None:
    counts = SampleCounts()
    monitor = RunMonitor(DistributedResult(), counts, None, ["trainer", "trainer1"])
    stats = {"trainer": {"received": 5, "dropped": 1, "lags": [1], "steps": 3,
                         "meta": {"log/rnd/predictor_loss": 0.5}},
             "trainer1": {"received": 7, "dropped": 0, "lags": [2, 3]},
             "actor0": {"frames": 40, "episodes": [(1.0, 10, 20), (2.0, 10, 40)],
                        "meta": [(20, {"log/plr/seen": 2.0}), (40, {"log/plr/seen": 3.0})],
                        "finished": False}}
    monitor.record(stats, 0.5)
    assert monitor.result.frames == 40 and monitor.result.returns == [1.0, 2.0]
    assert monitor.result.train_steps == 3
    assert monitor.result.meta == {"actor0": {"log/plr/seen": 3.0},  # each actor's curriculum
                                   "trainer": {"log/rnd/predictor_loss": 0.5}}  # update hooks
    assert stats["trainer"]["lags"] == [1, 2, 3]
    assert (stats["trainer"]["received"], stats["trainer"]["dropped"]) == (12, 1)


def test_the_monitor_logs_the_workers_log_keys_as_a_local_run_does(tmp_path) -> None:
    """Every actor's values in one series, each at the run's frame when its episode ended
    (the trainer's at the poll's), under the keys a local run logs; and an hp/* row at each
    episode's end: the values its actor sent with it, else (an actor acting through a policy
    worker) the trainer's as last read."""
    from looprl.experiments.logger import ExperimentLogger

    log = ExperimentLogger("ppo", "CartPole-v1", str(tmp_path), verbose=True)
    monitor = RunMonitor(DistributedResult(), SampleCounts(), log, ["trainer"])
    monitor.throughput.path = None  # (no throughput.csv rows: these stats have no timings)
    trainer = {"received": 1, "dropped": 0, "lags": [], "steps": 1,
               "meta": {"log/rnd/predictor_loss": 0.5}, "hp": {"hp/lr": 0.001}}
    monitor.record({"trainer": trainer,
                    "actor0": {"frames": 8, "episodes": [(1.0, 8, 8, (), {"hp/lr": 0.003})],
                               "meta": [(8, {"log/plr/seen": 3.0})], "finished": False},
                    "actor1": {"frames": 8, "episodes": [(1.0, 4, 4, (), {"hp/lr": 0.002})],
                               "meta": [(4, {"log/plr/seen": 1.0})], "finished": False}}, 0.5)
    monitor.record({"trainer": trainer, "actor0": {"frames": 4, "episodes": [(1.0, 4, 4)],
                                                   "finished": False}}, 0.5)
    log.close()
    run = tmp_path / "ppo" / "CartPole-v1"
    rows = (run / "log.csv").read_text().splitlines()
    # 16 frames in all: actor1's episode ended at about frame 8, actor0's at frame 16
    assert rows[1:] == ["8,plr/seen,1.0", "16,plr/seen,3.0", "16,rnd/predictor_loss,0.5",
                        "20,rnd/predictor_loss,0.5"]
    assert (run / "hyperparameters.csv").read_text().splitlines() == [
        "frame,hp/lr", "8,0.002", "16,0.003", "20,0.001"]


def test_ape_x_explorations_are_probabilities() -> None:
    """(was: an epsilon of 1.5 taken, exploring as 1)"""
    for bad in ([1.5], [0.1, -0.1], ["0.1"], [float("nan")]):
        with pytest.raises(ValueError, match="explorations are probabilities in \\[0, 1\\]"):
            ppo_spec(explorations=bad)
    assert ppo_spec(explorations=[0.0, 1]).explorations == [0.0, 1]
    with pytest.raises(ValueError, match="a list .or tuple. of probabilities.*got a ndarray"):
        ppo_spec(explorations=np.array([0.1, 0.2]))  # (valid rates: the type is what is wrong)


def test_runtime_options_are_checked() -> None:
    with pytest.raises(KeyError, match="runtime option.*'actor'.*mean 'actors'.*Valid"):
        RuntimeConfig.from_dict({"actor": 2})
    with pytest.raises(ValueError, match="runtime.actors must be a whole number >= 1, got 0"):
        RuntimeConfig(actors=0)
    with pytest.raises(ValueError, match="groups .3. cannot exceed runtime.envs_per_actor .2."):
        RuntimeConfig(envs_per_actor=2, groups=3)
    # groups left unset fits one env per actor (was refused: the default 2 exceeded it)
    assert [RuntimeConfig(envs_per_actor=n).groups for n in (1, 4)] == [1, 2]
    assert RuntimeConfig.from_dict({"envs_per_actor": 1, "groups": None}).groups == 1
    with pytest.raises(ValueError, match=r"runtime.trainer_threads must be a whole number >= 1 "
                                         r"\(or null"):
        RuntimeConfig(trainer_threads=0)
    # (were: "invalid literal for int() with base 10: 'two'", naming no option, and max_lag
    # refused only in the trainer worker, after Ray had started)
    with pytest.raises(ValueError, match="runtime.actors must be a whole number >= 1, got 'two'"):
        RuntimeConfig(actors="two")
    with pytest.raises(ValueError, match=r"runtime.max_lag must be a whole number >= 0 \(or "
                                         r"null: no limit\), got -1"):
        RuntimeConfig(max_lag=-1)
    assert RuntimeConfig(max_lag=0, actors=2.0).max_lag == 0
    # (were accepted: 'abc' failed after Ray had started, "unsupported operand type(s) for //",
    # -1 checkpointed every step, sync='no' (runtime.sync=no) sampled synchronously)
    with pytest.raises(ValueError, match=r"runtime.checkpoint_every must be a whole number >= 1 "
                                         r"\(or null: never\), got 'abc'"):
        RuntimeConfig(checkpoint_every="abc")
    with pytest.raises(ValueError, match="runtime.checkpoint_every must be .*got -1"):
        RuntimeConfig(checkpoint_every=-1)
    with pytest.raises(ValueError, match="runtime.cpus_per_actor must be a number >= 0, got -1"):
        RuntimeConfig(cpus_per_actor=-1)
    with pytest.raises(ValueError, match="runtime.pull_interval must be a number >= 0, got nan"):
        RuntimeConfig(pull_interval=float("nan"))
    with pytest.raises(ValueError, match="runtime.trainer_timeout must be > 0, got 'abc'"):
        RuntimeConfig(trainer_timeout="abc")
    with pytest.raises(ValueError, match="runtime.sync must be true or false, got 'no'"):
        RuntimeConfig(sync="no")
    assert RuntimeConfig(checkpoint_every=None, cpus_per_actor=0.0).checkpoint_every is None


@pytest.mark.parametrize("option, bad, message", [
    # (were: 0 silently taken as unset, 'abc' "'>' not supported between ...", and an address
    # or runtime_env that is no text or mapping an AttributeError traceback from Ray's start)
    ("num_cpus", 0, r"runtime.num_cpus must be a whole number >= 1 \(or null: .*got 0"),
    ("num_cpus", "abc", "runtime.num_cpus must be a whole number >= 1 .*got 'abc'"),
    ("address", 5, r"runtime.address must be a str \(or null: a local instance\), got 5"),
    ("runtime_env", "abc", r"runtime.runtime_env must be a dict \(or null: none\), got 'abc'"),
])
def test_ray_start_options_are_checked_before_ray_starts(option, bad, message) -> None:
    with pytest.raises(ValueError, match=message):
        RuntimeConfig(**{option: bad})
    assert RuntimeConfig(num_cpus=2, address="local", runtime_env={"py_modules": []}).num_cpus == 2


def test_whole_float_counts_are_the_workers_counts() -> None:
    """``runtime.actors=2.0`` (Hydra's float) was taken as 2.0, and ``range(2.0)`` failed in
    the ``WorkerPool`` once Ray had started."""
    from looprl.distributed.placement import WorkerPool
    runtime = RuntimeConfig(actors=2.0, trainers=2.0, envs_per_actor=4.0, num_cpus=3.0)
    assert (runtime.actors, runtime.envs_per_actor, runtime.num_cpus) == (2, 4, 3)
    pool = WorkerPool(ppo_spec(), runtime, DistributedResult(), SampleCounts())
    assert pool.trainers == ["trainer", "trainer1"]


def test_a_step_taken_after_the_last_poll_counts_in_the_runs_train_steps(monkeypatch) -> None:
    """The trainer stepped once more between the controller's last poll and the stop (a
    loaded machine): ``result.train_steps`` is its final count, as ``trainer_steps`` and the
    saved policy are (was: the last poll's, one less)."""
    from looprl.distributed.placement import WorkerPool

    ray = pytest.importorskip("ray")

    method = SimpleNamespace(remote=lambda: "ref")  # (the trainer's stop and digest)
    pool = WorkerPool(ppo_spec(), RuntimeConfig(actors=1), DistributedResult(train_steps=20),
                      SampleCounts())
    pool.workers = {"trainer": SimpleNamespace(stop=method, digest=method)}
    pool.runs = {"trainer": "loop"}
    monkeypatch.setattr(ray, "wait", lambda refs, **options: (refs, []))
    monkeypatch.setattr(ray, "get", lambda refs, **options: [{"steps": 21, "digest": "d"}])
    pool.stop()
    assert (pool.result.trainer_steps, pool.result.train_steps) == ([21], 21)


@pytest.mark.parametrize("options, message", [
    # (were accepted: each reserved or set something no worker used, without a word)
    ({"gpus_per_policy": 1}, r"^runtime.gpus_per_policy=1 has no effect with "
                             r"runtime.policy_workers=0 .*: drop runtime.gpus_per_policy, or set "
                             r"runtime.policy_workers$"),
    ({"cpus_per_policy": 2}, "^runtime.cpus_per_policy=2 has no effect with runtime.policy_w"),
    ({"groups": 4}, r"^runtime.groups=4 has no effect with runtime.policy_workers=0 \(each actor "
                    r"runs its own policy copy, stepping its envs as one group\)"),
    ({"trainer_timeout": 10}, "^runtime.trainer_timeout=10 has no effect with runtime.trainers=1"),
    ({"num_cpus": 4, "address": "auto"}, r"^runtime.num_cpus=4 has no effect with "
                                         r"runtime.address='auto' .*set runtime.address=null$"),
    ({"gpus_per_trainer": 2}, "^runtime.gpus_per_trainer=2: a trainer worker computes on one "
                              r"GPU; set it to 1 or less \(runtime.trainers=N for N GPUs\)$"),
    ({"actors": 1, "policy_workers": 2}, r"^runtime.policy_workers \(2\) cannot exceed "
                                         r"runtime.actors \(1\)"),
])
def test_options_no_worker_would_use_are_one_line(options, message) -> None:
    with pytest.raises(ValueError, match=message):
        RuntimeConfig(**options)


def test_options_that_take_effect_are_kept() -> None:
    """Their defaults, and the combinations where they apply, stay valid (a preset's
    ``replace`` of the options too)."""
    from dataclasses import replace
    given = RuntimeConfig(actors=2, policy_workers=2, cpus_per_policy=0.5, gpus_per_policy=0.5,
                          groups=4, trainers=2, trainer_timeout=5, gpus_per_trainer=1)
    assert replace(given, segment_length=8).groups == 4
    assert replace(RuntimeConfig(groups=1), segment_length=8).groups == 1
    assert RuntimeConfig(groups=2).groups == RuntimeConfig(num_cpus=2).groups == 2


def test_an_unbuilt_preset_is_one_line() -> None:
    """(was: "'method' object is not iterable", the builder's ``meta`` read as a list)"""
    from looprl.environments import GymEnvironment
    from looprl.presets.classic_control import ppo
    with pytest.raises(TypeError, match=r"^DistributedRun takes a built Preset or an "
                                        r"AlgorithmSpec, got a PresetBuilder: build it first"):
        DistributedRun(ppo.env(GymEnvironment("CartPole-v1")), RuntimeConfig(actors=1))
    with pytest.raises(TypeError, match=r"^DistributedRun takes a built Preset or an "
                                        r"AlgorithmSpec, got a NoneType$"):
        DistributedRun(None, RuntimeConfig(actors=1))


def test_a_runtime_that_is_no_runtime_config_is_one_line() -> None:
    """(was: "replace() should be called on dataclass instances" for a dict)"""
    with pytest.raises(TypeError, match=r"^DistributedRun's runtime must be a RuntimeConfig, "
                                        r"got a dict: .*RuntimeConfig.from_dict\(options\)"):
        DistributedRun(ppo_spec(), {"actors": 1}, logdir=None)


def test_a_runtime_env_key_ray_does_not_know_is_one_line_before_ray_starts(monkeypatch) -> None:
    """(was: ``runtime.runtime_env={foo: 1}`` taken for a plugin's, ignored, and the run
    went on as without it)"""
    import ray

    def no_ray(*args, **kwargs):
        raise AssertionError("Ray started")

    monkeypatch.setattr(ray, "init", no_ray)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    for env, match in (({"foo": 1}, r"^runtime.runtime_env has no key 'foo'. Ray's keys: "),
                       ({"working_dri": "."}, "no key 'working_dri'. Did you mean 'working_dir'")):
        with pytest.raises(ValueError, match=match):
            DistributedRun(ppo_spec(), RuntimeConfig(actors=1, runtime_env=env), frames=100,
                           logdir=None).run()


@pytest.mark.parametrize("frames", [0, -100, "1000", None, math.inf])
def test_a_distributed_runs_frames_are_checked_as_a_local_runs(frames) -> None:
    """(0 or -100 were accepted: Ray started, the workers were placed and the run ended at
    once with an untrained policy; text was "unsupported operand type(s)"; inf: int()'s
    "cannot convert float infinity to integer")."""
    with pytest.raises(ValueError, match=r"^DistributedRun's frames must be a positive number "
                                         r"of environment steps(, a finite one \(math.inf is "
                                         rf"no budget\))?, got {frames!r}"):
        DistributedRun(ppo_spec(), RuntimeConfig(actors=1), frames=frames, logdir=None)


def test_a_bad_buffer_is_one_line_before_ray_starts(monkeypatch) -> None:
    """The trainer's buffer is built with the env, policy and trainer before Ray starts (was:
    "trainer worker failed to start" once Ray had started and placed the workers)."""
    from looprl.distributed import controller

    def no_ray(runtime):
        raise AssertionError("Ray started")

    monkeypatch.setattr(controller, "start_ray", no_ray)
    with pytest.raises(ValueError, match="buffer 'uniformm'. Did you mean 'uniform'"):
        AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",  # (its kind: at once)
                      policy_args=CARTPOLE, trainer="ppo", buffer="uniformm")
    for args, error, match in (
            ({"batch_stream": 4}, TypeError, "unexpected keyword argument 'batch_stream'"),
            ({"batch_streams": 0}, ValueError, "batch_streams must be positive")):
        spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                             policy_args=CARTPOLE, trainer="ppo", buffer_args=args)
        with pytest.raises(error, match=match):
            DistributedRun(spec, RuntimeConfig(actors=1), frames=100, logdir=None).run()


def test_a_schedule_of_a_key_the_agent_lacks_is_one_line_before_ray_starts(monkeypatch) -> None:
    """The meta components' ``hp/*`` keys are checked before Ray starts, as a local run checks
    them (``check_writes``; was: the same line from actor0 or the trainer once Ray had started
    and placed the workers, about 20 s on); a key the agent has starts the run."""
    from looprl.distributed import controller
    from looprl.meta import CosineLRSchedule, HPSchedule

    def no_ray(runtime):
        raise AssertionError("Ray started")

    monkeypatch.setattr(controller, "start_ray", no_ray)
    per_step = HPSchedule("hp/lr", "linear", 3e-4, 1e-4, duration=10, per="step")
    for schedule, trainers, error, match in (
            (per_step, 2, AssertionError, "Ray started"),  # (every trainer sets it alike)
            (HPSchedule("hp/lrr", "linear", 3e-4, 1e-4, duration=10), 1, KeyError,
             "HPSchedule at pre_update: 'hp/lrr' is not a hyperparameter of this agent. "
             "Did you mean 'hp/lr'"),
            (per_step, 1, AssertionError, "Ray started"),  # (sent to the trainer)
            (HPSchedule("hp/batch_size", "linear", 16, 64, duration=10, per="step"), 1,
             AssertionError, "Ray started"),  # (the trainer's own key: in its publication)
            (CosineLRSchedule(1e-3), 1, AssertionError, "Ray started")):
        with pytest.raises(error, match=match):
            DistributedRun(ppo_spec(meta=[schedule]), RuntimeConfig(actors=2, trainers=trainers),
                           frames=100, logdir=None).run()


def test_resuming_a_directory_without_a_distributed_run_is_one_line_before_ray_starts(
        monkeypatch, tmp_path) -> None:
    """(was: the same line once a local Ray instance had started, seconds later)."""
    from looprl.distributed import controller

    def no_ray(runtime):
        raise AssertionError("Ray started")

    monkeypatch.setattr(controller, "start_ray", no_ray)
    with pytest.raises(FileNotFoundError, match="No distributed run to resume in"):
        DistributedRun(ppo_spec(), RuntimeConfig(actors=1), logdir=str(tmp_path), quiet=True,
                       resume_from=str(tmp_path)).run()


def test_a_curriculum_over_an_env_without_contexts_is_one_line_before_ray_starts(
        monkeypatch) -> None:
    """``meta=[PLR()]`` over a preset of a plain env: the line a local run gives at once
    (was: actor0's, once Ray had started and placed the workers)."""
    from looprl.distributed import controller
    from looprl.environments import GymEnvironment
    from looprl.meta import PLR
    from looprl.presets.classic_control import ppo

    def no_ray(runtime):
        raise AssertionError("Ray started")

    monkeypatch.setattr(controller, "start_ray", no_ray)
    preset = ppo.hyperparameters(hidden=8, n_envs=2, n_steps=8, minibatch_size=16).env(
        GymEnvironment("CartPole-v1")).device("cpu").build()
    with pytest.raises(ValueError, match="^CartPoleVectorEnv has no list of environments to "
                                         r"search for a ContextualEnv; make copies with"):
        DistributedRun(preset, RuntimeConfig(actors=1), frames=100, logdir=None,
                       meta=[PLR()]).run()


def test_user_registrations_travel_with_the_spec() -> None:
    register_policy("tests-wrong-size", WrongSize)
    spec = AlgorithmSpec(env="CartPole-v1", policy="tests-wrong-size", trainer="ppo").portable()
    assert spec.registrations["policy"] == ("tests-wrong-size", WrongSize)
    assert spec.registrations["trainer"] == ("ppo", PPOTrainer)


def test_a_gymnasium_id_registered_in_the_notebook_travels_with_the_spec() -> None:
    """``gymnasium.register`` in the driver only: the workers, which unpickle the spec in
    processes without that registration, make the env (was: ``Unknown environment`` on
    actor0)."""
    import cloudpickle
    import gymnasium

    from looprl.environments import GymEnvironment
    from looprl.presets.classic_control import ppo

    gymnasium.register("tests/NotebookCart-v0", max_episode_steps=50,
                       entry_point="gymnasium.envs.classic_control:CartPoleEnv")
    try:
        preset = ppo.hyperparameters(hidden=8, n_envs=2, n_steps=8, minibatch_size=16).env(
            GymEnvironment("tests/NotebookCart-v0")).device("cpu").build()
        sent = cloudpickle.dumps(DistributedRun(preset, RuntimeConfig(actors=1), frames=100,
                                                logdir=None).spec)
    finally:
        del gymnasium.registry["tests/NotebookCart-v0"]  # (a worker's registry)
    try:
        envs = cloudpickle.loads(sent).collector_env(2)[0]()
        assert envs.name == "tests/NotebookCart-v0"
        envs.close()
    finally:
        gymnasium.registry.pop("tests/NotebookCart-v0", None)


def test_a_step_result_with_scalar_fields_is_one_line() -> None:
    from looprl.environments import SRLEnvironment, StepResult

    class Scalars(SRLEnvironment):
        agent_count = 1

        def reset(self):
            return [StepResult({"obs": np.zeros(2, np.float32)}, 0.0, False, {})]

        def step(self, actions):
            return self.reset()

    with pytest.raises(ValueError, match="must be shape-.1,. arrays.*step_result"):
        EnvRunner(Scalars, n_envs=1)  # the rewards of the first results count already


def test_a_step_result_with_several_rewards_is_one_line() -> None:
    """A reward of shape (2,) (one per entity, say): one line (was: its first value taken, the
    others dropped silently)."""
    from looprl.environments import SRLEnvironment, StepResult

    class TwoRewards(SRLEnvironment):
        agent_count = 1

        def reset(self):
            return [StepResult({"obs": np.zeros(2, np.float32)}, np.zeros(2, np.float32),
                               np.zeros(1, bool), {})]

        def step(self, actions):
            return self.reset()

    with pytest.raises(ValueError, match=r"must be shape-.1,. arrays, got array\(\[0., 0.\]"):
        EnvRunner(TwoRewards, n_envs=1)


def test_the_controller_stops_once_every_actor_has_sent_its_last_rows(monkeypatch, caplog
                                                                       ) -> None:
    """The budget reached, the run ends once every actor reports its share ``finished``
    (its last rows handed over), not before; an actor Ray restarted (its share started
    again) is not waited for, nor one still unfinished ``answer_timeout(runtime)`` on (a
    warning names it, and the option to raise); a callback that lowered ``frames`` ends the
    run at once."""
    from looprl.distributed import controller

    run = DistributedRun(ppo_spec(), RuntimeConfig(actors=2), frames=100, logdir=None)
    run._monitor = RunMonitor(run.result, SampleCounts(), None, ["trainer"])
    finished = run._monitor.actors_finished
    finished.update(actor0=True, actor1=False)
    run.result.frames = 90
    assert not run._budget_spent()  # (the budget not reached)
    run.result.frames = 100
    assert not run._budget_spent()  # actor1's last rows not sent
    finished["actor1"] = True
    assert run._budget_spent()
    finished["actor1"] = False
    run.result.restarts.append(("actor1/copy0", 50))  # (an env copy rebuilt: still waited)
    assert not run._budget_spent()
    run.result.restarts.append(("actor1", 60))  # restarted: its share began again
    assert run._budget_spent()
    run.result.restarts.clear()
    run.frames = 80  # (a callback lowered the budget)
    assert run._budget_spent()
    run.frames = 100
    monkeypatch.setattr(controller, "answer_timeout", lambda runtime: 0.0)
    with caplog.at_level("WARNING", "looprl.distributed"):
        assert run._budget_spent()
    assert "stopping without the last rows of actor1" in caplog.text
    assert "raise runtime.placement_timeout" in caplog.text


def test_independent_buffers_with_one_learners_trainer_are_one_line() -> None:
    """(Was: ``AttributeError: 'PPOTrainer' object has no attribute 'trainers'``.)"""
    with pytest.raises(ValueError, match=r"^AlgorithmSpec buffer='independent' gives each agent "
                                         r"its own learner and needs an IndependentTrainer .* "
                                         r"got a PPOTrainer: leave buffer unset"):
        test_pipeline(AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                                    policy_args=CARTPOLE, trainer="ppo", buffer="independent",
                                    buffer_args={"agents": [(None, {})]}))


def test_sync_sampling_with_max_lag_0_keeps_every_segment() -> None:
    """(Was: dropped every segment after a step: its first row, the one before's last, was
    chosen by the version before that step, as in a local run, whose trainer keeps it.) The
    actor acts with the trainer's policy itself, as a sync actor with the latest version."""
    from looprl.distributed.pipeline import collect, trainer_core
    from looprl.distributed.trainer_worker import kept_lag

    torch.manual_seed(0)
    spec = ppo_spec()
    spec.buffer_args = {"batch_streams": 2}
    policy = spec.make_policy()
    core = trainer_core(spec, policy, max_lag=kept_lag(RuntimeConfig(sync=True, max_lag=0)))
    runner = EnvRunner(spec.make_env, None, 2, 4, policy.default_policy_state, policy=policy)
    sent = 0
    while runner.frames < 48:
        collect(runner, Actor(policy))
        for segment in runner.segments():
            core.put(segment)
            sent += segment.reward.shape[1]  # (streams)
        core.train()
    assert policy.version >= 3 and sent >= 10 and core.received == sent and core.dropped == 0
    assert kept_lag(RuntimeConfig(max_lag=0)) == 0  # (asynchronous: as set)



@pytest.mark.parametrize("trained", [0, 1])
def test_a_ray_run_that_never_trained_warns_as_a_local_run_does(monkeypatch, caplog, trained
                                                                 ) -> None:
    """(Was: no word, and its test return scored the untrained policy, where a local run warns
    that its results are those of the untrained agent.) The trainers' final steps count."""
    import logging
    from types import SimpleNamespace

    from looprl.distributed import controller

    parts = SimpleNamespace(start=lambda *args: None, trainers=["trainer"],
                            actors_meta_state=None, schedules={}, ask=lambda *args: None,
                            normalization=lambda: None,
                            cuts=(0, "", None))
    for name in ("WorkerPool", "Supervisor", "RunMonitor", "ControllerCheckpoint"):
        monkeypatch.setattr(controller, name, lambda *args, **kwargs: parts)
    monkeypatch.setattr(controller, "start_ray", lambda runtime: False)
    for _ in range(2):  # (a sweep's: its second run that never trained said nothing)
        run = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), frames=100, logdir=None,
                             quiet=True)

        def finish(run: DistributedRun = run) -> None:  # (the pool's stop: each trainer's
            run.result.frames, run.result.trainer_steps = 100, [trained]  # final steps)

        monkeypatch.setattr(run, "_loop", lambda callback: None)  # (the workers' poll loop)
        monkeypatch.setattr(run, "_shutdown", finish)
        with caplog.at_level(logging.WARNING):
            run.run()
    warned = [r.getMessage() for r in caplog.records if "never trained" in r.getMessage()]
    assert warned == ([] if trained else 2 * [
        "ppo-ray on CartPole-v1: the agent never trained in its 100 frames (its first update "
        "needs more: replay_start_size and update_frequency, n_envs x n_steps or "
        "min_batch_size); its results are those of the untrained agent. Raise the frames or "
        "lower those hyperparameters"])


def test_a_quiet_runs_trainer_logs_the_losses_but_not_the_learners_statistics() -> None:
    """As a local run's: ``logging.verbose=false`` keeps the learner's statistics out of the
    progress line (the approximations' own losses stay)."""
    from looprl.core import TrainerStepResult
    from looprl.distributed.pipeline import trainer_core
    from looprl.distributed.trainer_worker import record_losses

    assert DistributedRun(ppo_spec(), logdir=None, verbose=False).spec.verbose is False
    for verbose, rows in ((True, [(None, "loss", "policy", 1.0, 7)]), (False, [])):
        core = trainer_core(ppo_spec())
        [recorder] = record_losses(core, lambda: 7, verbose=verbose)
        core.finish((None, None), TrainerStepResult({"policy": 1.0}, 1))
        assert recorder.take() == rows


def test_pipeline_takes_srl_keywords_and_replaces_a_spec_s_fields() -> None:
    """SRL's example calls ``test_pipeline(env_name=..., policy_name=..., trainer_name=...)``
    (a TypeError before); keywords given with a spec were silently ignored."""
    report = test_pipeline(env_name="CartPole-v1", env_args={}, policy_name="actor-critic-separate",
                           policy_args=CARTPOLE, trainer_name="ppo", trainer_args={"epochs": 1},
                           buffer_args={"batch_streams": 4}, episodes=1, segment_length=16)
    assert report.train_steps >= 1
    with pytest.raises(ValueError, match="both names of env_name/env; give one"):
        test_pipeline(ppo_spec(), env="CartPole-v1", env_name="CartPole-v1")
    with pytest.raises(ValueError, match="unknown trainer 'no-such-trainer'"):
        test_pipeline(ppo_spec(), trainer_name="no-such-trainer")


def test_a_resume_compares_the_hyperparameters_a_repr_with_an_address_aside(tmp_path) -> None:
    """``resume_from`` with other hyperparameters is one line; a function's or a network's
    ``repr`` in ``run.json`` (its address changes from process to process) is not compared."""
    import json

    from looprl.distributed.controller import _check_same_config

    (tmp_path / "run.json").write_text(json.dumps({"hyperparameters": {
        "lr": 0.1, "model_constructor": "<function fc at 0x7f12ab>"}}))

    def fc() -> None:
        pass

    _check_same_config("RUN", tmp_path, {"lr": 0.1, "model_constructor": fc}, [])
    with pytest.raises(ValueError, match=r"^resume_from=RUN was run with another config "
                                         r"\(lr: 0.1 -> 0.2\); resume it"):
        _check_same_config("RUN", tmp_path, {"lr": 0.2, "model_constructor": fc}, [])


def test_an_older_controller_checkpoints_exploration_steps_are_resumed() -> None:
    """A controller checkpoint written before ``schedules`` kept each actor's epsilon steps as
    an ``("exploration", steps)`` entry of its meta state: resumed, they are its schedules'
    (not a meta component's state, which would start RND anew, nor epsilon 1 again)."""
    from types import SimpleNamespace

    from looprl.distributed.controller import _meta_and_schedules

    older = SimpleNamespace(actors_meta={0: [("RND", {"n": 3}), ("exploration", [512])], 1: None})
    assert _meta_and_schedules(older) == ({0: [("RND", {"n": 3})], 1: []}, {"actor0": [512]})
    newer = SimpleNamespace(actors_meta={0: [("RND", {"n": 3})]}, schedules={"actor0": [9]})
    assert _meta_and_schedules(newer) == ({0: [("RND", {"n": 3})]}, {"actor0": [9]})


@pytest.mark.parametrize("seed", [2**31, 2**32 - 1])
@pytest.mark.parametrize("algorithm", ["dqn", "ppo"])
def test_a_local_run_seeds_its_units_as_a_ray_actor_does(tmp_path, algorithm, seed) -> None:
    """A Ray actor's units, hooks and env copies take ``wrapped_seed`` of the run's seed (actor
    0's: ``wrapped_seed(seed)``); a local run's take the same, so that one synchronous actor
    gives the local run bit for bit at every seed: from the same initial weights, a local run
    seeded ``seed`` plays and trains as one seeded ``wrapped_seed(seed)``. (Was: a local run
    seeded from 2**31 - 2**16 up seeded its actor, learner, RND and vector env with the seed
    as given, the Ray run with it wrapped: other episodes, other parameters.)"""
    from looprl.environments import GymEnvironment
    from looprl.environments.base import wrapped_seed
    from looprl.experiments import make_experiment
    from looprl.experiments.episodes import seed_everything
    from looprl.meta import RND
    from looprl.presets.classic_control import dqn, ppo

    runs = []
    for run_seed in (seed, wrapped_seed(seed)):
        seed_everything(0)  # (the initial weights, made by build(): the same on both)
        env = GymEnvironment("CartPole-v1")
        preset = (dqn.env(env).hyperparameters(replay_start_size=64, update_frequency=16,
                                               gradient_steps=2, hidden=16)
                  if algorithm == "dqn" else
                  ppo.env(env).hyperparameters(n_envs=4, n_steps=16, minibatch_size=32,
                                               hidden=16)).device("cpu").build()
        run = make_experiment(preset, env, logdir=str(tmp_path / str(run_seed)), quiet=True,
                              verbose=False, seed=run_seed,
                              meta=[RND()] if algorithm == "dqn" else ())
        module = run.agent.unwrapped.policy.module
        first = {key: value.clone() for key, value in module.state_dict().items()}
        run.train(frames=200)
        runs.append(((Path(run.logger.log_dir) / "results.csv").read_text(),
                     module.state_dict(), first))
    (episodes, mine, first), (wrapped, theirs, _) = runs
    assert len(episodes.splitlines()) > 3 and episodes == wrapped
    assert not all(torch.equal(first[key], mine[key]) for key in mine)  # (it trained)
    assert all(torch.equal(mine[key], theirs[key]) for key in mine)


def test_an_older_controller_checkpoint_of_normalizers_says_their_statistics_start_anew(
        caplog) -> None:
    """A controller checkpoint written before it held the normalizers' statistics: resumed,
    the actors' start anew, which a warning says where the run's environment normalizes (was:
    silently); a newer checkpoint's statistics are the resumed actors'."""
    from gymnasium.wrappers import NormalizeObservation

    from looprl.distributed.controller import _resumed_normalization
    from looprl.environments.srl import make

    older = SimpleNamespace(logger=SimpleNamespace(log_dir="RUN"))
    plain = SimpleNamespace(make_env=lambda: make("CartPole-v1"))
    normalizing = SimpleNamespace(make_env=lambda: make("CartPole-v1",
                                                        wrap_env=NormalizeObservation))
    with caplog.at_level(logging.WARNING, "looprl.distributed"):
        assert _resumed_normalization(None, normalizing) is None
        assert _resumed_normalization(older, plain) is None
        assert not caplog.records
        assert _resumed_normalization(older, normalizing) is None
    assert caplog.text.count("RUN: its controller checkpoint, of a looprl before it held the "
                             "normalizers' statistics, has none") == 1, caplog.text
    newer = SimpleNamespace(logger=older.logger, normalization=[None, {"normalizers": []}])
    assert _resumed_normalization(newer, normalizing) is newer.normalization


def test_a_runs_end_saves_the_same_statistics_in_normalization_pt_and_its_checkpoint(
        tmp_path) -> None:
    """The run's end asks the actors for their normalizers' statistics once, and saves those
    in ``normalization.pt`` and in its last controller checkpoint (was: asked twice, and the
    two files could hold statistics of other steps)."""
    from looprl.distributed.placement import WorkerPool
    from looprl.distributed.run_state import CONTROLLER_CHECKPOINT, ControllerCheckpoint
    from looprl.environments.wrappers import saved_normalization
    from looprl.experiments.checkpoint import load_checkpoint

    asked = []
    pool = SimpleNamespace(stop=lambda: None, ask=lambda name, method, *args: {}, statistics=None)

    def normalization() -> list:  # (a step more counted at each answer, kept as the pool's)
        asked.append(len(asked) + 1.0)
        pool.statistics = [None, {"wrappers": ["NormalizeObservation"], "normalizers": [
            {"obs_rms": {"mean": np.zeros(1), "var": np.ones(1), "count": asked[-1]}}]}]
        return pool.statistics

    pool.normalization, pool.save_policy = normalization, partial(WorkerPool.save_policy, pool)
    run = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), logdir=str(tmp_path), quiet=True,
                         checkpoint_every=2)
    counts = run._open_logs()
    run._pool = pool
    run._checkpoint = ControllerCheckpoint(2, run._log, run.result, counts,
                                           normalization=normalization)
    run._finish()
    run.close()
    saved = saved_normalization(run.result.log_dir)
    held = load_checkpoint(Path(run.result.log_dir) / CONTROLLER_CHECKPOINT).normalization
    assert asked == [1.0]
    assert [source and source["normalizers"][0]["obs_rms"]["count"] for source in saved] == [
        None, 1.0] == [source and source["normalizers"][0]["obs_rms"]["count"] for source in held]


def _normalized_spec() -> AlgorithmSpec:
    """``ppo_spec`` on CartPole in Gymnasium's ``NormalizeObservation``."""
    from gymnasium.wrappers import NormalizeObservation
    return ppo_spec(env_args={"wrap_env": NormalizeObservation})


def test_a_resumed_actors_first_observation_is_scaled_with_the_loaded_statistics() -> None:
    """A resumed run's actor (and one that Ray restarted) loads training's statistics after its
    constructor reset its copies: the first observation it hands its policy is that of copies
    whose normalizers held the loaded statistics at their reset (was: scaled with the
    statistics that reset started anew, one step each)."""
    from looprl.distributed import workers
    from looprl.environments.wrappers import (
        load_normalization,
        normalizers_of,
        read_normalization,
    )

    spec = _normalized_spec()
    trained = spec.make_env()
    for normalizer in normalizers_of(trained):
        normalizer.obs_rms.mean, normalizer.obs_rms.var = np.full(4, 0.5), np.full(4, 4.0)
        normalizer.obs_rms.count = 1e4
    saved = read_normalization(trained)

    def loaded() -> object:  # (copies whose normalizers held them as they reset)
        env = spec.make_env()
        load_normalization(env, saved, "CartPole-v1", freeze=False)
        return env

    expected = EnvRunner(loaded, None, 2, None, seed=3).request(0).obs["obs"]
    actor = object.__new__(workers.ActorWorker.__ray_actor_class__)
    actor.runner = EnvRunner(spec.make_env, None, 2, None, seed=3)  # (as its constructor's)
    actor.load_normalization(saved)  # (``WorkerPool.placed``: before its loop)
    first = actor.runner.request(0).obs["obs"]
    assert np.array_equal(first, expected) and abs(first).min() > 0.1, first  # (not ~0)
    assert all(normalizer.update_running_mean for normalizer in normalizers_of(actor.runner.envs))


def test_an_actor_without_normalizers_does_not_reset_its_copies_again(monkeypatch) -> None:
    """A restarted actor (or a resumed run's) is handed the run's statistics, which for an env
    without normalizers hold none (``read_normalization``'s): nothing loaded, so
    its copies must not reset a second time (was: every such actor reset them again)."""
    from looprl.distributed import workers
    from looprl.environments.wrappers import read_normalization

    restarted = []
    monkeypatch.setattr(workers, "restart_episodes", restarted.append)
    actor = object.__new__(workers.ActorWorker.__ray_actor_class__)
    actor.runner = EnvRunner(ppo_spec().make_env, None, 2, None, seed=3)
    statistics = read_normalization(actor.runner.envs)
    assert statistics is not None
    actor.load_normalization(statistics)
    actor.load_normalization(None)
    assert restarted == []


@pytest.mark.parametrize("normalizing", [False, True])
def test_an_evaluation_worker_without_normalizers_never_asks_the_training_actors(
        monkeypatch, normalizing) -> None:
    """An evaluation worker whose env has no normalizers evaluates without asking the training
    actors for their statistics (else: a call to each actor at each episode, for nothing); one
    whose env normalizes asks them (here once, at the start: no new parameters came), and its
    episodes start again once it has them (its first observations were scaled with its own,
    fresh statistics)."""
    import threading

    from looprl.distributed import workers
    from looprl.environments.wrappers import read_normalization

    asked, restarted = [], []

    def training_normalization(actors, timeout):
        asked.append(actors)
        return read_normalization(actor.runner.envs)

    monkeypatch.setattr(workers, "training_normalization", training_normalization)
    monkeypatch.setattr(workers, "restart_episodes", restarted.append)
    spec = _normalized_spec() if normalizing else ppo_spec()
    policy = spec.make_policy()
    actor = object.__new__(workers.ActorWorker.__ray_actor_class__)

    def maybe_pull(wait: bool = False) -> None:  # (no new parameters: stop after an episode)
        if actor._stats["episodes"]:
            actor._stop.set()

    actor.__dict__.update(
        index=0, budget=None, evaluation=True, normalizers=["actor0"], trainer=None,
        policy_worker=None, sync=False, timeout=1.0, sender=None, actor=Actor(policy),
        _stop=threading.Event(),
        local=SimpleNamespace(policy=policy, serial=0, interval=0.0, maybe_pull=maybe_pull),
        runner=EnvRunner(spec.make_env, None, 2, None, is_evaluation=True, policy=policy),
        _lock=threading.Condition(), _stats=workers._fresh_stats(), _meta_state=None,
        _finished=False, _failed=False, _hold_every=None)
    actor.run()
    assert actor._stats["episodes"] and actor._finished  # (it evaluated)
    assert asked == ([["actor0"]] if normalizing else [])
    assert restarted == ([actor.runner] if normalizing else [])


def test_resuming_with_other_env_wrappers_is_the_clis_one_line(tmp_path) -> None:
    """``looprl run --resume`` with other ``env_wrappers`` was refused; ``DistributedRun(...,
    resume_from=...)`` went on in other wrappers (a ``NormalizeObservation`` dropped: the
    policy saw unscaled observations, silently). Both say it in ``check_same_config``'s line;
    a run directory of a looprl before its ``run.json`` held them is not compared."""
    import json

    from looprl.environments.wrappers import Wrappers

    normalized = ppo_spec(env_args={"wrap_env": Wrappers(
        ["gymnasium.wrappers.NormalizeObservation"])})
    run_dir = _checkpointed_run(tmp_path, spec=normalized)
    assert _resumed_state(DistributedRun(normalized, RuntimeConfig(actors=1), logdir=str(
        tmp_path), quiet=True, resume_from=str(tmp_path))).result.frames == 0
    plain = DistributedRun(ppo_spec(), RuntimeConfig(actors=1), logdir=str(tmp_path),
                           quiet=True, resume_from=str(tmp_path))
    with pytest.raises(ValueError, match=(
            rf"^resume_from={tmp_path} was run with another config \(env_wrappers: "
            r"\['gymnasium.wrappers.NormalizeObservation'\] -> \[\]\); resume it with its "
            r"own, or start a new run$")):
        _resumed_state(plain)
    info = Path(run_dir, "run.json")
    older = json.loads(info.read_text())
    del older["env_wrappers"]
    info.write_text(json.dumps(older))
    _resumed_state(plain)


def _optimizers(policy: object) -> list[torch.optim.Optimizer]:
    """The optimizers reachable from ``policy`` (what a deep copy of it copies)."""
    import copy
    memo: dict[int, object] = {}
    copy.deepcopy(policy, memo)
    return [kept for kept in memo.values() if isinstance(kept, torch.optim.Optimizer)]


def test_a_process_that_only_acts_builds_its_policy_without_an_optimizer() -> None:
    """Ray's actor and policy workers (of a run without meta components) build a preset's
    policy without an optimizer (``acting_args``: no ``torch._dynamo`` import in each of
    them, ~1.6 s), the trainer with one; a user's factory is called as written."""
    from dataclasses import replace

    from looprl.environments import GymEnvironment, MultiagentPettingZooEnv
    from looprl.meta import MetaComponent
    from looprl.presets.classic_control import a2c, dqn, ppo
    from looprl.presets.continuous import sac
    from looprl.presets.multiagent import dqn as independent_dqn

    pytest.importorskip("pettingzoo")
    from pettingzoo.classic import tictactoe_v3
    game = MultiagentPettingZooEnv(tictactoe_v3.env(), name="tictactoe_v3")
    builders = [dqn.env(GymEnvironment("CartPole-v1")), ppo.env(GymEnvironment("CartPole-v1")),
                a2c.env(GymEnvironment("CartPole-v1")), sac.env(GymEnvironment("Pendulum-v1")),
                independent_dqn.env(game)]
    for builder in builders:
        spec, _ = AlgorithmSpec.of_preset(builder.device("cpu").build(), frames=1000)
        assert spec.acting_args == {"optimizer": False}
        assert _optimizers(spec.make_policy(acting=True)) == []
        assert _optimizers(spec.make_policy()), type(spec.policy)
    with_meta = replace(spec, meta=[MetaComponent()])  # (its step hooks may read hp/lr)
    assert _optimizers(with_meta.make_policy(acting=True))
    user = ppo_spec()
    assert user.acting_args == {} and user.make_policy(acting=True) is not None


def test_a_meta_component_that_is_no_metacomponent_is_one_line_before_ray_starts() -> None:
    from looprl.distributed import DistributedRun, RuntimeConfig
    from looprl.environments import GymEnvironment
    from looprl.presets.classic_control import a2c

    preset = a2c.env(GymEnvironment("CartPole-v1")).build()
    with pytest.raises(TypeError, match=r"^'rnd' is not a MetaComponent: attach instances"):
        DistributedRun(preset, RuntimeConfig(), frames=100, logdir=None, meta=["rnd"])


class _NaNAfter:
    """A CartPole whose ``field`` (``"reward"`` or ``"obs"``) is NaN from its 20th step."""

    @staticmethod
    def make(field: str):
        import gymnasium

        class Corrupt(gymnasium.Wrapper):
            steps = 0

            def step(self, action):
                obs, reward, terminated, truncated, info = self.env.step(action)
                self.steps += 1
                if self.steps >= 20:
                    reward = float("nan") if field == "reward" else reward
                    obs = np.full_like(obs, np.nan) if field == "obs" else obs
                return obs, reward, terminated, truncated, info

        return Corrupt(gymnasium.make("CartPole-v1"))


@pytest.mark.parametrize(("field", "kind"), [("reward", "rewards"), ("obs", "observations")])
def test_pipeline_names_an_environment_that_returns_nan(field, kind) -> None:
    """As a run does (was: "Try a lower learning rate" for the environment's NaN)."""
    import gymnasium

    gymnasium.register(f"tests/NaN{field}Cart-v0", entry_point=partial(_NaNAfter.make, field),
                       max_episode_steps=100)
    with pytest.raises(FloatingPointError, match=rf"^The environment tests/NaN{field}Cart-v0 "
                                                 rf"returned NaN or infinite {kind}.*this is "
                                                 "not a learning-rate problem"):
        test_pipeline(ppo_spec(env=f"tests/NaN{field}Cart-v0"), segment_length=16)
