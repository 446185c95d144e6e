"""The kind of buffer a ``Learner`` gets is decided in one place, ``agents.learner.buffer_kind``:
the one asked for, else the trainer's ``sample_buffer``, else on-policy segments."""

from __future__ import annotations

from looprl.agents.learner import buffer_kind, make_learner
from looprl.distributed import AlgorithmSpec
from looprl.distributed.pipeline import trainer_core
from looprl.memory import ExperienceReplayBuffer, OnPolicyBuffer, PrioritizedReplayBuffer


class Duck:
    """A trainer that subclasses nothing and names no sample buffer."""

    def __init__(self, sample_buffer: str | None = None):
        if sample_buffer is not None:
            self.sample_buffer = sample_buffer
        self.policy = type("P", (), {"version": 0})()


def test_a_learner_has_the_buffer_asked_for_else_the_trainers_else_on_policy() -> None:
    cases = [(Duck(), None, OnPolicyBuffer), (Duck("prioritized"), None, PrioritizedReplayBuffer),
             (Duck("prioritized"), "uniform", ExperienceReplayBuffer)]
    for trainer, asked, kind in cases:
        learner = make_learner(trainer, asked, {"size": 10} if kind is not OnPolicyBuffer else {})
        assert type(learner.buffer) is kind
        assert learner.replay == (kind is not OnPolicyBuffer)
    assert buffer_kind(Duck()) == "on_policy" and buffer_kind(Duck("uniform")) == "uniform"
    # a Ray trainer's learner: the same decision
    uniform = AlgorithmSpec(env="CartPole-v1", policy="q-network", policy_args={
        "obs_dim": {"obs": 4}, "action_dim": 2}, trainer="dqn", buffer="uniform")
    assert type(trainer_core(uniform).buffer) is ExperienceReplayBuffer
