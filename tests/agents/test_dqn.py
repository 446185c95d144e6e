"""Tests of the DQN policy, trainer and agent (looprl.agents.dqn)."""

from __future__ import annotations

import pytest
import torch
from torch import nn, optim

from helpers import RecordingTrainer
from looprl.agents import DQN, Actor, DQNPolicy, DQNTrainer
from looprl.approximation import FixedTarget, QNetwork
from looprl.core import (
    Agent,
    NamedArray,
    RolloutRequest,
    RolloutResult,
    SampleBatch,
    State,
    StateArray,
)
from looprl.environments import GymEnvironment
from looprl.memory import ExperienceReplayBuffer
from looprl.memory.replay import transitions


def _q(seed: int = 0, lr: float = 1e-2, target: object = None) -> QNetwork:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    return QNetwork(model, optim.Adam(model.parameters(), lr=lr), target=target)


def test_agent_calls_trainer_on_schedule() -> None:
    policy = DQNPolicy(_q(), 2, epsilon=1.0)
    trainer = RecordingTrainer(policy)
    agent = DQN(
        policy,
        trainer,
        ExperienceReplayBuffer(100),
        minibatch_size=5,
        replay_start_size=10,
        update_frequency=4,
        gradient_steps=3,
    )
    assert isinstance(agent, Agent)
    env = GymEnvironment("CartPole-v1", seed=0)
    env.reset()
    acts = 0
    while acts < 30:
        action = agent.act(env.state)
        acts += 1
        assert int(action) in (0, 1)
        if env.done:
            env.reset()
        else:
            env.step(action)
    # the transitions count (an act on a terminal state, or the first of an episode, stores
    # none): 3 steps at every 4th transition after the first 10
    observed = agent.learner.observed
    assert 30 - 1 - 3 <= observed <= 30 - 1  # a few episode ends among 30 acts, at most
    assert len(trainer.batches) == 3 * (observed // 4 - 10 // 4)
    batch = trainer.batches[0]  # one-step windows [2, minibatch_size]
    assert batch.obs.shape == (2, 5, 4) and batch.action.shape == (2, 5)
    assert batch.reward.shape == batch.done.shape == batch.truncated.shape == (2, 5)
    assert batch.weight is None  # uniform replay


def test_neither_alls_nor_looprls_arguments_are_one_line() -> None:
    """(ALL's DQN(q, policy, replay_buffer) trains: tests/agents/test_all_agents.py.)"""
    policy = DQNPolicy(_q(), 2)
    with pytest.raises(TypeError, match=r"^DQN takes ALL's \(q, policy, \.\.\.\): a QNetwork and "
                                        r"its GreedyPolicy\(q, n_actions, epsilon\), or looprl's "
                                        r"\(policy, trainer, \.\.\.\), got DQNPolicy and str$"):
        DQN(policy, "trainer", ExperienceReplayBuffer(100))


def test_agent_stores_transitions_but_not_out_of_done_states() -> None:
    policy = DQNPolicy(_q(), 2)
    buffer = ExperienceReplayBuffer(100)
    agent = DQN(policy, RecordingTrainer(policy), buffer, replay_start_size=1000)
    states = [State(torch.full((4,), float(i))) for i in range(3)]
    states.append(State(torch.full((4,), 3.0), done=True, reward=1.0))
    states.append(State(torch.full((4,), 4.0)))  # new episode: no transition from 3 to 4
    for state in states:
        agent.act(state)
    assert len(buffer) == 3
    _, _, rewards, next_states, _ = transitions(buffer.gather(torch.arange(3)))
    assert torch.equal(next_states.observation[:, 0], torch.tensor([1.0, 2.0, 3.0]))
    assert torch.equal(next_states.mask, torch.tensor([1.0, 1.0, 0.0]))
    assert torch.equal(rewards, torch.tensor([0.0, 0.0, 1.0]))


def _fixed_batch() -> tuple:
    generator = torch.Generator().manual_seed(0)
    n = 32
    states = StateArray({"observation": torch.randn(n, 4, generator=generator)}, (n,))
    next_obs = torch.randn(n, 4, generator=generator)
    mask = (torch.arange(n) % 4 != 0).float()
    rewards = torch.randn(n, generator=generator)
    next_states = StateArray(
        {"observation": next_obs, "reward": rewards, "mask": mask, "done": mask == 0}, (n,)
    )
    actions = torch.randint(0, 2, (n,), generator=generator)
    return states, actions, rewards, next_states, torch.ones(n)


def _window(batch: tuple) -> SampleBatch:
    """``(states, actions, rewards, next_states, weights)`` as one-step windows ``[2, B]``."""
    states, actions, rewards, next_states, weights = batch
    terminal = next_states.mask == 0
    return SampleBatch(
        obs=torch.stack([states.observation, next_states.observation]),
        action=torch.stack([actions, torch.zeros_like(actions)]),
        reward=torch.stack([torch.zeros_like(rewards), rewards]),
        done=torch.stack([torch.zeros_like(terminal), terminal]),
        truncated=torch.zeros(2, len(rewards), dtype=torch.bool),
        weight=weights.expand(2, -1),
    )


def _td_error(q: QNetwork, batch: tuple, discount: float) -> float:
    states, actions, rewards, next_states, _ = batch
    with torch.no_grad():
        values = q(states, actions)
    targets = rewards + discount * next_states.mask * q.target(next_states).max(dim=-1).values
    return float((values - targets).abs().mean())


def test_trainer_step_reduces_td_error_on_fixed_batch() -> None:
    q = _q(target=FixedTarget(10_000))  # the targets stay fixed during the test
    policy = DQNPolicy(q, 2)
    trainer = DQNTrainer(policy, discount_factor=0.9)
    batch = _fixed_batch()
    before = _td_error(q, batch, 0.9)
    losses = [float(trainer.step(_window(batch)).stats["loss"]) for _ in range(100)]
    after = _td_error(q, batch, 0.9)
    assert after < 0.5 * before
    assert losses[-1] < losses[0]
    assert policy.version == 100
    assert q.updates == 100


# A two-action linear Q-function Q(s) = W s (no bias) whose online and target weights differ,
# and a batch of three transitions whose targets are worked out by hand below.
ONLINE_W = [[1.0, 0.0], [0.0, 2.0]]
TARGET_W = [[2.0, 3.0], [5.0, 1.0]]


def _linear_q(lr: float) -> tuple[QNetwork, nn.Linear]:
    """A ``QNetwork`` with target weights ``TARGET_W`` and online weights ``ONLINE_W``, and
    its ``nn.Linear``."""
    model = nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor(TARGET_W))
    q = QNetwork(model, optim.SGD(model.parameters(), lr=lr), target=FixedTarget(1000))
    with torch.no_grad():
        model.weight.copy_(torch.tensor(ONLINE_W))
    return q, model


def _hand_batch() -> tuple:
    """``(states, actions, rewards, next_states, weights)``; the last transition terminates.

    Online values Q(s, a): s=[1, 1], a=1: 2; s=[1, -1], a=0: 1; s=[0, 1], a=1: 2.
    Next states: [1, 0] has online values [1, 0] and target values [2, 5];
    [0, 1] has online values [0, 2] and target values [3, 1]; [1, 1] is terminal.
    """
    states = StateArray({"observation": torch.tensor([[1.0, 1.0], [1.0, -1.0], [0.0, 1.0]])},
                        (3,))
    next_states = StateArray({"observation": torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
                              "mask": torch.tensor([1.0, 1.0, 0.0])}, (3,))
    actions = torch.tensor([1, 0, 1])
    rewards = torch.tensor([2.0, -1.0, 3.0])
    weights = torch.tensor([1.0, 2.0, 0.5])
    return states, actions, rewards, next_states, weights


def test_trainer_regresses_onto_the_target_networks_max_by_hand() -> None:
    q, linear = _linear_q(lr=0.3)
    batch = _hand_batch()
    assert not torch.equal(q.target(batch[3]), q.no_grad(batch[3]))  # two different networks
    trainer = DQNTrainer(DQNPolicy(q, 2), discount_factor=0.5, huber=False)
    # targets r + 0.5 * mask * max_a Q_target(s', a) = [2 + 0.5 * 5, -1 + 0.5 * 3, 3]
    #   = [4.5, 0.5, 3]; values [2, 1, 2]; TD errors [2.5, -0.5, 1]
    # (the online network's max would give [2.5, 0, 3], a mean over actions [3.75, 0, 3],
    # bootstrapping past the terminal state 3 + 0.5 * 6 = 6)
    # weighted MSE: (1 * 2.5^2 + 2 * 0.5^2 + 0.5 * 1^2) / 3 = 7.25 / 3
    loss = trainer.step(_window(batch)).stats["loss"]
    assert torch.isclose(loss, torch.tensor(7.25 / 3))
    # one SGD step, W[a] += lr * 2/3 * sum_i w_i td_i s_i over the rows with action a:
    # W[0] += 0.3 * 2/3 * 2 * -0.5 * [1, -1] = [-0.2, 0.2]
    # W[1] += 0.3 * 2/3 * (1 * 2.5 * [1, 1] + 0.5 * 1 * [0, 1]) = [0.5, 0.6]
    expected = torch.tensor([[0.8, 0.2], [0.5, 2.6]])
    assert torch.allclose(linear.weight, expected)
    assert torch.equal(q.target(batch[3]), torch.tensor([[2.0, 5.0], [3.0, 1.0], [0.0, 0.0]]))


def test_the_loss_is_the_mean_over_the_columns_that_hold_a_transition() -> None:
    """VQN's ``[2, n_envs]`` segments: a column starting at an episode's end holds no
    transition (weight 0). Was: it still counted in the mean's denominator, so the loss (and
    its gradient) shrank with the episodes that ended, unlike the on-policy losses' means."""
    g = torch.Generator().manual_seed(0)
    obs, action = torch.randn(2, 4, 2, generator=g), torch.randint(2, (2, 4), generator=g)
    reward = torch.randn(2, 4, generator=g)
    ended = torch.tensor([[True, False, False, False], [False] * 4])
    whole = SampleBatch(obs=obs, action=action, reward=reward, done=ended,
                        truncated=torch.zeros_like(ended))
    kept = SampleBatch(obs=obs[:, 1:], action=action[:, 1:], reward=reward[:, 1:],
                       done=ended[:, 1:], truncated=ended[:, 1:])
    losses = [DQNTrainer(DQNPolicy(_linear_q(0.1)[0], 2), huber=False).step(batch).stats["loss"]
              for batch in (whole, kept)]
    assert torch.isclose(losses[0], losses[1])


def test_policy_rollout_and_analyze() -> None:
    q = _q()
    policy = DQNPolicy(q, 2, epsilon=0.0)
    obs = torch.randn(6, 4)
    greedy = q.no_grad(StateArray({"observation": obs}, (6,))).argmax(-1)
    result = policy.rollout(NamedArray(obs=obs))
    assert torch.equal(result.action, greedy)
    evaluation = policy.rollout(NamedArray(obs=obs, is_evaluation=True))
    assert torch.equal(evaluation.action, greedy)
    explore = DQNPolicy(q, 2, epsilon=1.0).rollout(NamedArray(obs=torch.randn(200, 4)))
    assert set(explore.action.tolist()) == {0, 1}
    many = torch.randn(200, 4)
    greedy_many = q.no_grad(StateArray({"observation": many}, (200,))).argmax(-1)
    rows = torch.arange(200) < 100
    mixed = DQNPolicy(q, 2, epsilon=1.0).rollout(RolloutRequest(obs=many, is_evaluation=rows))
    assert isinstance(mixed, RolloutResult)
    assert torch.equal(mixed.action[rows], greedy_many[rows])
    assert not torch.equal(mixed.action[~rows], greedy_many[~rows])
    values = policy.analyze(NamedArray(obs=obs), target="q")  # Q(s, .) of any leading shape
    assert values.shape == (6, 2) and values.requires_grad
    assert torch.equal(values.argmax(-1), greedy)
    segments = policy.analyze(SampleBatch(obs=obs.view(3, 2, 4), reward=torch.zeros(3, 2)))
    assert segments.shape == (3, 2, 2)
    assert policy.module is q.model


def test_test_agent_is_greedy_and_does_not_train() -> None:
    q = _q()
    agent = Actor(DQNPolicy(q, 2), evaluation=True)
    obs = torch.randn(4)
    expected = q.no_grad(State(obs)).argmax(-1)
    assert torch.equal(agent.act(State(obs)), expected)
    assert q.updates == 0
