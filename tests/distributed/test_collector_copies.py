"""``EnvRunner`` has one code path for both forms of env copies (``looprl.collector.copies``):
SRL copies of a Gymnasium env and a vector environment of the same env give the same rows and
episodes; each agent's return comes with an episode; and an ``Actor``'s adder writes the rows
the collector writes (one builder, ``memory.segments.segment_rows``). No Ray."""

from __future__ import annotations

import gymnasium
import numpy as np
import torch

from helpers import CountingEnv
from looprl.agents.actor import Actor
from looprl.collector import EnvRunner, Episode
from looprl.core import RolloutResult, SampleBatch
from looprl.environments import SRLEnvironment, step_result
from looprl.environments.duplicate import DuplicateEnvironment
from looprl.environments.gym import GymEnvironment
from looprl.memory.segments import SegmentBuffer


def collect(runner: EnvRunner, steps: int) -> tuple[list[SampleBatch], list[Episode]]:
    """``steps`` steps of random actions (seeded); the segments and the episodes."""
    rng, segments, episodes = np.random.default_rng(0), [], []
    for _ in range(steps):
        request = runner.request()
        runner.step(0, RolloutResult(action=rng.integers(0, 2, len(request.done))))
        segments += runner.segments()
        episodes += runner.pop_episodes()
    return segments, episodes


def test_srl_copies_and_a_vector_environment_of_one_env_give_the_same_rows_and_episodes():
    srl = EnvRunner("gym", {"env_id": "CartPole-v1"}, n_envs=2, seed=3, segment_length=8)
    vector = EnvRunner(DuplicateEnvironment([GymEnvironment("CartPole-v1") for _ in range(2)]),
                       seed=3, segment_length=8)
    (srl_rows, srl_episodes), (rows, episodes) = collect(srl, 200), collect(vector, 200)
    assert len(episodes) > 5 and srl_episodes == episodes
    assert srl.total_frames == vector.total_frames < 400  # (a reset takes no frame)
    assert len(srl_rows) == len(rows) == 24
    for mine, theirs in zip(srl_rows, rows, strict=True):
        assert np.array_equal(mine.obs.obs, theirs.obs)  # (SRL rows keep the env's fields)
        for field in ("action", "reward", "done", "truncated", "policy_version", "stream"):
            assert np.array_equal(mine[field], theirs[field]), field
            assert mine[field].dtype == theirs[field].dtype, field


class Duel(SRLEnvironment):
    """Two agents, both acting every step: agent 0 earns 1 a step, agent 1 loses 1; episodes
    of 3 steps."""

    agent_count = 2

    def reset(self) -> list:
        self.t = 0
        return self._results(0.0)

    def step(self, actions: list) -> list:
        self.t += 1
        return self._results(1.0)

    def _results(self, reward: float) -> list:
        return [step_result({"obs": np.zeros(1, np.float32)}, reward * (1 - 2 * a), self.t == 3)
                for a in range(2)]


def test_an_episode_of_several_agents_comes_with_each_agents_return():
    runner = EnvRunner(Duel, n_envs=2, segment_length=None)
    _, episodes = collect(runner, 8)  # (steps 1-3, a reset, steps 1-3, a reset)
    assert episodes == [Episode(0.0, 3, i, (3.0, -3.0)) for i in (0, 1)] * 2


def test_an_agent_that_waits_while_the_other_finishes_plays_its_episode_to_the_end():
    """Agent 0 finished while agent 1 waited (``None``): the copy was reset there, agent 1's
    final reward lost and its rows never ended their episode."""
    from tests.configs.user_parts import LastToFinish

    runner = EnvRunner(LastToFinish, segment_length=4)
    for _ in range(4):
        request = runner.request()
        runner.step(0, None if request is None else RolloutResult(
            action=np.zeros(len(request.done), np.int64)))
    assert runner.pop_episodes() == [Episode(8.0, 3, 0, (2.0, 6.0))]
    waiting = runner.buffer.rows[:, 1]  # agent 1's rows: steps 0, 1 and its final one
    assert waiting.reward[:3].tolist() == [0.0, 1.0, 5.0]
    assert waiting.done[:3].tolist() == [False, False, True]


class Fixed:
    """A deterministic policy answering float64 log-probs and float32 values."""

    version = 7

    def rollout(self, request):
        obs = torch.as_tensor(request.obs)
        return RolloutResult(action=(obs[:, 0] > 0).long(), log_prob=obs[:, 1].double(),
                             value=obs[:, 2])


def test_the_actor_and_the_collector_write_the_same_rows():
    """The local agent's rows (``Actor.act`` on the collector's states) and the collector's."""
    runner = EnvRunner(DuplicateEnvironment([GymEnvironment("CartPole-v1")]), seed=0,
                       segment_length=5, max_episode_steps=9)  # (a cut: truncated rows)
    actor, policy = Actor(Fixed(), SegmentBuffer(5, 1)), Fixed()
    collector_rows, actor_rows = [], []
    for _ in range(60):
        request = runner.request()
        actor.act(runner.states())
        runner.step(0, policy.rollout(request), policy.version)
        collector_rows += runner.segments()
        actor_rows += actor.segments()
    assert len(actor_rows) == len(collector_rows) == 11
    assert all(any(s[end].any() for s in collector_rows) for end in ("done", "truncated"))
    assert collector_rows[0].log_prob.dtype == collector_rows[0].value.dtype == np.float32
    for mine, theirs in zip(actor_rows, collector_rows, strict=True):
        for field, value in theirs.items():
            if value is None:
                assert mine[field] is None, field
                continue
            assert np.array_equal(mine[field], value), field
            assert mine[field].dtype == value.dtype, field


class NaNOnce(gymnasium.Wrapper):
    """CartPole whose 5th step (over all copies) returns a NaN reward, once."""

    steps = 0

    def __init__(self):
        super().__init__(gymnasium.make("CartPole-v1"))

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        NaNOnce.steps += 1
        return obs, float("nan") if NaNOnce.steps == 5 else reward, terminated, truncated, info


def test_a_nan_reward_spoils_only_the_return_of_its_own_episode():
    NaNOnce.steps = 0
    vector = EnvRunner(GymEnvironment(NaNOnce(), name="NaNOnce").duplicate(2), seed=3,
                       segment_length=8)
    _, episodes = collect(vector, 300)
    assert len(episodes) > 10
    spoiled = [e.ret for e in episodes if not np.isfinite(e.ret)]
    assert len(spoiled) == 1, [e.ret for e in episodes]  # (was: every later one of its copy)


class Pressed(SRLEnvironment):
    """One agent of ``Box(-1, 1)`` actions; keeps the actions it received."""

    agent_count = 1
    action_spaces = [gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)]

    def __init__(self):
        self.received = []

    def reset(self) -> list:
        return [step_result({"obs": np.zeros(1, np.float32)}, 0.0, False)]

    def step(self, actions: list) -> list:
        self.received.append(actions[0])
        return self.reset()


def test_srl_copies_clip_box_actions_as_a_local_single_agent_run_does():
    """A Ray actor's SRL copy gets the actions the local view (``GymEnvironment``) sends:
    clipped to the ``Box``."""
    runner = EnvRunner(Pressed, n_envs=1, segment_length=None)
    runner.request()
    runner.step(0, RolloutResult(action=np.array([[3.5]], np.float32)))
    runner.request()
    runner.step(0, RolloutResult(action=np.array([[-0.25]], np.float32)))
    assert [a.tolist() for a in runner.envs[0].received] == [[1.0], [-0.25]]


def test_srl_copies_pass_namedarray_actions_as_they_are():
    """SRL's environments read their actions' fields (``action.x``): a ``NamedArray`` action
    reaches them unclipped and unconverted."""
    from looprl.core import NamedArray

    runner = EnvRunner(Pressed, n_envs=1, segment_length=None)
    runner.request()
    runner.step(0, RolloutResult(action=NamedArray(x=np.array([[3.5]], np.float32))))
    received = runner.envs[0].received[0]
    assert isinstance(received, NamedArray) and received.x.tolist() == [3.5]


class Tenths(CountingEnv):
    """Reward 0.1 a step, episodes of 1,000 steps: a return of 100."""

    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def step(self, action):
        self.t += 1
        return np.zeros(1, np.float32), 0.1, False, self.t == 1000, {}


def test_a_return_sums_the_envs_rewards_in_float64_and_the_rows_keep_float32():
    """Each 0.1 was rounded to float32 before the sum: a return of 100.0000015."""
    from looprl.environments import GymVectorEnvironment
    from looprl.environments.srl_adapters import GymnasiumEnvironment

    vector = GymVectorEnvironment(gymnasium.vector.SyncVectorEnv([Tenths]), "Tenths")
    for env, process in (((lambda: GymnasiumEnvironment(Tenths())), None),  # (SRL copies)
                         (vector, None), (vector, lambda states: states),  # (bodies)
                         (DuplicateEnvironment([GymEnvironment(Tenths(), name="Tenths")]), None)):
        runner = EnvRunner(env, segment_length=500, process=process)
        rows, episodes = collect(runner, 1001)
        assert [e.length for e in episodes] == [1000]
        assert abs(episodes[0].ret - 100.0) < 1e-9, episodes[0].ret
        assert rows[0].reward.dtype == np.float32 and rows[0].reward[1, 0] == np.float32(0.1)
