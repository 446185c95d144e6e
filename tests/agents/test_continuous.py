"""DDPG, TD3, SAC and Gaussian PPO: trainers, agents, presets and MuJoCo environments."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn, optim

from helpers import check_pendulum_round_trip
from looprl.agents import ActorCriticPolicy, OnPolicyAgent, PPOTrainer, ReplayAgent
from looprl.agents.ddpg import (
    DDPG,
    ContinuousPolicy,
    ContinuousQ,
    DDPGPolicy,
    DDPGTrainer,
    TwinQ,
)
from looprl.agents.sac import SACPolicy, SACTrainer, Temperature
from looprl.agents.td3 import DelayedPolyakTarget, TD3Trainer
from looprl.approximation import Approximation, PolyakTarget
from looprl.core import (
    Agent,
    NamedArray,
    RolloutRequest,
    SampleBatch,
    State,
    Trainer,
    TrainerStepResult,
)
from looprl.environments import GymEnvironment, GymVectorEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.memory import ExperienceReplayBuffer
from looprl.nn import ActorCritic
from looprl.policies.deterministic import DeterministicPolicy, SoftDeterministicPolicy
from looprl.policies.distributions import GaussianActor, GaussianHead
from looprl.presets import load_preset
from looprl.presets.continuous import ddpg, ppo, sac, td3

PENDULUM = GymEnvironment("Pendulum-v1").action_space  # Box(-2, 2, (1,))
SMALL = {"hidden": 32, "replay_start_size": 100, "minibatch_size": 32}
SMALL_PPO = {"hidden": 16, "n_envs": 2, "n_steps": 64, "minibatch_size": 64, "epochs": 2}


def _mlp(in_dim: int, out_dim: int) -> nn.Module:
    return nn.Sequential(nn.Linear(in_dim, 16), nn.ReLU(), nn.Linear(16, out_dim))


def _batch(n: int = 16, seed: int = 0, terminal: torch.Tensor | None = None) -> SampleBatch:
    """One-step windows ``[2, n]`` (what ``sample_batch`` returns); ``terminal`` marks the
    next states that end their episode."""
    generator = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, 3, generator=generator)
    next_obs = torch.randn(n, 3, generator=generator)
    actions = torch.rand(n, 1, generator=generator) * 4 - 2
    rewards = torch.randn(n, generator=generator)
    done = torch.zeros(n, dtype=torch.bool) if terminal is None else terminal
    no = torch.zeros(n, dtype=torch.bool)
    return SampleBatch(obs=torch.stack([obs, next_obs]),
                       action=torch.stack([actions, torch.zeros_like(actions)]),
                       reward=torch.stack([torch.zeros(n), rewards]),
                       done=torch.stack([no, done]), truncated=torch.stack([no, no]))


def _unpack(batch: SampleBatch) -> tuple:
    """``(obs, actions, rewards, next_obs, mask)`` of one-step windows."""
    return batch.obs[0], batch.action[0], batch.reward[1], batch.obs[1], (~batch.done[1]).float()


def _ddpg_parts(twin: bool = False) -> tuple[DDPGPolicy, Approximation]:
    torch.manual_seed(0)
    actor = DeterministicPolicy(
        _mlp(3, 1), None, PENDULUM, noise=0.1, target=PolyakTarget(0.5), name="actor"
    )
    actor.optimizer = optim.Adam(actor.parameters(), lr=1e-2)
    critic = TwinQ(_mlp(4, 1), _mlp(4, 1)) if twin else ContinuousQ(_mlp(4, 1))
    target = DelayedPolyakTarget(0.5, 2) if twin else PolyakTarget(0.5)
    q = Approximation(critic, optim.Adam(critic.parameters(), lr=1e-2), target=target)
    return DDPGPolicy(actor), q


def _snapshot(module: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def _changed(before: list[torch.Tensor], module: nn.Module) -> bool:
    return any(not torch.equal(b, a) for b, a in zip(before, module.parameters()))


def test_critics_output_one_value_per_row() -> None:
    obs, actions = torch.randn(5, 3), torch.randn(5, 1)
    assert ContinuousQ(_mlp(4, 1))(obs, actions).shape == (5,)
    q1, q2 = TwinQ(_mlp(4, 1), _mlp(4, 1))(obs, actions)
    assert q1.shape == q2.shape == (5,) and not torch.equal(q1, q2)


def test_ddpg_trainer_updates_actor_and_critic() -> None:
    policy, q = _ddpg_parts()
    trainer = DDPGTrainer(policy, q, discount_factor=0.9)
    assert isinstance(trainer, Trainer)
    actor_before, critic_before = _snapshot(policy.module), _snapshot(q.model)
    stats = trainer.step(_batch()).stats
    assert set(stats) == {"critic", "actor"} and policy.version == 1
    assert _changed(actor_before, policy.module) and _changed(critic_before, q.model)
    # the actor's loss must not leave gradients in the critic
    assert all(p.grad is None for p in q.model.parameters())


def test_ddpg_trainer_takes_numpy_batches_as_torch_ones() -> None:
    """A batch that is not torch tensors on the policy's device (numpy; a CPU replay's batch
    for a GPU trainer) is moved first: the update is the one the torch batch gives."""
    updated = []
    for batch in (_batch(), _batch().to_numpy()):
        policy, q = _ddpg_parts()
        DDPGTrainer(policy, q, discount_factor=0.9).step(batch)
        updated.append(_snapshot(policy.module) + _snapshot(q.model))
    assert all(torch.equal(a, b) for a, b in zip(*updated))


def test_td3_delays_the_actor_and_the_critic_target() -> None:
    policy, q = _ddpg_parts(twin=True)
    trainer = TD3Trainer(policy, q, policy_delay=2)
    target_before = _snapshot(q._target._target)
    stats = trainer.step(_batch()).stats
    assert "actor" not in stats and policy.actor.updates == 0
    assert not _changed(target_before, q._target._target)
    stats = trainer.step(_batch(seed=1)).stats
    assert "actor" in stats and policy.actor.updates == 1 and q.updates == 2
    assert _changed(target_before, q._target._target)


@pytest.mark.parametrize("bad", [{"noise_clip": -0.5}, {"target_noise": float("nan")},
                                 {"policy_delay": 0}])
def test_td3_trainer_refuses_bad_smoothing_in_one_line(bad: dict[str, float]) -> None:
    """A negative ``noise_clip`` made ``clamp(sigma * eps, -c, c)`` the constant ``-c``: every
    target action shifted by ``-c * scale``, silently."""
    policy, q = _ddpg_parts(twin=True)
    with pytest.raises(ValueError, match=f"Hyperparameter '{next(iter(bad))}' of TD3Trainer"):
        TD3Trainer(policy, q, **bad)


def _batch_with_terminals(n: int = 16) -> SampleBatch:
    """``_batch`` whose every fourth next state is terminal (mask 0)."""
    return _batch(n, terminal=torch.arange(n) % 4 == 0)


def _move_away_from_targets(*modules: nn.Module) -> None:
    """Perturb online networks so that a trainer using them instead of the targets differs."""
    with torch.no_grad():
        for module in modules:
            for parameter in module.parameters():
                parameter.add_(0.3 * torch.randn_like(parameter))


def test_td3_trainer_targets_use_smoothed_target_actions_and_the_twin_minimum() -> None:
    policy, q = _ddpg_parts(twin=True)
    actor = policy.actor
    _move_away_from_targets(actor.model, q.model)
    trainer = TD3Trainer(policy, q, discount_factor=0.9, target_noise=1.0, noise_clip=0.3)
    batch = _batch_with_terminals()
    obs, actions, rewards, next_obs, mask = _unpack(batch)
    torch.manual_seed(5)
    eps = torch.randn(16, 1)  # the trainer's smoothing noise: its first draw after the seed
    assert (eps.abs() > 0.3).any() and (eps.abs() < 0.3).any()  # the noise clip is exercised
    with torch.no_grad():
        # a' = clip(mu'(s') + scale * clip(sigma * eps, -c, c), low, high), scale 2 on [-2, 2]
        target_actions = actor.target(next_obs)
        smoothed = (target_actions + 2.0 * (1.0 * eps).clamp(-0.3, 0.3)).clamp(-2, 2)
        next_q1, next_q2 = q.target(next_obs, smoothed)
        y = rewards + 0.9 * mask * torch.min(next_q1, next_q2)
        q1, q2 = q.model(obs, actions)
        expected = ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()
    seen = []  # the inputs of the target critics
    target = q.target
    q.target = lambda *inputs: seen.append(inputs) or target(*inputs)
    torch.manual_seed(5)
    stats = trainer.step(batch).stats
    assert len(seen) == 1 and torch.equal(seen[0][0], next_obs)
    assert torch.allclose(seen[0][1], smoothed, rtol=0, atol=1e-6)
    assert (seen[0][1] - target_actions).abs().max() > 0.5  # the smoothing is not negligible
    assert torch.allclose(stats["critic"], expected, rtol=1e-5, atol=0)


def _sac(alpha: float, **kwargs: float) -> tuple[SoftDeterministicPolicy, Approximation,
                                                  SACTrainer]:
    """A seeded SAC on Pendulum's shapes: its actor, twin critic and trainer (the temperature
    starting at ``alpha``, tuned towards entropy -1)."""
    torch.manual_seed(0)
    actor = SoftDeterministicPolicy(_mlp(3, 2), None, PENDULUM, name="actor")
    actor.optimizer = optim.Adam(actor.parameters(), lr=1e-2)
    critic = TwinQ(_mlp(4, 1), _mlp(4, 1))
    q = Approximation(critic, optim.Adam(critic.parameters(), lr=1e-2), target=PolyakTarget(0.5))
    temperature = Temperature(alpha)
    tuned = Approximation(temperature, optim.Adam(temperature.parameters(), lr=0.1))
    return actor, q, SACTrainer(SACPolicy(actor), q, tuned, target_entropy=-1.0, **kwargs)


def test_sac_trainer_critic_target_and_actor_loss_carry_the_entropy_term() -> None:
    actor, q, trainer = _sac(2.0, discount_factor=0.9)
    _move_away_from_targets(q.model)
    batch = _batch_with_terminals()
    obs, actions, rewards, next_obs, mask = _unpack(batch)
    alpha = 2.0
    old_actor = copy.deepcopy(actor.model)  # the actor before the step updates it
    torch.manual_seed(5)
    with torch.no_grad():
        next_actions, next_log_probs = old_actor(next_obs)  # the trainer's first draw
        after_first_draw = torch.get_rng_state()
        next_q1, next_q2 = q.target(next_obs, next_actions)
        y = rewards + 0.9 * mask * (torch.min(next_q1, next_q2) - alpha * next_log_probs)
        q1, q2 = q.model(obs, actions)
        critic_expected = ((q1 - y) ** 2).mean() + ((q2 - y) ** 2).mean()
    torch.manual_seed(5)
    stats = trainer.step(batch).stats
    assert torch.allclose(stats["critic"], critic_expected, rtol=1e-5, atol=0)
    # the actor's loss: the trainer's second draw, through the critic this step updated
    torch.set_rng_state(after_first_draw)
    with torch.no_grad():
        new_actions, log_probs = old_actor(obs)
        q1, q2 = q.model(obs, new_actions)
        actor_expected = (alpha * log_probs - torch.min(q1, q2)).mean()
        temperature_expected = -(math.log(alpha) * (log_probs - 1.0)).mean()
    assert torch.allclose(stats["actor"], actor_expected, rtol=1e-5, atol=0)
    assert torch.allclose(stats["temperature"], temperature_expected, rtol=1e-5, atol=0)
    # the entropy terms are not negligible: without them the losses would be others
    assert (alpha * next_log_probs.abs()).mean() > 0.1 and (alpha * log_probs).mean().abs() > 0.1


def test_sac_trainer_tunes_the_temperature() -> None:
    actor, q, trainer = _sac(0.5)
    stats = trainer.step(_batch()).stats
    assert {"critic", "actor", "alpha", "temperature"} <= set(stats)
    assert torch.isclose(stats["alpha"], torch.tensor(0.5))
    assert not torch.isclose(trainer.alpha, torch.tensor(0.5))
    fixed = SACTrainer(SACPolicy(actor), q, Approximation(Temperature(0.2)))
    assert "temperature" not in fixed.step(_batch()).stats
    assert torch.isclose(fixed.alpha, torch.tensor(0.2))


def test_continuous_policy_rollout_respects_per_row_evaluation() -> None:
    policy, _ = _ddpg_parts()
    policy.actor.noise = 1.0
    obs = torch.randn(200, 3)
    rows = torch.arange(200) % 2 == 0
    action = policy.rollout(RolloutRequest(obs=obs.numpy(), is_evaluation=rows)).action
    mode = policy.actor.mode(obs)
    assert action.shape == (200, 1)
    assert torch.equal(action[rows], mode[rows]) and not torch.equal(action[~rows], mode[~rows])
    assert (action.abs() <= 2).all()
    assert torch.equal(policy.rollout(RolloutRequest(obs=obs, is_evaluation=True)).action, mode)


class CountingTrainer(Trainer):
    def __init__(self, policy: ContinuousPolicy):
        self._policy = policy
        self.batches: list[tuple] = []

    @property
    def policy(self) -> ContinuousPolicy:
        return self._policy

    def step(self, batch: SampleBatch) -> TrainerStepResult:
        self.batches.append(batch)
        return TrainerStepResult({}, len(self.batches))


def test_off_policy_agent_warms_up_at_random_then_trains_on_schedule() -> None:
    policy, _ = _ddpg_parts()
    trainer = CountingTrainer(policy)
    agent = DDPG(
        policy,
        trainer,
        ExperienceReplayBuffer(100),
        8,
        replay_start_size=10,
        update_frequency=2,
        gradient_steps=3,
    )
    assert isinstance(agent, ReplayAgent) and isinstance(agent, Agent)
    env = GymEnvironment("Pendulum-v1", seed=0)
    state = env.reset()
    for _ in range(21):
        action = agent.act(state)
        assert action.shape == (1,) and action.abs().max() <= 2
        state = env.step(action)
    # 21 acts store 20 transitions; transitions 12, 14, ..., 20 train: 5 phases of 3 steps
    assert len(trainer.batches) == 15
    obs, actions, rewards, _, _ = _unpack(trainer.batches[0])  # one-step windows [2, 8]
    assert actions.shape == (8, 1) and actions.dtype == torch.float32
    assert obs.shape == (8, 3) and rewards.shape == (8,)


def test_ppo_trains_with_gaussian_vector_actions() -> None:
    torch.manual_seed(0)
    model = ActorCritic(GaussianActor(_mlp(3, 1), 1), _mlp(3, 1))
    approximation = Approximation(model, optim.Adam(model.parameters(), lr=1e-3))
    policy = ActorCriticPolicy(approximation, GaussianHead(PENDULUM.low, PENDULUM.high))
    batches = []
    trainer = PPOTrainer(policy, epochs=1, minibatch_size=16)
    trainer.step = lambda batch: batches.append(batch.clone()) or PPOTrainer.step(trainer, batch)
    agent = OnPolicyAgent(policy, trainer, n_envs=2, n_steps=8)
    env = GymVectorEnvironment("Pendulum-v1", 2, seed=0)
    state = env.reset()
    for _ in range(17):
        action = agent.act(state)
        assert action.shape == (2, 1) and action.dtype == torch.float32
        state = env.step(action)
    assert len(batches) == 2 and policy.version == 2
    batch = batches[0]
    assert batch.action.shape == (9, 2, 1) and batch.log_prob.shape == (9, 2)
    analysis = policy.analyze(NamedArray(obs=batch.obs, action=batch.action))
    assert analysis.entropy.shape == (9, 2) and analysis.logits is None
    assert torch.isfinite(analysis.log_prob).all()


@pytest.mark.parametrize("builder", [ddpg, td3, sac, ppo], ids=["ddpg", "td3", "sac", "ppo"])
def test_presets_reject_discrete_actions(builder) -> None:
    with pytest.raises(ValueError, match="continuous"):
        builder.env(GymEnvironment("CartPole-v1")).device("cpu").build()


@pytest.mark.parametrize("builder", [ddpg, td3, sac, ppo], ids=["ddpg", "td3", "sac", "ppo"])
def test_presets_refusing_images_advise_flattening_not_an_atari_preset(builder) -> None:
    """Was: "use an Atari preset for images", which acts in Discrete spaces only (Pendulum's
    Box actions, with image observations, then were refused by the Atari preset too)."""
    import gymnasium

    env = GymEnvironment(gymnasium.make("Pendulum-v1"), name="PendulumPixels")
    env.env.observation_space = gymnasium.spaces.Box(0, 255, (3, 64, 64), "uint8")
    with pytest.raises(ValueError, match=r"needs flat Box observations, but PendulumPixels has "
                                         r"Box\(0, 255, \(3, 64, 64\), uint8\); wrap the "
                                         r"environment in gymnasium.wrappers.FlattenObservation"):
        builder.env(env).device("cpu").build()


def _replay_first_episodes(agent, n_envs: int, seed: int) -> list[float]:
    """Returns of the first episode of the first two copies of a vector Pendulum reset with
    ``seed`` (its episodes all last 200 steps, so they end together, in copy order)."""
    env = GymVectorEnvironment("Pendulum-v1", n_envs)
    state, totals = env.reset(seed=seed), [0.0, 0.0]
    while not state.done[0]:
        state = env.step(agent.act(state))
        totals = [total + float(reward) for total, reward in zip(totals, state.reward[:2])]
    assert state.done[:2].all()
    env.close()
    return totals


def test_preset_trains_saves_loads_and_evaluates(tmp_path) -> None:
    """PPO's (DDPG's, TD3's and SAC's: after their learning checks, in
    ``tests/test_learning_continuous.py``)."""
    seed_everything(0)  # the initial weights too
    env = GymEnvironment("Pendulum-v1")
    preset = ppo.env(env).device("cpu").hyperparameters(**SMALL_PPO).build()
    experiment = make_experiment(
        preset, env, train_steps=400, logdir=str(tmp_path), quiet=True, verbose=False, seed=0
    )
    experiment.train(frames=400)
    assert experiment.frame >= 400
    # evaluation is the loaded (deterministic) test agent's, replayed in fresh environments:
    # ParallelEnvExperiment.test plays a copy of the vector env, seed + 10,000
    check_pendulum_round_trip(preset, experiment, str(tmp_path / "preset.pt"),
                              lambda agent: _replay_first_episodes(agent, preset.n_envs,
                                                                   seed=10_000))
    experiment.close()


def test_mujoco_environment_resets_and_steps() -> None:
    pytest.importorskip("mujoco")
    from looprl.environments.mujoco import MujocoEnvironment, is_mujoco_id

    assert is_mujoco_id("HalfCheetah-v5") and not is_mujoco_id("Pendulum-v1")
    env = MujocoEnvironment("HalfCheetah", seed=0)
    assert env.name == "HalfCheetah-v5"
    state = env.reset()
    assert state.observation.shape == (17,) and state.observation.dtype == torch.float32
    state = env.step(torch.full((6,), 5.0))  # clipped to the bounds
    assert isinstance(state.reward, float) and not state.done
    vector = env.duplicate(2)
    assert vector.reset().observation.shape == (2, 17)
    env.close()
    vector.close()


@pytest.mark.parametrize("builder", [sac, ppo], ids=["sac", "ppo"])
def test_preset_trains_on_halfcheetah(builder, tmp_path) -> None:
    pytest.importorskip("mujoco")
    from looprl.environments.mujoco import MujocoEnvironment

    # episodes of 300 steps (not 1,000): a single-environment run trains whole episodes
    env = MujocoEnvironment("HalfCheetah-v5", max_episode_steps=300)
    small = SMALL if builder is sac else SMALL_PPO
    preset = builder.env(env).device("cpu").hyperparameters(**small).build()
    experiment = make_experiment(
        preset, env, train_steps=300, logdir=str(tmp_path), quiet=True, verbose=False, seed=0
    )
    experiment.train(frames=300)
    assert experiment.frame == 300
    preset.save(str(tmp_path / "preset.pt"))
    loaded = load_preset(str(tmp_path / "preset.pt"), device="cpu")
    assert loaded.test_agent().act(State(torch.zeros(17))).shape == (6,)
    experiment.close()


def test_missing_mujoco_names_the_extra(monkeypatch) -> None:
    import importlib.util

    from looprl.environments import mujoco as module

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mujoco" else real(name, *a)
    )
    with pytest.raises(ImportError, match=r"looprl\[mujoco\]"):
        module.MujocoEnvironment("HalfCheetah-v5")


@pytest.mark.parametrize("builder", [ddpg, td3, sac], ids=["ddpg", "td3", "sac"])
def test_presets_refusing_unbounded_actions_say_how_to_bound_them(builder) -> None:
    """Was the space alone: Pendulum in Gymnasium's ClipAction has Box(-inf, inf) actions."""
    import gymnasium

    env = GymEnvironment(gymnasium.wrappers.ClipAction(gymnasium.make("Pendulum-v1")))
    with pytest.raises(ValueError, match=r"needs finite action bounds, but Pendulum-v1 has "
                                         r"Box\(-inf, inf, \(1,\), float32\): declare finite low "
                                         r"and high .*ClipAction.*continuous.ppo"):
        builder.env(env).device("cpu").build()
    ppo.env(env).device("cpu").build()  # (acts in unbounded spaces)
