"""``EnvRunner``'s batched rows (no Ray): streams that do not act are masked out of a step,
recurrent states follow their streams, whole episodes outgrow the first allocation, and the
segments handed out are the caller's to keep."""

from __future__ import annotations

import numpy as np
import pytest

from looprl.core import NamedArray, RolloutResult
from looprl.distributed import EnvRunner
from looprl.environments import SRLEnvironment, register, srl, step_result


class Turns(SRLEnvironment):
    """Two agents; agent ``a`` observes ``[a, t]``; agent 1 acts at even ``t`` only (``None``
    in between); episodes of ``length`` steps."""

    agent_count = 2

    def __init__(self, length: int = 8):
        self.length, self.t = length, 0

    def reset(self):
        self.t = 0
        return self._results()

    def step(self, actions):
        assert (actions[1] is None) == (self.t % 2 == 1)  # only the agents asked got one
        self.t += 1
        return self._results()

    def _results(self):
        return [None if a == 1 and self.t % 2 else
                step_result({"obs": np.array([a, self.t], np.float32)}, 1.0, self.t == self.length)
                for a in range(2)]


class Counting:
    """Action 0; its recurrent state counts the rows it saw since the stream's episode start."""

    default_policy_state = NamedArray(h=np.zeros(1, np.float32))

    def rollout(self, request):
        n, state = len(request.obs), request.policy_state
        return RolloutResult(action=np.zeros(n, np.int64),
                             policy_state=None if state is None else NamedArray(h=state.h + 1))


def collect(runner: EnvRunner, steps: int) -> list:
    policy, segments = Counting(), []
    for _ in range(steps):
        runner.step(0, policy.rollout(runner.request(0)))
        segments += runner.segments()
    return segments


def test_agents_that_wait_get_no_rows_and_states_follow_their_streams() -> None:
    runner = EnvRunner(Turns, n_envs=2, segment_length=3,
                       default_policy_state=Counting.default_policy_state)
    segments = collect(runner, 40)
    assert segments and all(s.obs.obs.shape[:2] == (4, s.agent.shape[1]) for s in segments)
    for segment in segments:
        for stream in range(segment.agent.shape[1]):
            agent, t = segment.agent[0, stream], segment.obs.obs[:, stream, 1]
            assert (segment.obs.obs[:, stream, 0] == agent).all()
            ends = (segment.done[:, stream])[:-1]
            step = 1 if agent == 0 else 2  # agent 1 sees every other step only
            expected = np.where(ends, -t[:-1], t[:-1] + step)  # the next row starts over
            assert (t[1:] == np.maximum(expected, 0)).all(), t
            # the state before each row: the rows seen since the episode started
            assert (segment.policy_state.h[:, stream, 0] == t / step).all()


def test_a_runner_without_a_buffer_keeps_no_rows_and_still_carries_states() -> None:
    """``segment_length=None`` (evaluation): no rows, no segments; the recurrent states
    still follow their streams and start again at episode ends."""
    runner = EnvRunner(Turns, n_envs=2, segment_length=None,
                       default_policy_state=Counting.default_policy_state)
    assert runner.buffer is None
    seen = []
    for _ in range(20):
        request = runner.request(0)
        seen.append((request.obs.obs[:, 1].copy(), request.agent.copy(),
                     request.policy_state.h[:, 0].copy()))
        runner.step(0, Counting().rollout(request))
        assert runner.segments() == []
    for t, agent, h in seen:  # the state before each row: the rows seen since the start
        assert (h == t / np.where(agent == 0, 1, 2)).all(), (t, agent, h)


def test_segments_number_their_streams_so_that_replay_can_join_them() -> None:
    """``SampleBatch.stream``: one number per stream (copy and agent), from ``first_stream``,
    constant down a segment; a stream's next segment starts with its last row."""
    runner = EnvRunner(Turns, n_envs=2, segment_length=3, first_stream=100)
    last_rows, agents = {}, {}
    for segment in collect(runner, 40):
        assert (segment.stream == segment.stream[0]).all()
        for column, stream in enumerate(segment.stream[0].tolist()):
            assert agents.setdefault(stream, segment.agent[0, column]) == segment.agent[0, column]
            obs = segment.obs.obs[:, column]
            if stream in last_rows:
                assert np.array_equal(obs[0], last_rows[stream])
            last_rows[stream] = obs[-1]
    assert sorted(agents) == [100, 101, 102, 103]


def test_requests_mark_the_rows_whose_episode_ended() -> None:
    """``request.done``: the rows whose observation ended its episode (the env resets next
    and ignores their action); what ends an ez-greedy option on the collector."""
    runner, policy, ended = EnvRunner(Turns, n_envs=2, segment_length=3), Counting(), 0
    for _ in range(30):
        request = runner.request(0)
        assert np.array_equal(request.done, request.obs.obs[:, 1] == 8)
        ended += int(request.done.sum())
        runner.step(0, policy.rollout(request))
    assert ended == 2 * 2 * 3  # 2 copies, 2 agents, episodes ending at steps 8, 17 and 26


class EarlyEnd(SRLEnvironment):
    """Two agents acting together; agent 0's episode terminates at step 2 (then ``None``),
    agent 1's at step 4. ``actions``: what ``step`` was given."""

    agent_count = 2

    def __init__(self):
        self.t, self.actions = 0, []

    def reset(self):
        self.t = 0
        return [step_result({"obs": np.array([self.t], np.float32)}, 0.0, False)] * 2

    def step(self, actions):
        self.actions.append(list(actions))
        self.t += 1
        first = step_result({"obs": np.array([self.t], np.float32)}, 1.0, self.t == 2)
        return [first if self.t <= 2 else None,
                step_result({"obs": np.array([self.t], np.float32)}, 1.0, self.t == 4)]


def test_an_agent_whose_episode_terminated_gets_none_while_the_others_play_on() -> None:
    """As SRL's actor does (and ``test_environment``): its row at the end is asked (the action
    ignored), but the env gets ``None`` for it (was: the ignored action)."""
    runner = EnvRunner(EarlyEnd, n_envs=1, segment_length=3)
    for _ in range(4):
        request = runner.request(0)
        runner.step(0, RolloutResult(action=np.ones(len(request.done), np.int64)))
    assert runner.envs[0].actions == [[1, 1], [1, 1], [None, 1], [None, 1]]
    assert [episode.returns for episode in runner.pop_episodes()] == [(2.0, 4.0)]


class RepeatedDone(EarlyEnd):
    """``EarlyEnd``, but agent 0 keeps getting ``done`` results (reward 1) after its end."""

    def step(self, actions):
        results = super().step(actions)
        return [step_result({"obs": np.array([self.t], np.float32)}, 1.0, True)
                if results[0] is None else results[0], results[1]]


def test_a_repeated_done_for_an_agent_already_done_is_not_a_new_episode(monkeypatch) -> None:
    """As SRL's actor ("garbage steps"): such a result is as ``None``, no row, no reward
    (was: one-row episodes of agent 0 in the rows and its return counted 4, not 2)."""
    monkeypatch.setattr(srl, "_REGISTRY", {})
    register("repeated-done-test", RepeatedDone)
    runner = EnvRunner("repeated-done-test", n_envs=1, segment_length=4)
    segments, asked = [], []
    for _ in range(10):
        request = runner.request(0)
        asked.append(request.agent.tolist())
        runner.step(0, RolloutResult(action=np.ones(len(request.done), np.int64)))
        segments += runner.segments()
    assert asked == [[0, 1], [0, 1], [0, 1], [1], [1]] * 2
    assert runner.envs[0].actions == [[1, 1], [1, 1], [None, 1], [None, 1]] * 2
    assert [episode.returns for episode in runner.pop_episodes()] == [(2.0, 4.0)] * 2
    rows = [s.obs.obs[:, j, 0] for s in segments for j in range(s.agent.shape[1])
            if s.agent[0, j] == 0]
    assert [r.tolist() for r in rows] == [[0, 1, 2, 0, 1]]  # one episode end, at t = 2


def test_vector_environment_requests_mark_the_rows_whose_episode_ended() -> None:
    from looprl.environments import GymEnvironment

    runner = EnvRunner(GymEnvironment("CartPole-v1").duplicate(3), segment_length=4, seed=0)
    policy, ended, episodes = Counting(), 0, 0
    for _ in range(300):
        request = runner.request(0)
        ended += int(request.done.sum())
        runner.step(0, policy.rollout(request))
        episodes += len(runner.pop_episodes())
    ended += int(runner.request(0).done.sum())  # (the episodes the last step ended)
    assert episodes > 10 and ended == episodes


def test_vector_environment_episodes_start_from_a_return_and_length_of_zero() -> None:
    from looprl.environments import GymEnvironment

    runner = EnvRunner(GymEnvironment("CartPole-v1").duplicate(3), segment_length=5, seed=0)
    segments = collect(runner, 200)
    episodes = runner.pop_episodes()
    assert len(episodes) > 30
    # action 0 topples the pole within about ten steps, each rewarded 1
    assert all(e.ret == e.length and 5 <= e.length <= 30 for e in episodes)
    for segment in segments:  # the step that resets a copy earns nothing
        assert (segment.reward[1:][segment.done[:-1] | segment.truncated[:-1]] == 0).all()


def test_whole_episodes_outgrow_the_first_allocation() -> None:
    runner = EnvRunner(lambda: Turns(length=10), n_envs=1, segment_length=3,
                       whole_episodes=True)
    segments = collect(runner, 30)
    agent_0 = [s for s in segments if s.agent[0, 0] == 0]
    assert len(agent_0) >= 2
    for segment in agent_0:  # one whole episode, 11 rows, where 4 were allocated first
        assert (segment.obs.obs[:, 0, 1] == np.arange(11)).all()


def test_segments_handed_out_stay_as_they_were() -> None:
    runner = EnvRunner("CartPole-v1", n_envs=2, segment_length=2)  # every stream at once
    first = collect(runner, 3)[0]
    kept = first.obs.obs.copy()
    collect(runner, 20)
    assert np.array_equal(first.obs.obs, kept)


def test_agents_whose_observations_differ_in_shape_are_one_line() -> None:
    class Uneven(Turns):  # agent 1 sees one more number, at its first turn (t = 2)
        def _results(self):
            results = super()._results()
            if results[1] is not None and self.t:
                results[1].obs["obs"] = np.zeros(3, np.float32)
            return results

    runner = EnvRunner(Uneven, n_envs=1, segment_length=3)
    with pytest.raises(ValueError) as error:
        collect(runner, 4)
    message = str(error.value)
    assert "\n" not in message
    for part in ("Uneven's observations changed shape", "{'obs': (3,)} after {'obs': (2,)}",
                 "the same for every agent"):
        assert part in message


def test_an_agent_count_written_as_a_method_is_one_line() -> None:
    """The seed calls ``agent_count`` a method; SRL reads it as a property (was: 'unsupported
    operand type(s) for *: 'int' and 'method'', then "must be positive, got <bound method")."""

    class AsMethod(EarlyEnd):
        def agent_count(self):
            return 2

    with pytest.raises(TypeError, match=r"^AsMethod.agent_count is a method; make it a @property "
                                        "that returns the number of agents$"):
        EnvRunner(AsMethod, n_envs=1)


def test_observations_that_turn_from_integers_to_fractions_are_one_line() -> None:
    """A first observation of integers (``np.array([0, 0])``), fractions later: one line (was:
    the later ones cut to integers in every request and row, silently)."""

    class IntegersFirst(Turns):
        def _results(self):
            results = super()._results()
            for result in results:
                if result is not None:
                    result.obs["obs"] = result.obs["obs"].astype(int if self.t == 0 else float)
            return results

    runner = EnvRunner(IntegersFirst, n_envs=1, segment_length=3)
    with pytest.raises(ValueError, match=r"^IntegersFirst's observation 'obs' changed dtype "
                                         r"\(float64 after int64\), which would cut its values"):
        collect(runner, 2)
