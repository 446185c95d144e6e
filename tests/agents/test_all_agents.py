"""ALL's agent classes built as an ALL user builds them (seed 003: "passing appropriate objects
into the constructor of the high-level algorithms contained in all.agents"), trained with the
seed's control loop; each must learn CartPole (random play: about 22 a episode) or Pendulum."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn, optim
from torch.nn import functional as F

from looprl.agents import (
    A2C,
    C51,
    DDPG,
    DDQN,
    DQN,
    PPO,
    SAC,
    TD3,
    VAC,
    VPG,
    VQN,
    Rainbow,
    VSarsa,
)
from looprl.approximation import (
    FeatureNetwork,
    FixedTarget,
    LinearScheduler,
    PolyakTarget,
    QContinuous,
    QDist,
    QNetwork,
    VNetwork,
)
from looprl.environments import GymEnvironment, GymVectorEnvironment
from looprl.experiments.experiment import seed_everything
from looprl.memory import ExperienceReplayBuffer, NStepReplayBuffer, PrioritizedReplayBuffer
from looprl.policies import (
    DeterministicPolicy,
    GaussianPolicy,
    GreedyPolicy,
    ParallelGreedyPolicy,
    SoftDeterministicPolicy,
    SoftmaxPolicy,
)

#: every test's seed (its torch and NumPy generators and its environments'); each test passes
#: with 0, 1 and 2
SEED = 0


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
    env.reset(seed=SEED)  # (later episodes continue its generator)
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
    seed_everything(SEED)
    q = q_network()
    policy = GreedyPolicy(q, 2, epsilon=LinearScheduler(1.0, 0.02, 0, 3000, name="epsilon"))
    agent = agent_class(q, policy, ExperienceReplayBuffer(10000, device="cpu"),
                        discount_factor=0.99, minibatch_size=64, replay_start_size=500)
    assert agent.q is q and agent.minibatch_size == 64 and agent.replay_start_size == 500
    assert agent.discount_factor == 0.99 and agent.update_frequency == 1  # (was: None)
    assert last(episodes(agent, 6000)) > 150  # (seeds 0, 1, 2: DQN 201, 299, 262)
    assert agent.eval(GymEnvironment("CartPole-v1").reset()) in (0, 1)  # (ALL's eval)


@pytest.mark.parametrize("agent_class", [C51, Rainbow])
def test_c51_and_rainbow_as_alls(agent_class: type) -> None:
    """``C51(q_dist, replay_buffer, discount_factor, eps, exploration, ...)``; Rainbow's n-step
    prioritized replay is ALL's ``NStepReplayBuffer(n, gamma, PrioritizedReplayBuffer(...))``
    with the agent's discount ``gamma ** n``."""
    seed_everything(SEED)
    model = mlp(2 * 51)
    q_dist = QDist(model, optim.Adam(model.parameters(), lr=1e-3), 2, 51, v_min=-10, v_max=110,
                   target=FixedTarget(100))
    buffer: Any = ExperienceReplayBuffer(10000, device="cpu")
    discount = 0.99
    if agent_class is Rainbow:
        buffer = NStepReplayBuffer(2, 0.99, PrioritizedReplayBuffer(10000, 0.5, 0.5,
                                                                    device="cpu"))
        discount = 0.99 ** 2
    # ALL's presets give Rainbow's (and C51's) exploration as a LinearScheduler, read once the
    # replay_start_size random actions are done (was: a TypeError there)
    exploration = (LinearScheduler(0.5, 0.02, 0, 1500, name="exploration")
                   if agent_class is Rainbow else 0.02)
    agent = agent_class(q_dist, buffer, discount_factor=discount, minibatch_size=64,
                        replay_start_size=500, exploration=exploration)
    assert last(episodes(agent, 6000)) > 120  # (seeds 0, 1, 2: C51 173, 134, 199)
    if agent_class is Rainbow:
        assert exploration.step >= 6000 - 500 and exploration.current == 0.02  # (read on)


def test_preset_agents_have_alls_attributes() -> None:
    """A preset's agent has the attributes of ALL's class (was: ``agent.q`` missing)."""
    from looprl.presets import classic_control
    env = GymEnvironment("CartPole-v1")
    dqn = classic_control.dqn.env(env).device("cpu").hyperparameters(replay_start_size=300).build()
    agent = dqn.agent()
    assert isinstance(agent.q, QNetwork) and agent.q is agent.policy.q
    assert agent.replay_start_size == 300 and agent.discount_factor == 0.99
    with pytest.raises(AttributeError, match="has no q_dist: it is not distributional"):
        agent.q_dist  # noqa: B018
    rainbow = classic_control.rainbow.env(env).device("cpu").build()
    agent = rainbow.agent()
    n, gamma = rainbow.hyperparameters["n_steps"], rainbow.hyperparameters["discount_factor"]
    assert isinstance(agent.q_dist, QDist) and n > 1
    assert agent.discount_factor == pytest.approx(gamma ** n)  # (ALL's Rainbow's gamma ** n)


def parallel_episodes(agent: Any, n_envs: int, steps: int) -> list[float]:
    """``steps`` acts on the ``StateArray`` of ``n_envs`` CartPoles: each finished return."""
    env = GymVectorEnvironment("CartPole-v1", n_envs)
    states, episode, returns = env.reset(seed=SEED), torch.zeros(n_envs), []
    for _ in range(steps):
        states = env.step(agent.act(states))
        episode += states.reward
        returns += episode[states.done].tolist()
        episode[states.done] = 0.0
    return returns


def best(returns: list[float], n: int = 20) -> float:
    """The best mean of ``n`` consecutive returns."""
    return max(last(returns[:end], n) for end in range(n, len(returns) + 1))


@pytest.mark.parametrize("agent_class", [VQN, VSarsa])
def test_vqn_and_vsarsa_as_alls_on_parallel_environments(agent_class: type) -> None:
    """``VQN(q, policy, discount_factor)`` with ALL's ``ParallelGreedyPolicy``: one online update
    per ``act`` on the ``StateArray`` of 8 environments."""
    seed_everything(SEED)
    q = q_network(target_update=25)
    policy = ParallelGreedyPolicy(q, 2, epsilon=LinearScheduler(1.0, 0.02, 0, 1000,
                                                                 name="epsilon"))
    agent = agent_class(q, policy, discount_factor=0.95)
    assert best(parallel_episodes(agent, 8, 5000)) > 100


def actor_critic_parts(lr_v: float, lr_pi: float, clip_grad: float = 0.5
                       ) -> tuple[FeatureNetwork, VNetwork, SoftmaxPolicy]:
    """ALL's classic-control actor-critic networks: shared ReLU features, zeroed heads."""
    features, v, pi = nn.Sequential(nn.Linear(4, 64), nn.ReLU()), nn.Linear(64, 1), nn.Linear(64, 2)
    for head in (v, pi):
        nn.init.zeros_(head.weight)
        nn.init.zeros_(head.bias)
    return (FeatureNetwork(features, optim.Adam(features.parameters(), lr=lr_pi),
                           clip_grad=clip_grad),
            VNetwork(v, optim.Adam(v.parameters(), lr=lr_v), clip_grad=clip_grad),
            SoftmaxPolicy(pi, optim.Adam(pi.parameters(), lr=lr_pi), clip_grad=clip_grad))


@pytest.mark.parametrize("agent_class", [A2C, PPO, VAC])
def test_parallel_actor_critics_as_alls(agent_class: type) -> None:
    """``A2C``, ``PPO(features, v, policy, ..., n_envs, n_steps)`` and ``VAC(features, v, policy,
    discount_factor)`` learn CartPole on the ``StateArray`` of parallel environments, each of
    ALL's networks stepped by its own optimizer (was: no such classes)."""
    seed_everything(SEED)
    if agent_class is VAC:  # (one update a step: lr_pi 1e-3 collapses, as the preset says)
        agent, n_envs = VAC(*actor_critic_parts(1e-2, 5e-4, 0.0), discount_factor=0.98), 16
    else:
        lr = 3e-3 if agent_class is A2C else 1e-3
        agent, n_envs = agent_class(*actor_critic_parts(lr, lr), entropy_loss_scaling=0.001,
                                    n_envs=8, n_steps=16), 8
    features = agent.features.model.model[0].weight.detach().clone()
    returns = parallel_episodes(agent, n_envs, 3000)
    assert best(returns) > 100
    assert not torch.equal(features, agent.features.model.model[0].weight)  # (its optimizer's)
    assert agent.eval(GymVectorEnvironment("CartPole-v1", n_envs).reset(seed=1)).shape == (
        n_envs,)


class Target(gym.Env):
    """One-step episodes: observe ``x ~ U(-1, 1)``, act ``a`` in [-2, 2], reward ``-(a - x)^2``."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.x = self.np_random.uniform(-1, 1, (1,)).astype(np.float32)
        return self.x, {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        return self.x, -float((action[0] - self.x[0]) ** 2), True, False, {}


def gaussian_parts(lr: float = 3e-3) -> tuple[FeatureNetwork, VNetwork, GaussianPolicy]:
    """ALL's continuous actor-critic parts for ``Target``: the policy model gives ``cat(mean,
    log_variance)``."""
    features, v, pi = nn.Sequential(nn.Linear(1, 32), nn.Tanh()), nn.Linear(32, 1), nn.Linear(32, 2)
    return (FeatureNetwork(features, optim.Adam(features.parameters(), lr=lr)),
            VNetwork(v, optim.Adam(v.parameters(), lr=lr)),
            GaussianPolicy(pi, optim.Adam(pi.parameters(), lr=lr), Target.action_space))


@pytest.mark.parametrize("agent_class", [A2C, PPO])
def test_actor_critics_with_alls_gaussian_policy(agent_class: type) -> None:
    """``A2C``/``PPO(features, v, GaussianPolicy(...), ...)`` act from ALL's distribution (the
    same log-probabilities, up to the bounds' constant ``sum(log scale)``) and learn to put their
    action on the observation (random play: about -1 a step; was: one ``TypeError`` line)."""
    seed_everything(SEED)
    features, v, policy = gaussian_parts()
    agent = agent_class(features, v, policy, entropy_loss_scaling=0.0, n_envs=8, n_steps=8)
    obs, actions = torch.rand(5, 1) * 2 - 1, torch.rand(5, 1) * 4 - 2
    with torch.no_grad():
        alls = policy.model(features.model(obs)).log_prob(actions)
        params = agent.policy.module(obs)[0]
    ours = agent.policy.head.log_prob(params, actions) - np.log(2.0)
    torch.testing.assert_close(ours, alls)
    env = GymVectorEnvironment(Target, 8)
    states, rewards = env.reset(seed=SEED), []
    for _ in range(1000):
        states = env.step(agent.act(states))
        rewards.append(float(states.reward.mean()))
    assert np.mean(rewards[:50]) < -0.4 and np.mean(rewards[-100:]) > -0.1
    assert agent.eval(env.reset(seed=1)).shape == (8, 1)


def test_alls_gaussian_policy_on_a_gpu_keeps_its_scale_there() -> None:
    """ALL's parts on CUDA (``meta`` stands in): the scale of ``GaussianPolicy``'s bounds stayed
    on the CPU, and the first forward pass mixed devices (a static review for CUDA, 2026-12-05)."""
    from looprl.agents.all_agents import all_actor_critic

    features, v, policy = (part.to("meta") for part in (
        nn.Sequential(nn.Linear(1, 32), nn.Tanh()), nn.Linear(32, 1), nn.Linear(32, 2)))
    parts = (FeatureNetwork(features, None), VNetwork(v, None),
             GaussianPolicy(policy, None, Target.action_space))
    module = all_actor_critic(A2C.__new__(A2C), *parts).approximation.model
    assert module.policy_head.inverse_scale.device.type == "meta"
    assert module(torch.zeros(4, 1, device="meta"))[0].shape == (4, 2)


def test_vpg_as_alls() -> None:
    """``VPG(features, v, policy, discount_factor, min_batch_size)``: an update after the episode
    that brings the batch to ``min_batch_size`` steps (was: looprl's (policy, trainer) only)."""
    seed_everything(SEED)
    agent = VPG(*actor_critic_parts(5e-3, 3e-3), min_batch_size=200)
    assert best(episodes(agent, 30000)) > 100
    assert agent.eval(GymEnvironment("CartPole-v1").reset()) in (0, 1)


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
    seed_everything(SEED)
    q, policy, space = ddpg_parts()
    agent = DDPG(q, policy, ExperienceReplayBuffer(10000, device="cpu"), space,
                 minibatch_size=64, noise=0.1, replay_start_size=1000)
    assert policy.noise == 0.1 and agent.q is q
    assert last(episodes(agent, 7000, "Pendulum-v1"), 5) > -600


def sac_parts() -> tuple[SoftDeterministicPolicy, QContinuous, QContinuous]:
    space = GymEnvironment("Pendulum-v1").action_space
    model = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 2))
    policy = SoftDeterministicPolicy(model, optim.Adam(model.parameters(), lr=1e-3), space)
    q = []
    for _ in range(2):
        q_model = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                                nn.Linear(64, 1))
        q.append(QContinuous(q_model, optim.Adam(q_model.parameters(), lr=1e-3),
                             target=PolyakTarget(0.005)))
    return policy, q[0], q[1]


def test_sac_as_alls() -> None:
    """``SAC(policy, q1, q2, replay_buffer, discount_factor, entropy_backups, entropy_target,
    lr_temperature, minibatch_size, replay_start_size, temperature_initial, update_frequency)``
    learns Pendulum, each critic stepped by its own optimizer (was: looprl's form only)."""
    seed_everything(SEED)
    policy, q1, q2 = sac_parts()
    agent = SAC(policy, q1, q2, ExperienceReplayBuffer(10000, device="cpu"), entropy_target=-1.0,
                minibatch_size=64, replay_start_size=1000, temperature_initial=0.1)
    assert agent.q1 is q1 and q1.updates == 0
    assert last(episodes(agent, 6000, "Pendulum-v1"), 5) > -600
    assert q1.updates == q2.updates > 4000 and agent.trainer.alpha != 0.1
    assert set(agent.hyperparameters()) >= {"hp/lr/q", "hp/tau", "hp/lr/policy"}


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
    policy, q1, q2 = sac_parts()
    with pytest.raises(TypeError, match=r"^SAC takes ALL's \(policy, q1, q2, replay_buffer, "
                                        r"\.\.\.\): a SoftDeterministicPolicy and two "
                                        r"QContinuous, .* got QContinuous, QContinuous and "
                                        r"QContinuous$"):
        SAC(q1, q1, q2, buffer)
    with pytest.raises(ValueError, match=r"^SAC's targets always back up the entropy: "
                                         r"entropy_backups=False is not ported"):
        SAC(policy, q1, q2, buffer, entropy_backups=False)
    with pytest.raises(ValueError, match=r"^SAC's q1 and q2 are one critic"):
        SAC(policy, q1, q1, buffer)
    features, v, pi = actor_critic_parts(1e-3, 1e-3)
    with pytest.raises(TypeError, match=r"^A2C takes ALL's \(features, v, policy, \.\.\.\): "
                                        r"a FeatureNetwork, a VNetwork and a SoftmaxPolicy or "
                                        r"GaussianPolicy, got FeatureNetwork, VNetwork and "
                                        r"VNetwork$"):
        A2C(features, v, v, n_envs=4)
    with pytest.raises(ValueError, match=r"^PPO needs n_envs, the number of parallel "
                                         r"environments"):
        PPO(features, v, pi)
    with pytest.raises(ValueError, match=r"^PPO splits its n_envs \* n_steps = 8 rows into "
                                         r"minibatches, got minibatches=16: give at most 8$"):
        PPO(features, v, pi, minibatches=16, n_envs=2, n_steps=4)
    with pytest.raises(TypeError, match=r"^VPG takes ALL's \(features, v, policy"):
        VPG(features, pi, v)
    with pytest.raises(TypeError, match=r"^TD3 takes looprl's \(policy, trainer, \.\.\.\), "
                                        r"a Policy and a Trainer, got SoftDeterministicPolicy "
                                        r"and QContinuous: ALL's agent classes \(DQN, .*\) "
                                        r"take ALL's arguments; ALL has no TD3 agent"):
        TD3(policy, q1, buffer)
