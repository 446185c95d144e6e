"""The ``Learner``: one update schedule, whether transitions arrive one ``State`` at a time
(the local ``act``) or as collector segments (the parallel experiments and Ray)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from looprl.agents.learner import Learner, ReplaySchedule, make_learner
from looprl.core import SampleBatch, State, TrainerStepResult
from looprl.memory import ExperienceReplayBuffer, OnPolicyBuffer


class CountingTrainer:
    """Records the batches it is given and bumps its policy's version."""

    sample_buffer = "uniform"

    def __init__(self) -> None:
        self.policy = type("P", (), {"version": 0, "hyperparameters": lambda self: {}})()
        self.batches: list[SampleBatch] = []

    def hyperparameters(self) -> dict:
        return {}

    def step(self, batch: SampleBatch) -> TrainerStepResult:
        self.batches.append(batch)
        self.policy.version += 1
        return TrainerStepResult({"loss": 0.0}, len(self.batches))


@pytest.mark.parametrize("min_size,frequency,steps", [(0, 1, 1), (10, 4, 1), (7, 3, 2),
                                                      (12, 4, 3), (5, 1, 4)])
def test_due_steps_are_gradient_steps_at_every_update_frequency_th_observation(
        min_size: int, frequency: int, steps: int) -> None:
    schedule = ReplaySchedule(8, min_size, frequency, steps)
    trained = 0
    for observed in range(1, 60):
        if observed > min_size and observed % frequency == 0:  # a training phase after it
            trained += steps
        assert schedule.steps(observed - 1, observed) == trained - schedule.steps(0, observed - 1)
        assert schedule.steps(0, observed) == trained, observed
        cut = observed // 3  # in two chunks: the same
        assert schedule.steps(0, cut) + schedule.steps(cut, observed) == trained


def _states(n: int) -> list[State]:
    """``n + 1`` states of one episode, the last one terminal."""
    return [State({"observation": torch.full((2,), float(t)), "reward": float(t),
                   "done": t == n, "mask": 0.0 if t == n else 1.0}) for t in range(n + 1)]


def _segment(first: int, rows: int) -> SampleBatch:
    """A ``[rows, 1]`` segment of the same states, from ``first``."""
    t = np.arange(first, first + rows, dtype=np.float32)
    return SampleBatch(obs=np.repeat(t[:, None, None], 2, axis=2), action=np.zeros((rows, 1)),
                       reward=t[:, None], done=np.zeros((rows, 1), bool),
                       truncated=np.zeros((rows, 1), bool))


def test_one_transition_per_put_or_whole_segments_train_on_the_same_schedule() -> None:
    """20 transitions put one by one (a local agent's ``act``: ``[2, 1]`` segments) or as 5
    segments of 4 (a collector's) give the trainer as many steps at the same observations."""
    def learner() -> Learner:
        return Learner(CountingTrainer(), ExperienceReplayBuffer(100),
                       ReplaySchedule(4, min_size=6, update_frequency=4, gradient_steps=2))

    one, segments = learner(), learner()
    steps_one = [0]
    for t in range(20):
        one.put(_segment(t, 2))
        one.train()
        steps_one.append(len(one.trainer.batches))
    for k in range(5):
        segments.put(_segment(4 * k, 5))
        segments.train()
        assert len(segments.trainer.batches) == steps_one[4 * k + 4], k
    assert one.observed == segments.observed == 20
    assert len(one.trainer.batches) == 2 * (20 // 4 - 6 // 4) == 8


def test_actors_wait_only_when_they_run_max_ahead_of_the_schedule() -> None:
    learner = Learner(CountingTrainer(), ExperienceReplayBuffer(100),
                      ReplaySchedule(2, min_size=0, update_frequency=1, gradient_steps=1,
                                     max_ahead=8))
    learner.put(_segment(0, 9))  # 8 transitions: 8 steps due, none taken, not yet 8 ahead
    assert learner.ready() and not learner.backlogged(1)
    learner.put(_segment(8, 2))  # 9 ahead
    assert learner.backlogged(1)
    learner.train()
    assert learner.updates == 9 and not learner.ready() and not learner.backlogged(1)


def test_a_replay_learner_restored_without_its_replay_lets_actors_in_again() -> None:
    """A Ray trainer resumes from a checkpoint without its replay (``Learner.state_dict``). The
    steps owed on the lost transitions cannot be taken: kept owed, they held back every put
    (``backlogged``, which a trainer worker's ``put`` waits on) while the empty replay let no
    step run (``ready``), and a resumed DQN run hung."""
    def learner() -> Learner:
        return Learner(CountingTrainer(), ExperienceReplayBuffer(100),
                       ReplaySchedule(2, min_size=0, update_frequency=1, gradient_steps=1,
                                      max_ahead=8))

    ahead = learner()
    ahead.put(_segment(0, 21))  # 20 steps owed, none taken: the actors wait
    assert ahead.backlogged(1)
    restored = learner()
    restored.load_state_dict(ahead.state_dict())
    assert len(restored.buffer) == 0 and restored.observed == 20
    assert not restored.backlogged(1)  # the actors' next transitions get in
    restored.put(_segment(20, 4))
    restored.train()  # and are trained on, on the schedule
    assert restored.updates == 3 and not restored.ready() and not restored.backlogged(1)


def test_on_policy_learner_steps_once_per_batch_of_streams_and_drops_stale_ones() -> None:
    trainer = CountingTrainer()
    learner = Learner(trainer, OnPolicyBuffer(batch_streams=2, max_lag=0))
    segment = _segment(0, 5)
    segment.policy_version = np.zeros((5, 1), np.int64)
    learner.put(segment)
    assert learner.train() is None  # one of two streams
    learner.put(segment)
    assert learner.train() is not None and learner.updates == 1
    learner.put(segment)  # made by version 0, now one behind
    assert learner.dropped == 1 and learner.received == 3


def test_a_replay_learner_refuses_a_max_lag_it_would_ignore() -> None:
    """(Was: ``runtime.max_lag`` accepted with a DQN trainer and never applied: its replay
    keeps every transition, however old.)"""
    with pytest.raises(ValueError, match="max_lag=2 drops stale on-policy segments, and "
                                         "CountingTrainer learns from a 'uniform' replay"):
        make_learner(CountingTrainer(), max_lag=2)
    assert make_learner(CountingTrainer()).replay  # (no max_lag: as before)
    assert make_learner(CountingTrainer(), "on_policy", max_lag=2).buffer.max_lag == 2


def test_the_update_hooks_run_around_each_step_and_the_schedule_is_a_hyperparameter() -> None:
    calls = []

    class Hooks:
        def update(self, trainer, batch):
            calls.append(len(batch.reward[0]))
            return trainer.step(batch)

    learner = make_learner(CountingTrainer(), "uniform",
                           {"batch": 3, "min_size": 2, "update_frequency": 2})
    learner.hooks = Hooks()
    learner.put(_segment(0, 5))
    learner.train()
    assert calls == [3]  # due after transition 4: one step of 3 rows
    hp = learner.hyperparameters()
    assert set(hp) == {"hp/batch_size", "hp/update_frequency", "hp/gradient_steps"}
    hp["hp/batch_size"].set(5)
    hp["hp/gradient_steps"].set(2)
    learner.put(_segment(4, 3))
    learner.train()
    assert calls == [3, 5, 5]  # transition 6: a phase of 2 steps of 5 rows
