"""Tests of the PPO policy, trainer and agent (looprl.agents.ppo)."""

from __future__ import annotations

import torch
from torch import nn, optim

from looprl.agents import PPO, ActorCritic, PPOPolicy, PPOTestAgent, PPOTrainer
from looprl.approximation import Approximation
from looprl.core import (
    NamedArray,
    ParallelAgent,
    RolloutRequest,
    RolloutResult,
    State,
    StateArray,
)
from looprl.environments import GymVectorEnvironment
from looprl.policies.distributions import CategoricalHead


def _policy(seed: int = 0, lr: float = 1e-2, n_actions: int = 3) -> PPOPolicy:
    torch.manual_seed(seed)
    model = ActorCritic(nn.Linear(4, n_actions), nn.Linear(4, 1))
    approximation = Approximation(model, optim.Adam(model.parameters(), lr=lr))
    return PPOPolicy(approximation, CategoricalHead(n_actions))


def test_actor_critic_forward() -> None:
    model = ActorCritic(nn.Linear(4, 3), nn.Linear(4, 1))
    logits, values = model(torch.zeros(5, 4))
    assert logits.shape == (5, 3) and values.shape == (5,)


def test_rollout_shapes_and_values() -> None:
    policy = _policy()
    obs = torch.randn(6, 4)
    result = policy.rollout(NamedArray(obs=obs))
    assert result.action.shape == (6,) and result.action.dtype == torch.int64
    assert ((result.action >= 0) & (result.action < 3)).all()
    logits, values = policy.module(obs)
    expected_log_prob = torch.log_softmax(logits, -1).gather(-1, result.action[:, None])[:, 0]
    assert torch.allclose(result.log_prob, expected_log_prob, atol=1e-6)
    assert torch.allclose(result.value, values, atol=1e-6)
    assert not result.log_prob.requires_grad
    assert torch.allclose(policy.value(obs), values, atol=1e-6)


def test_rollout_is_evaluation_gives_argmax() -> None:
    policy = _policy()
    obs = torch.randn(50, 4)
    logits, _ = policy.module(obs)
    result = policy.rollout(NamedArray(obs=obs, is_evaluation=True))
    assert torch.equal(result.action, logits.argmax(-1))
    not_eval = policy.rollout(NamedArray(obs=obs, is_evaluation=False))
    assert not_eval.action.shape == (50,)


def test_rollout_request_and_result_types_with_per_row_evaluation() -> None:
    policy = _policy()
    obs = torch.randn(400, 4)
    with torch.no_grad():  # a near-uniform policy, so that sampling differs from argmax
        policy.module.actor.weight.mul_(1e-3)
    logits, _ = policy.module(obs)
    rows = torch.arange(400) % 2 == 0
    result = policy.rollout(RolloutRequest(obs=obs.numpy(), is_evaluation=rows))
    assert isinstance(result, RolloutResult) and result.policy_state is None
    assert torch.equal(result.action[rows], logits.argmax(-1)[rows])
    assert not torch.equal(result.action[~rows], logits.argmax(-1)[~rows])


def test_sampling_follows_the_distribution() -> None:
    policy = _policy()
    with torch.no_grad():
        policy.module.actor.weight.zero_()
        policy.module.actor.bias.copy_(torch.tensor([0.0, 0.0, 100.0]))
    result = policy.rollout(NamedArray(obs=torch.randn(100, 4)))
    assert (result.action == 2).all()


def test_analyze_matches_rollout_log_probs() -> None:
    policy = _policy()
    obs = torch.randn(8, 4)
    result = policy.rollout(NamedArray(obs=obs))
    log_prob, entropy, value = policy.analyze(NamedArray(observation=obs, action=result.action))
    assert torch.allclose(log_prob, result.log_prob, atol=1e-6)
    assert torch.allclose(value, result.value, atol=1e-6)
    assert entropy.shape == (8,) and (entropy > 0).all()
    assert (entropy <= torch.log(torch.tensor(3.0)) + 1e-6).all()
    assert log_prob.requires_grad


def _batch(policy: PPOPolicy, n: int = 32) -> NamedArray:
    generator = torch.Generator().manual_seed(1)
    obs = torch.randn(n, 4, generator=generator)
    result = policy.rollout(NamedArray(obs=obs))
    advantage = torch.randn(n, generator=generator)
    return NamedArray(
        observation=obs,
        action=result.action,
        log_prob=result.log_prob,
        value=result.value,
        advantage=advantage,
        returns=advantage + result.value,
    )


def test_trainer_step_changes_parameters_and_version() -> None:
    policy = _policy()
    generator = torch.Generator().manual_seed(0)
    trainer = PPOTrainer(policy, epochs=2, minibatch_size=8, generator=generator)
    before = [p.detach().clone() for p in policy.module.parameters()]
    stats = trainer.step(_batch(policy))
    after = list(policy.module.parameters())
    assert any(not torch.equal(b, a) for b, a in zip(before, after))
    assert policy.version == 1 and trainer.updates == 1
    assert {"policy", "value", "entropy", "clip"} <= set(stats)
    assert stats["clip"] == 0.2
    assert policy.approximation.updates == 2 * 4  # epochs x minibatches
    trainer.step(_batch(policy))
    assert policy.version == 2


def test_trainer_clip_schedule_anneals_with_progress() -> None:
    policy = _policy()
    trainer = PPOTrainer(
        policy, epochs=1, minibatch_size=32, clip=lambda p: 0.2 * (1 - p), total_updates=4
    )
    clips = [trainer.step(_batch(policy))["clip"] for _ in range(3)]
    assert clips == [0.2, 0.2 * 0.75, 0.2 * 0.5]
    assert trainer.progress == 0.75


class CountingTrainer(PPOTrainer):
    def __init__(self, policy: PPOPolicy):
        super().__init__(policy, epochs=1, minibatch_size=64)
        self.batches: list[NamedArray] = []

    def step(self, batch: NamedArray) -> dict:
        self.batches.append(batch)
        return super().step(batch)


def test_agent_trains_once_every_n_steps() -> None:
    policy = _policy(n_actions=2)
    trainer = CountingTrainer(policy)
    agent = PPO(policy, trainer, n_envs=2, n_steps=4)
    assert isinstance(agent, ParallelAgent)
    env = GymVectorEnvironment("CartPole-v1", 2, seed=0)
    state = env.reset()
    for _ in range(13):
        action = agent.act(state)
        assert action.shape == (2,)
        state = env.step(action)
    # the rollout is complete at acts 5, 9 and 13
    assert len(trainer.batches) == 3
    assert policy.version == 3
    for batch in trainer.batches:
        n = batch.advantage.shape[0]
        assert 0 < n <= 8  # 4 steps x 2 envs, minus rows leaving done states
        assert batch.observation.shape == (n, 4)
        assert torch.allclose(batch.returns, batch.advantage + batch.value)


def test_test_agent_on_state_and_state_array() -> None:
    policy = _policy()
    agent = PPOTestAgent(policy)
    obs = torch.randn(5, 4)
    logits, _ = policy.module(obs)
    batch_actions = agent.act(StateArray({"observation": obs}, (5,)))
    assert torch.equal(batch_actions, logits.argmax(-1))
    single = agent.act(State(obs[2]))
    assert single.shape == () and int(single) == int(logits[2].argmax())
