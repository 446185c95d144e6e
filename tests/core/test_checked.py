"""What a policy's ``rollout``/``analyze`` and a trainer's ``step`` are handed is checked in one
place (``looprl.core.checked``), for looprl's policies and trainers and a user's own."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from looprl.core import NamedArray, Policy, RolloutRequest, SampleBatch, Trainer, TrainerStepResult


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message, message
    return message


def actor_critic() -> Policy:
    return Policy(type_="actor-critic-separate", args=dict(obs_dim={"obs": 4}, action_dim=2,
                                                           seed=0))


def segments(T: int = 5, B: int = 2) -> SampleBatch:
    """Good ``[T, B]`` segments for PPO (what an actor records)."""
    return SampleBatch(obs=NamedArray(obs=np.zeros((T, B, 4), np.float32)),
                       action=np.zeros((T, B), np.int64), reward=np.ones((T, B), np.float32),
                       done=np.zeros((T, B), bool), truncated=np.zeros((T, B), bool),
                       log_prob=np.full((T, B), -0.69, np.float32),
                       value=np.zeros((T, B), np.float32))


def windows(B: int = 4) -> SampleBatch:
    """Good one-step windows ``[2, B]`` for DQN."""
    return SampleBatch(obs=torch.zeros(2, B, 4), action=torch.zeros(2, B, dtype=torch.int64),
                       reward=torch.ones(2, B), done=torch.zeros(2, B, dtype=torch.bool),
                       truncated=torch.zeros(2, B, dtype=torch.bool))


def ppo() -> Trainer:
    return Trainer(type_="ppo", policy=actor_critic())


def dqn() -> Trainer:
    policy = Policy(type_="q-network", args=dict(obs_dim=4, action_dim=2, seed=0))
    return Trainer(type_="dqn", policy=policy)


def test_a_policy_given_a_dict_says_what_it_takes():
    """Was "'dict' object has no attribute 'obs'" from inside the policy."""
    policy = actor_critic()
    with pytest.raises(TypeError) as error:
        policy.rollout({"obs": np.zeros((2, 4), np.float32)})
    assert ("ActorCriticPolicy.rollout takes a RolloutRequest" in one_line(error)
            and "got a dict of keys ['obs']; build one with RolloutRequest.from_dict(d)"
            in one_line(error))
    with pytest.raises(TypeError) as error:
        policy.analyze(segments().to_dict())
    assert "ActorCriticPolicy.analyze takes a SampleBatch" in one_line(error)
    request = RolloutRequest(obs=NamedArray(obs=np.zeros((2, 4), np.float32)))
    assert policy.rollout(request).action.shape == (2,)  # (a request: acts)


@pytest.mark.parametrize("make", [ppo, dqn])
def test_a_trainer_given_a_dict_says_what_it_takes(make):
    """PPO said "expected a SampleBatch, got dict", DQN "'dict' object has no attribute"."""
    with pytest.raises(TypeError) as error:
        make().step({"obs": np.zeros((2, 4))})
    assert "Trainer.step takes a SampleBatch" in one_line(error)


@pytest.mark.parametrize("make, batch", [(ppo, segments), (dqn, windows)])
def test_actions_outside_the_policys_are_one_line(make, batch):
    """Was torch's "index 7 is out of bounds for dimension 1 with size 2" (PPO)."""
    trainer, sample = make(), batch()
    trainer.step(sample)  # (the good batch trains)
    sample.action = sample.action + 7
    with pytest.raises(ValueError) as error:
        trainer.step(sample)
    assert "has 2 actions, so actions must be whole numbers 0 .. 1, got 7" in one_line(error)


@pytest.mark.parametrize("make, batch", [(ppo, segments), (dqn, windows)])
def test_fractional_actions_of_a_discrete_policy_are_refused(make, batch):
    """Were cast to whole numbers silently by PPO (0.5 trained as action 0)."""
    trainer, sample = make(), batch()
    sample.action = sample.action + 0.5
    with pytest.raises(ValueError) as error:
        trainer.step(sample)
    assert "has 2 actions, so actions must be whole numbers 0 .. 1, got 0.5" in one_line(error)
    sample.action = sample.action - 0.5  # (whole numbers as floats: taken)
    assert np.isfinite(trainer.step(sample).stats["loss" if make is dqn else "value"])


@pytest.mark.parametrize("make, batch", [(ppo, segments), (dqn, windows)])
def test_nan_rewards_are_blamed_not_the_learning_rate(make, batch):
    """The line said to try a lower learning rate."""
    trainer, sample = make(), batch()
    sample.reward = sample.reward * float("nan")
    with pytest.raises(FloatingPointError) as error:
        trainer.step(sample)
    assert "the batch's reward holds NaN or inf" in one_line(error)
    assert "this is not a learning-rate problem" in one_line(error)


class Mine(Trainer):
    """A user's trainer: checked as looprl's are, and once when it calls its base's step."""

    def __init__(self, policy: Policy):
        self._policy = policy

    @property
    def policy(self) -> Policy:
        return self._policy

    def step(self, batch: SampleBatch) -> TrainerStepResult:
        self._policy.analyze(batch)
        return TrainerStepResult({"n": float(len(batch))}, 1)


class Yours(Mine):
    def step(self, batch: SampleBatch) -> TrainerStepResult:
        return super().step(batch)


def test_a_users_trainer_is_checked_once():
    trainer = Yours(actor_critic())
    assert trainer.step(segments()).stats == {"n": 5.0}
    with pytest.raises(TypeError) as error:
        trainer.step([1, 2])
    assert one_line(error).startswith("Yours.step takes a SampleBatch")
    assert Mine.step is Mine.__dict__["step"] and Mine.step.checked
    assert Mine.step.__doc__ is None and Mine.step.__name__ == "step"
