"""ALL's agent classes built as an ALL user builds them (seed 003: "passing appropriate objects
into the constructor of the high-level algorithms contained in all.agents"), trained with the
seed's control loop; each must learn CartPole (random play: about 22 a episode)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
import torch
from torch import nn, optim
from torch.nn import functional as F

from looprl.agents import C51, DDPG, DDQN, DQN, VQN, Rainbow, VSarsa
from looprl.approximation import (
    FixedTarget,
    LinearScheduler,
    PolyakTarget,
    QContinuous,
    QDist,
    QNetwork,
)
from looprl.environments import GymEnvironment, GymVectorEnvironment
from looprl.experiments.experiment import seed_everything
from looprl.memory import ExperienceReplayBuffer, NStepReplayBuffer, PrioritizedReplayBuffer
from looprl.policies import DeterministicPolicy, GreedyPolicy, ParallelGreedyPolicy


def mlp(outputs: int, hidden: int = 64) -> nn.Module:
    return nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, outputs))


def q_network(target_update: int = 100) -> QNetwork:
    model = mlp(2)
    return QNetwork(model, optim.Adam(model.parameters(), lr=1e-3),
                    target=FixedTarget(target_update))


def episodes(agent: Any, steps: int, env_id: str = "CartPole-v1") -> list[float]:
    """Seed 003's control loop on ``env_id``: each finished episode's return."""
    env = GymEnvironment(env_id)
    env.reset()
    returns, episode = [], 0.0
    for _ in range(steps):
        env.step(agent.act(env.state))
        episode += float(env.state.reward)
        if env.state.done:
            agent.act(env.state)  # (the terminal update)
            returns.append(episode)
            episode = 0.0
            env.reset()
    return returns


def last(returns: list[float], n: int = 10) -> float:
    return sum(returns[-n:]) / n


@pytest.mark.parametrize("agent_class", [DQN, DDQN])
def test_dqn_and_ddqn_as_alls(agent_class: type) -> None:
    """``DQN(q, policy, replay_buffer, discount_factor, loss, minibatch_size, replay_start_size,
    update_frequency)`` (was: a TypeError, looprl's (policy, trainer, ...) only)."""
    seed_everything(0)
    q = q_network()
    policy = GreedyPolicy(q, 2, epsilon=LinearScheduler(1.0, 0.02, 0, 3000, name="epsilon"))
    agent = agent_class(q, policy, ExperienceReplayBuffer(10000, device="cpu"),
                        discount_factor=0.99, minibatch_size=64, replay_start_size=500)
    assert agent.q is q and agent.minibatch_size == 64
    assert last(episodes(agent, 9000)) > 150
    assert agent.eval(GymEnvironment("CartPole-v1").reset()) in (0, 1)  # (ALL's eval)


@pytest.mark.parametrize("agent_class", [C51, Rainbow])
def test_c51_and_rainbow_as_alls(agent_class: type) -> None:
    """``C51(q_dist, replay_buffer, discount_factor, eps, exploration, ...)``; Rainbow's n-step
    prioritized replay is ALL's ``NStepReplayBuffer(n, gamma, PrioritizedReplayBuffer(...))``
    with the agent's discount ``gamma ** n``."""
    seed_everything(0)
    model = mlp(2 * 51)
    q_dist = QDist(model, optim.Adam(model.parameters(), lr=1e-3), 2, 51, v_min=-10, v_max=110,
                   target=FixedTarget(100))
    buffer: Any = ExperienceReplayBuffer(10000, device="cpu")
    discount = 0.99
    if agent_class is Rainbow:
        buffer = NStepReplayBuffer(2, 0.99, PrioritizedReplayBuffer(10000, 0.5, 0.5,
                                                                    device="cpu"))
        discount = 0.99 ** 2
    agent = agent_class(q_dist, buffer, discount_factor=discount, minibatch_size=64,
                        replay_start_size=500)
    assert last(episodes(agent, 9000)) > 150


@pytest.mark.parametrize("agent_class", [VQN, VSarsa])
def test_vqn_and_vsarsa_as_alls_on_parallel_environments(agent_class: type) -> None:
    """``VQN(q, policy, discount_factor)`` with ALL's ``ParallelGreedyPolicy``: one online update
    per ``act`` on the ``StateArray`` of 8 environments."""
    seed_everything(0)
    env = GymVectorEnvironment("CartPole-v1", 8)
    q = q_network(target_update=25)
    policy = ParallelGreedyPolicy(q, 2, epsilon=LinearScheduler(1.0, 0.02, 0, 1000,
                                                                 name="epsilon"))
    agent = agent_class(q, policy, discount_factor=0.95)
    states, episode, returns = env.reset(seed=0), torch.zeros(8), []
    for _ in range(5000):
        states = env.step(agent.act(states))
        episode += states.reward
        returns += episode[states.done].tolist()
        episode[states.done] = 0.0
    assert max(last(returns[:end], 20) for end in range(20, len(returns))) > 100


def ddpg_parts() -> tuple[QContinuous, DeterministicPolicy, Any]:
    space = GymEnvironment("Pendulum-v1").action_space
    q_model = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                            nn.Linear(64, 1))
    model = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 1))
    q = QContinuous(q_model, optim.Adam(q_model.parameters(), lr=1e-3),
                    target=PolyakTarget(0.005))
    policy = DeterministicPolicy(model, optim.Adam(model.parameters(), lr=1e-3), space,
                                 target=PolyakTarget(0.005))
    return q, policy, space


def test_ddpg_as_alls() -> None:
    """``DDPG(q, policy, replay_buffer, action_space, discount_factor, minibatch_size, noise,
    replay_start_size, update_frequency)`` learns Pendulum (random play: about -1,200)."""
    seed_everything(0)
    q, policy, space = ddpg_parts()
    agent = DDPG(q, policy, ExperienceReplayBuffer(10000, device="cpu"), space,
                 minibatch_size=64, noise=0.1, replay_start_size=1000)
    assert policy.noise == 0.1 and agent.q is q
    assert last(episodes(agent, 7000, "Pendulum-v1"), 5) > -600


def test_alls_arguments_that_looprl_cannot_honour_are_one_line() -> None:
    q = q_network()
    policy = GreedyPolicy(q, 2, epsilon=0.1)
    buffer = ExperienceReplayBuffer(100, device="cpu")
    with pytest.raises(TypeError, match=r"^DQN takes ALL's \(q, policy, \.\.\.\): a QNetwork and "
                                        r"its GreedyPolicy\(q, n_actions, epsilon\), or looprl's "
                                        r"\(policy, trainer, \.\.\.\), got QNetwork and float$"):
        DQN(q, 0.1, buffer)
    with pytest.raises(ValueError, match=r"^DDQN's loss is mse_loss or smooth_l1_loss .* got "
                                         r"'l1_loss'$"):
        DDQN(q, policy, buffer, loss=F.l1_loss)
    with pytest.raises(ValueError, match=r"^DQN's discount_factor \(0.99\) bootstraps the 3-step "
                                         r"returns of NStepReplayBuffer\(3, 0.99, \.\.\.\): give "
                                         r"discount_factor=0.970299 \(0.99 \*\* 3\)"):
        DQN(q, policy, NStepReplayBuffer(3, 0.99, ExperienceReplayBuffer(100, device="cpu")))
    with pytest.raises(TypeError, match=r"^C51 takes ALL's \(q_dist, replay_buffer, \.\.\.\): a "
                                        r"QDist"):
        C51(q, buffer)
    model = mlp(2 * 51)
    with pytest.raises(ValueError, match=r"^Rainbow's eps is ALL's default \(1e-5\) only"):
        Rainbow(QDist(model, None, 2, 51), buffer, eps=1e-3)
    q_continuous, actor, space = ddpg_parts()
    with pytest.raises(ValueError, match=r"^DDPG learns from one-step transitions, got a 3-step "
                                         r"replay: pass the replay buffer without "
                                         r"NStepReplayBuffer$"):
        DDPG(q_continuous, actor, NStepReplayBuffer(3, 0.9, ExperienceReplayBuffer(10)), space,
             discount_factor=0.9 ** 3)
    with pytest.raises(ValueError, match=r"^DDPG's action_space \(Box\(-1.0, 1.0.*is not its "
                                         r"policy's \(Box \[-2.0\]\.\.\[2.0\]\): give the "
                                         r"DeterministicPolicy the same space$"):
        DDPG(q_continuous, actor, buffer, gym.spaces.Box(-1.0, 1.0, (1,)))
