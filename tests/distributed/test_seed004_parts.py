"""What seed 004's user met on the way to a distributed run, one part at a time (no Ray): the
seed's names of the space methods, ``uint8`` done flags, a trainer naming no sample buffer,
and a ``Policy`` instance in ``AlgorithmSpec``."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tests.distributed.seed004_user import MyGRUPolicy, MyTrainer

from looprl.core import Policy, SampleBatch, TrainerStepResult
from looprl.distributed import AlgorithmSpec, EnvironmentCheckError, test_environment
from looprl.distributed.pipeline import trainer_core
from looprl.environments.srl import Environment, StepResult, register, registered_environments
from looprl.memory import OnPolicyBuffer, PrioritizedReplayBuffer

CARTPOLE = {"obs_dim": {"obs": 4}, "action_dim": 2}


class Flags(Environment):
    """One agent; ``done`` of dtype ``dtype`` and value ``flag`` at step 3; the seed's space
    names, ``action_space`` as a method returning a list of one space per agent."""

    dtype: Any = np.uint8
    flag: Any = 1

    @property
    def agent_count(self) -> int:
        return 1

    @property
    def observation_space(self) -> gym.Space:
        return gym.spaces.Dict({"obs": gym.spaces.Box(0.0, 5.0, (1,), np.float32)})

    def action_space(self) -> list[gym.Space]:
        return [gym.spaces.Discrete(3)]

    def reset(self) -> list[StepResult]:
        self.t = 0
        return [self._result()]

    def step(self, actions: list[Any]) -> list[StepResult]:
        self.t += 1
        return [self._result()]

    def _result(self) -> StepResult:
        done = np.array([self.flag if self.t == 3 else 0], dtype=self.dtype)
        return StepResult(obs={"obs": np.array([self.t], np.float32)},
                          reward=np.zeros(1, np.float32), done=done, info={})


class HalfDone(Flags):
    dtype, flag = np.float32, 0.5


class FloatDone(Flags):
    dtype, flag = np.float64, 1.0


def registered(name: str, env: type) -> str:
    if name not in registered_environments():
        register(name, env)
    return name


def test_the_seeds_space_names_give_one_space_per_agent() -> None:
    env = Flags()
    assert env.observation_spaces == [env.observation_space]  # one space for every agent
    assert env.action_spaces == [gym.spaces.Discrete(3)]  # a method returning a list


def test_an_env_without_spaces_still_says_how_to_add_them() -> None:
    class NoSpaces(Flags):
        observation_space = None

    with pytest.raises(NotImplementedError, match="or observation_space: one for every agent"):
        _ = NoSpaces().observation_spaces


def test_uint8_and_0_1_float_done_flags_pass_test_environment() -> None:
    for name, env in (("seed004-uint8-done", Flags), ("seed004-float-done", FloatDone)):
        report = test_environment(registered(name, env), test_stepping=True, steps=8)
        assert report.episodes == 2, name


def test_a_done_flag_other_than_0_or_1_is_one_line() -> None:
    with pytest.raises(EnvironmentCheckError, match=r"agent 0: step\(\) done is 0.5 \(float32\)"
                                                    r"; a flag must be True/False or 0/1"):
        test_environment(registered("seed004-half-done", HalfDone), steps=8)


class NanObs(Flags):
    """No observation space; its observation turns NaN at step 2."""

    observation_space = None

    def _result(self) -> StepResult:
        result = super()._result()
        result.obs["obs"][:] = np.nan if self.t == 2 else self.t
        return result


def test_a_nan_observation_fails_test_environment_without_spaces() -> None:
    """(Was: passed; the policy then failed on Ray with torch's many-line message.)"""
    with pytest.raises(EnvironmentCheckError, match=r"agent 0: step\(\) obs\['obs'\] holds "
                                                    "NaN or inf, not finite"):
        test_environment(registered("seed004-nan-obs", NanObs), steps=8)


class DuckTrainer:
    """A trainer that subclasses nothing and names no sample buffer."""

    def __init__(self, policy: Any):
        self.policy = policy

    def step(self, batch: SampleBatch) -> TrainerStepResult:
        self.policy.version += 1
        return TrainerStepResult(stats={}, step=self.policy.version)


def test_a_trainer_naming_no_sample_buffer_learns_from_on_policy_segments() -> None:
    assert MyTrainer.sample_buffer == "on_policy"  # the Trainer base's default
    spec = AlgorithmSpec(env="CartPole-v1", policy=MyGRUPolicy, trainer=MyTrainer)
    assert isinstance(trainer_core(spec).buffer, OnPolicyBuffer)
    duck = AlgorithmSpec(env="CartPole-v1", policy=MyGRUPolicy, trainer=DuckTrainer)
    assert isinstance(trainer_core(duck).buffer, OnPolicyBuffer)
    dqn = AlgorithmSpec(env="CartPole-v1", policy="q-network", policy_args=CARTPOLE,
                        trainer="dqn")
    assert isinstance(trainer_core(dqn).buffer, PrioritizedReplayBuffer)


def test_a_policy_instance_gives_each_worker_its_own_copy() -> None:
    torch.manual_seed(0)
    policy = Policy(type_="actor-critic-separate", args=CARTPOLE)  # the seed's call
    spec = AlgorithmSpec(env="CartPole-v1", policy=policy, trainer="ppo")
    first, second = spec.make_policy(), spec.make_policy()
    assert type(first) is type(policy) and first is not policy and first is not second
    for a, b in zip(first.module.parameters(), policy.module.parameters(), strict=True):
        assert torch.equal(a, b) and a is not b
    assert spec.make_trainer(first).policy is first


def test_a_policy_instance_moves_to_the_workers_device_or_says_why_not() -> None:
    moved = AlgorithmSpec(env="CartPole-v1", policy=MyGRUPolicy(), trainer=MyTrainer)
    assert moved.on_device("meta").make_policy().module.encoder.weight.device.type == "meta"
    stuck = AlgorithmSpec(env="CartPole-v1", trainer="ppo",
                          policy=Policy(type_="actor-critic-separate", args=CARTPOLE))
    with pytest.raises(ValueError, match="ActorCriticPolicy has no to.device. to move to 'meta'"):
        stuck.on_device("meta").make_policy()
    stuck.policy_args = {"hidden_dim": 8}
    with pytest.raises(ValueError, match=r"policy_args \['hidden_dim'\] cannot apply to a "
                                         "Policy instance"):
        stuck.make_policy()
    with pytest.raises(TypeError, match="policy must be a registered name, a factory or a "
                                        "looprl.core.Policy, got an int"):
        AlgorithmSpec(env="CartPole-v1", policy=3, trainer="ppo")
    stuck.policy = 3  # (a field set after construction: checked when used)
    with pytest.raises(TypeError, match="policy must be a registered name, .* got an int"):
        stuck.make_policy()


class StatsPolicy(MyGRUPolicy):
    """SRL-style: keeps NumPy observation statistics beside its network, in its checkpoint
    (torch-savable, as the seed asks, but not tensors only)."""

    def __init__(self, hidden: int = 16):
        super().__init__(hidden)
        self.obs_mean = np.zeros(1, np.float32)

    def get_checkpoint(self) -> dict[str, Any]:
        return {**super().get_checkpoint(), "obs_mean": self.obs_mean}

    def load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().load_checkpoint(checkpoint)
        self.obs_mean = checkpoint["obs_mean"]


def test_distributed_run_test_loads_a_policy_checkpoint_holding_numpy(tmp_path, capfd) -> None:
    """(Was: torch.load's weights-only ``UnpicklingError``, a traceback after the run had
    trained; ``looprl watch`` loaded the same ``policy.pt``.) Its evaluation shows its progress
    as a local run's does (it showed none)."""
    from tests.distributed.seed004_user import SignPair

    from looprl.distributed import DistributedRun, RuntimeConfig

    spec = AlgorithmSpec(env=registered("tests-sign-pair", SignPair), policy=StatsPolicy,
                         trainer=MyTrainer)
    torch.save(StatsPolicy().get_checkpoint(), tmp_path / "policy.pt")
    run = DistributedRun(spec, RuntimeConfig(actors=1), frames=100, logdir=None)
    run.result.log_dir = str(tmp_path)  # (a finished run's directory)
    assert len(run.test(episodes=2)) == 2
    assert ": evaluation: 2/2 episodes (100%)" in capfd.readouterr().err


def test_a_users_trainer_whose_loss_goes_nan_stops_the_trainer_worker_in_one_line() -> None:
    """(Was: trained on, on Ray, where a local run stops on a non-finite loss.) The worker's
    ``Learner`` checks, as every runtime's does."""
    import math
    import threading
    from types import SimpleNamespace

    from looprl.agents.learner import Learner
    from looprl.distributed import RuntimeConfig
    from looprl.distributed.trainer_worker import TrainerWorker

    class Diverged:
        policy = SimpleNamespace(version=3)

        def step(self, sample):
            return TrainerStepResult(stats={"loss": math.nan, "lr": 0.1}, step=3)

    core = Learner(Diverged(), None)
    worker = object.__new__(TrainerWorker.__ray_actor_class__)
    worker.__dict__.update(core=core, steps=2, group=None, rank=0, _published_at=math.inf,
                           runtime=RuntimeConfig(publish_every=100, checkpoint_every=None),
                           _lock=threading.Condition(), _rows=0, _stats=[], _meta={},
                           _blocked=0, _training=True)
    with pytest.raises(FloatingPointError, match=r"^trainer Diverged returned non-finite "
                                                 r"\['loss'\] at step 3: training diverged; "
                                                 r"try a lower learning rate or gradient "
                                                 r"clipping\.$"):  # (then: its logs)
        worker._train((None, None))


def test_a_trainer_that_does_not_agree_to_push_is_not_published_after_that_step() -> None:
    """SRL's ``TrainerStepResult(stats, step, agree_pushing, priorities)``: the third field is
    ``agree_pushing`` (was: taken for the priorities), and the worker holds the parameters
    back after a step that does not agree."""
    from looprl.agents.learner import Learner

    class Declining:
        policy = SimpleNamespace(version=0)

        def step(self, sample):
            self.policy.version += 1
            return TrainerStepResult({"loss": 1.0}, self.policy.version, self.policy.version > 1)

    assert TrainerStepResult({}, 0, False).priorities is None
    published = []
    worker = _bare_trainer_worker(Learner(Declining(), None), checkpoint_every=None)
    worker._publish = lambda: published.append(worker.steps)
    for _ in range(3):
        worker._train((None, None))
    assert published == [2, 3]


def _bare_trainer_worker(core: Any, **runtime: Any) -> Any:
    """A ``TrainerWorker`` of ``core`` (rank 0, lockstep), not started by Ray."""
    import threading

    from looprl.distributed import RuntimeConfig
    from looprl.distributed.trainer_worker import CHECKPOINT_SECONDS, TrainerWorker

    worker = object.__new__(TrainerWorker.__ray_actor_class__)
    worker.__dict__.update(core=core, steps=0, group=None, rank=0, _published_at=0.0,
                           _publish=lambda: None, _lock=threading.Condition(), _rows=0,
                           runtime=RuntimeConfig(publish_every=1, sync=True, **runtime),
                           _stats=[], _meta={}, _blocked=0, _training=True, _wake=lambda: None,
                           _checkpoint_due=None, _checkpointed_at=-CHECKPOINT_SECONDS)
    return worker


def test_a_fast_trainer_checkpoints_at_most_every_few_seconds_but_when_asked() -> None:
    """(Was: every ``runtime.checkpoint_every`` steps whatever their pace: at 20, a quarter of
    a DQN trainer's speed on Ray.) The driver's request (``checkpoint_every`` frames) is
    served at the next step."""
    from looprl.agents.learner import Learner
    from looprl.distributed.trainer_worker import CHECKPOINT_SECONDS

    class Stepping:
        policy = SimpleNamespace(version=0)

        def step(self, sample):
            return TrainerStepResult({"loss": 1.0}, 0)

    worker = _bare_trainer_worker(Learner(Stepping(), None), checkpoint_every=2)
    taken = []
    worker.checkpoint = lambda replay=False, requested=True: (
        taken.append((worker.steps, replay, requested)),
        setattr(worker, "_checkpointed_at", time.monotonic()))
    for _ in range(10):
        worker._train((None, None))
    assert taken == [(2, False, False)]  # (steps 4, 6, ... within the seconds since)
    worker.request_checkpoint()
    worker._train((None, None))
    assert taken[1:] == [(11, False, True)]
    worker._checkpointed_at -= CHECKPOINT_SECONDS
    for _ in range(2):
        worker._train((None, None))
    assert taken[2:] == [(12, False, False)]
    worker.request_checkpoint(replay=True)  # (checkpoint_replay: the driver's with the replay)
    worker._train((None, None))
    assert taken[3:] == [(14, True, True)]


def test_a_periodic_trainer_checkpoint_does_not_stand_in_for_the_one_the_driver_asked_for(
        ) -> None:
    """(Was: a periodic copy, without the replay, taken between the requested one and the
    driver's next poll was the one the driver wrote.) A restarted trainer goes on from the
    latest of either."""
    from looprl.distributed.server import ParameterServer

    server = ParameterServer.__ray_actor_class__()
    assert server.trainer_checkpoint() is None and server.trainer_checkpoint(0, True) is None
    server.keep(5, b"asked, with the replay", requested=True)
    server.keep(9, b"periodic")
    assert server.trainer_checkpoint(5, requested=True) == (5, b"asked, with the replay")
    assert server.trainer_checkpoint(6, requested=True) is None  # (not yet: asked again)
    assert server.trainer_checkpoint() == (9, b"periodic")  # (a restart's)


@pytest.mark.parametrize(("returned", "message"), [
    (None, r"^trainer Odd.step returned a NoneType; return a looprl.core.TrainerStepResult"),
    ({"loss": 1.0}, r"^trainer Odd.step returned a dict; return"),
    (TrainerStepResult(stats={"loss": torch.ones(3), "kind": "ppo", "lr": 0.1}, step=1),
     r"^trainer Odd.step returned stats \['kind', 'loss'\] that are not single numbers"),
])
def test_a_users_trainer_returning_no_step_result_or_odd_stats_is_one_line(returned, message
                                                                           ) -> None:
    """A trainer that forgets to return its ``TrainerStepResult``, or gives a stat of several
    numbers: one line naming it (was: an AttributeError or a bare TypeError/ValueError)."""
    from types import SimpleNamespace

    from looprl.agents.learner import Learner

    class Odd:
        policy = SimpleNamespace(version=0)

        def step(self, sample):
            return returned

    with pytest.raises(TypeError, match=message):
        Learner(Odd(), None).learn((None, None))


def test_nan_rewards_from_the_environment_are_named_by_the_trainer_worker_as_locally() -> None:
    """(Was, on Ray: "the loss is nan ...; training diverged. Try a lower learning rate", where
    a local run names the environment's NaN rewards, which no learning rate fixes.)"""
    import threading

    from looprl.agents.actor import Actor
    from looprl.distributed import EnvRunner, RuntimeConfig
    from looprl.distributed.pipeline import collect
    from looprl.distributed.trainer_worker import TrainerWorker

    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args=CARTPOLE, trainer="ppo", trainer_args={"epochs": 1},
                         buffer_args={"batch_streams": 2}, label="cart")
    core = trainer_core(spec, seed=0)
    runner = EnvRunner(spec.make_env, None, 2, 8, core.policy.default_policy_state, seed=0,
                       policy=core.policy)
    batch = None
    while batch is None:
        collect(runner, Actor(core.policy))
        for sample in runner.segments():
            sample.reward[:] = np.nan
            core.put(sample)
        batch = core.next_batch()
    worker = object.__new__(TrainerWorker.__ray_actor_class__)
    batches = iter([batch])
    # frames: the env steps its actors reported (a local run's frame), not the transitions
    # the learner counted (with episode boundaries: 1,024 where a local DQN run said 982)
    assert core.observed != 13
    worker.__dict__.update(core=core, steps=0, group=None, rank=0, env_label="cart", frames=13,
                           runtime=RuntimeConfig(checkpoint_every=None),
                           _lock=threading.Condition(), _rows=0, _stats=[], _meta={},
                           _next_batch=lambda: next(batches))
    with pytest.raises(FloatingPointError, match=r"^The environment cart returned NaN or "
                                                 r"infinite rewards, and training diverged on "
                                                 r"them at frame 13; this is not a "
                                                 "learning-rate problem"):
        worker.run()


def test_a_step_that_gives_no_agent_a_turn_passes_test_environment_as_it_runs() -> None:
    """A run steps such an environment on without actions (``TurnlessStep``'s agent 1 gets its
    turn back): ``test_environment`` said "nobody is left to act". One that never gives a turn
    again is refused after ``TURNLESS`` steps (a run cuts its episode at the cap)."""
    from tests.configs.user_parts import TurnlessStep, _TwoAgents

    from looprl.distributed.testing_env import TURNLESS

    report = test_environment(registered("seed004-turnless", TurnlessStep), steps=13)
    assert (report.episodes, report.steps) == (2, 13)  # (6 steps each, as a run counts them)

    class NoTurns(_TwoAgents):
        def step(self, actions):
            return [None, None]

    with pytest.raises(EnvironmentCheckError) as error:
        test_environment(registered("seed004-no-turns", NoTurns), steps=500)
    assert str(error.value) == (
        f"env 'seed004-no-turns': step() returned None for every agent {TURNLESS} times in a "
        "row while agents [0, 1] play on: none is given a turn (a run would cut the episode at "
        "its cap); return a StepResult for the agents whose turn is next")


class Sleeps(Flags):
    """``Flags`` whose third step sleeps for a minute."""

    def step(self, actions: list[Any]) -> list[StepResult | None]:
        if self.t == 2:
            time.sleep(60)
        return super().step(actions)


def test_an_env_call_that_hangs_is_stopped_by_env_timeout() -> None:
    """``test_environment`` and ``test_pipeline`` waited for it forever."""
    from looprl.distributed import test_pipeline
    from looprl.environments.faults import EnvironmentFailure

    name = registered("seed004-sleeps", Sleeps)
    start = time.monotonic()
    with pytest.raises(EnvironmentCheckError) as error:
        test_environment(name, steps=8, env_timeout=1)
    assert str(error.value) == ("env 'seed004-sleeps': step() raised EnvironmentTimeout: it ran "
                                "past env_timeout=1 s (looprl run's runtime.env_timeout)")
    with pytest.raises(EnvironmentFailure) as error:
        test_pipeline(env=name, policy="actor-critic", trainer="ppo", env_timeout=1,
                      policy_args=dict(obs_dim={"obs": 1}, action_dim=3), n_envs=1)
    assert str(error.value) == ("Sleeps.step() raised EnvironmentTimeout: it ran past "
                                "env_timeout=1 s (looprl run's runtime.env_timeout) (copy 0, "
                                "episode 1, step 3)")
    assert time.monotonic() - start < 30
    with pytest.raises(ValueError, match="env_timeout .* must be"):
        test_environment(name, env_timeout=-1)
