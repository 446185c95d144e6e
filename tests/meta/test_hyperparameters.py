"""Declared hyperparameters (looprl.meta.hyperparameters): a key set through its declaration
changes what the part that declared it does."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from torch import nn

from looprl.agents import ActorCriticPolicy, DQNPolicy, PPOTrainer
from looprl.approximation import Approximation, QNetwork
from looprl.core import NamedArray, RolloutRequest, SampleBatch
from looprl.environments import GymEnvironment
from looprl.environments.bodies import EpisodicLife, RewardClipping
from looprl.meta import MetaComponent
from looprl.meta.hub import MetaHub
from looprl.meta.hyperparameters import agent_hyperparameters
from looprl.nn import MLP, ActorCritic
from looprl.policies.distributions import CategoricalHead
from looprl.presets.classic_control import dqn
from looprl.presets.continuous import ddpg

OBS, ACTIONS = 4, 3


def _ppo(clip: float | None) -> tuple[PPOTrainer, dict[str, float]]:
    """A seeded PPO trainer after one step on a fixed sample, ``hp/clip`` set to ``clip``."""
    torch.manual_seed(0)
    model = ActorCritic(MLP(OBS, ACTIONS, hidden=(32,)), MLP(OBS, 1, hidden=(32,)))
    approximation = Approximation(model, torch.optim.Adam(model.parameters(), lr=3e-2))
    policy = ActorCriticPolicy(approximation, CategoricalHead(ACTIONS))
    trainer = PPOTrainer(policy, epochs=4, minibatch_size=16, seed=0)
    if clip is not None:
        trainer.hyperparameters()["hp/clip"].set(clip)
    g = torch.Generator().manual_seed(1)
    obs = torch.randn(9, 8, OBS, generator=g)
    sample = SampleBatch(obs=NamedArray(obs=obs), reward=torch.randn(9, 8, generator=g),
                         done=torch.zeros(9, 8, dtype=torch.bool),
                         truncated=torch.zeros(9, 8, dtype=torch.bool))
    result = policy.rollout(RolloutRequest(obs=obs.reshape(-1, OBS)))
    sample.action = result.action.view(9, 8)
    sample.log_prob, sample.value = result.log_prob.view(9, 8), result.value.view(9, 8)
    return trainer, trainer.step(sample).stats


def test_hp_clip_changes_ppos_clipping_in_its_next_step() -> None:
    default, default_stats = _ppo(None)
    clipped, stats = _ppo(0.01)
    assert default_stats["clip"] == pytest.approx(0.2) and stats["clip"] == pytest.approx(0.01)
    assert clipped.hyperparameters()["hp/clip"].get() == pytest.approx(0.01)
    # the same sample, shuffles and start: more ratios clipped, other parameters
    assert stats["clip_fraction"] > default_stats["clip_fraction"]
    assert any(not torch.equal(a, b) for a, b in zip(default.policy.module.parameters(),
                                                      clipped.policy.module.parameters()))


def test_hp_epsilon_changes_the_dqn_policys_actions() -> None:
    torch.manual_seed(0)
    model = nn.Linear(OBS, ACTIONS)
    q = QNetwork(model, torch.optim.Adam(model.parameters()))
    policy = DQNPolicy(q, ACTIONS, epsilon=0.0, seed=0)
    obs = torch.randn(300, OBS)
    greedy = q.no_grad(policy.states(obs, (300,))).argmax(-1)
    epsilon = policy.hyperparameters()["hp/epsilon"]
    assert torch.equal(policy.rollout(RolloutRequest(obs=obs)).action, greedy)
    epsilon.set(1.0)
    assert epsilon.get() == 1.0
    explored = policy.rollout(RolloutRequest(obs=obs)).action != greedy
    assert 0.5 < explored.float().mean() < 0.8  # uniform over 3 actions: ~2/3
    epsilon.set([0.0] * 150 + [1.0] * 150)  # one per env copy
    explored = policy.rollout(RolloutRequest(obs=obs)).action != greedy
    assert not explored[:150].any() and explored[150:].any()


def test_a_key_two_parts_declare_is_set_on_both() -> None:
    env = GymEnvironment("Pendulum-v1")
    agent = ddpg.hyperparameters(replay_buffer_size=100).env(env).device("cpu").build().agent()
    agent_hyperparameters(agent)["hp/tau"].set(0.5)
    actor = agent.policy.approximations()["actor"]
    critic = agent.trainer.approximations()["critic"]
    assert actor.hyperparameters()["hp/tau"].get() == critic.hyperparameters()["hp/tau"].get() \
        == 0.5


class _Write(MetaComponent):
    def __init__(self, key: str, value: Any):
        super().__init__()
        self.pre_step_methods.append(lambda metrics: metrics.__setitem__(key, value))


def test_bodies_forward_and_an_undeclared_key_is_a_one_line_error() -> None:
    preset = dqn.hyperparameters(replay_buffer_size=100).env(GymEnvironment("CartPole-v1"))
    agent = preset.device("cpu").build().agent()
    wrapped = RewardClipping(EpisodicLife(agent))
    assert wrapped.unwrapped is agent
    assert set(wrapped.hyperparameters()) == set(agent.hyperparameters())
    hub = MetaHub([_Write("hp/epsilon", 0.25)], wrapped, None)
    hub.run("pre_step")
    assert agent.policy.hyperparameters()["hp/epsilon"].get() == 0.25
    hub = MetaHub([_Write("hp/clip", 0.1)], copy.deepcopy(wrapped), None)
    with pytest.raises(KeyError, match=r"_Write at pre_step: 'hp/clip' is not a hyperparameter "
                                       r"of this agent\. Did you mean .*It has: .*hp/epsilon"):
        hub.run("pre_step")


def test_acting_schedules_are_the_exploration_schedules_objects() -> None:
    """What a Ray actor's checkpoint and restarts move on (``step``); ``GreedyPolicy.epsilon``
    reads as the value, so they are found through ``epsilon_schedule`` (was: the value, no
    schedule, and a resumed actor explored from epsilon 1 again)."""
    from looprl.environments import GymEnvironment
    from looprl.meta.hyperparameters import acting_schedules
    from looprl.presets.classic_control import dqn

    policy = dqn.env(GymEnvironment("CartPole-v1")).device("cpu").build().policy()
    (schedule,) = acting_schedules(policy)
    assert schedule is policy.exploration.epsilon_schedule and schedule.step == 0
    assert policy.exploration.epsilon == schedule.current == 1.0
