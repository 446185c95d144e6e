"""Tests of the VPG, VAC, A2C and PPG agents and their classic-control presets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import optim

from helpers import RecordingTrainer, replay_episodes, replay_first_episodes, saved_and_loaded
from looprl.agents import (
    VPG,
    A2CTrainer,
    Actor,
    ActorCriticPolicy,
    OnPolicyAgent,
    PPGTrainer,
    VACTrainer,
)
from looprl.agents.losses import segment_gae
from looprl.approximation import Approximation
from looprl.core import (
    Agent,
    NamedArray,
    ParallelAgent,
    ParallelPreset,
    Preset,
    SampleBatch,
    State,
    StateArray,
)
from looprl.core.namedarray import recursive_apply
from looprl.environments import GymEnvironment, GymVectorEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.nn import MLP, ActorCritic
from looprl.policies.distributions import CategoricalHead
from looprl.presets.classic_control import a2c, ppg, ppo, vac, vpg
from looprl.presets.classic_control.ppo import ppg_network
from looprl.presets.continuous.ppo import ppo as continuous_ppo


def _policy(seed: int = 0, lr: float = 1e-2) -> ActorCriticPolicy:
    torch.manual_seed(seed)
    model = ActorCritic(MLP(4, 2, hidden=(16,)), MLP(4, 1, hidden=(16,)))
    return ActorCriticPolicy(Approximation(model, optim.Adam(model.parameters(), lr=lr)),
                             CategoricalHead(2))


class Recording:
    """Wraps a trainer's ``step`` to keep (a copy of) every segment it was given."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.batches: list[SampleBatch] = []
        original = trainer.step

        def step(batch):
            self.batches.append(batch.clone())
            return original(batch)

        trainer.step = step


def _recorded(trainer: type, n_envs: int, n_steps: int) -> tuple:
    """``_policy()``, the ``Recording`` of its ``trainer`` (discount 0.9), an ``OnPolicyAgent``
    of ``n_envs`` x ``n_steps`` segments training it, and ``n_envs`` seeded CartPole copies."""
    policy = _policy()
    recording = Recording(trainer(policy, discount_factor=0.9))
    agent = OnPolicyAgent(policy, recording.trainer, n_envs=n_envs, n_steps=n_steps)
    return policy, recording, agent, GymVectorEnvironment("CartPole-v1", n_envs, seed=0)


def test_a2c_agent_trains_once_per_segment_with_n_step_targets() -> None:
    policy, recording, agent, env = _recorded(A2CTrainer, n_envs=2, n_steps=4)
    state = env.reset()
    for _ in range(13):
        state = env.step(agent.act(state))
    assert len(recording.batches) == 3 and policy.version == 3
    assert policy.approximation.updates == 3  # one gradient step per segment
    for batch in recording.batches:
        assert batch.reward.shape == (5, 2)


def test_vac_trains_every_step_on_one_step_targets() -> None:
    policy, recording, agent, env = _recorded(VACTrainer, n_envs=3, n_steps=1)
    previous = env.reset()
    state = env.step(agent.act(previous))  # the first act only acts
    for i in range(40):
        action = agent.act(state)  # trains on previous -> state, then acts
        batch = recording.batches[-1]
        assert len(recording.batches) == i + 1 and batch.reward.shape == (2, 3)
        assert torch.equal(batch.obs[0], previous.observation)
        assert torch.equal(batch.obs[1], state.observation)
        # one-step targets: r + gamma * mask' * V(s') on the rows that are not final
        _, returns, mask = segment_gae(batch.reward, batch.value, batch.done, batch.truncated,
                                       0.9, 0.0)
        target = state.reward + 0.9 * state.mask * batch.value[1]
        assert torch.equal(mask[0], ~previous.done)
        assert torch.allclose(returns[0][mask[0]], target[mask[0]], atol=1e-5)
        previous, state = state, env.step(action)
    assert policy.approximation.updates == 40 and policy.version == 40


def test_vpg_trains_after_complete_episodes() -> None:
    policy = _policy()
    recording = Recording(A2CTrainer(policy, discount_factor=1.0))
    agent = VPG(policy, recording.trainer, min_batch_size=40)
    assert isinstance(agent, Agent) and not isinstance(agent, ParallelAgent)
    env = GymEnvironment("CartPole-v1", seed=0)
    groups, current = [], []  # the episodes each update should see
    for _ in range(15):
        state = env.reset()
        steps = 0
        while not state.done:
            state = env.step(agent.act(state))
            steps += 1
        agent.act(state)
        current.append(steps)
        if sum(current) >= 40:
            groups.append(current)
            current = []
    assert len(recording.batches) == len(groups) > 0
    assert policy.version == len(groups)
    for batch, lengths in zip(recording.batches, groups):
        # one stream of whole episodes, each ending in its final observation
        assert batch.reward.shape == (sum(lengths) + len(lengths), 1)
        assert int(batch.done.sum()) == len(lengths) and bool(batch.done[-1])
        # reward 1 per step, gamma 1, episodes terminated: returns count down to 1
        _, returns, mask = segment_gae(batch.reward, batch.value, batch.done, batch.truncated,
                                       1.0, 1.0)
        expected = torch.cat([torch.arange(n, 0, -1, dtype=torch.float32) for n in lengths])
        assert torch.allclose(returns[mask], expected, atol=1e-4)



class Scripted:
    """An SRL environment of scripted episodes (``LENGTHS`` steps; the second one is cut by a
    time limit): observation ``[episode, t, 1, 0]``, reward ``t + episode`` on arrival."""

    LENGTHS = (3, 6, 2, 5, 4, 3, 7, 2, 9)
    agent_count = 1

    def __init__(self):
        self.episode, self.t = -1, 0

    def reset(self):
        self.episode, self.t = self.episode + 1, 0
        return [self._result()]

    def step(self, actions):
        self.t += 1
        return [self._result()]

    def _result(self):
        from looprl.environments.srl import step_result

        end = self.t == self.LENGTHS[self.episode % len(self.LENGTHS)]
        cut = end and self.episode % len(self.LENGTHS) == 1
        obs = np.array([self.episode, self.t, 1.0, 0.0], np.float32)
        return step_result({"obs": obs}, float(self.t + self.episode) if self.t else 0.0,
                           end and not cut, truncated=cut)


def _monte_carlo(segment: SampleBatch, gamma: float) -> torch.Tensor:
    """Hand-computed discounted returns of the segment's rows that are not episode ends: to
    the end of their episode, bootstrapped from the stored value only where a time limit
    cut it."""
    reward, end = segment.reward[:, 0].tolist(), (segment.done | segment.truncated)[:, 0]
    returns, following = [], 0.0
    for t in range(len(reward) - 1, -1, -1):
        if end[t]:
            following = float(segment.value[t, 0]) if segment.truncated[t, 0] else 0.0
        else:
            following = reward[t + 1] + gamma * following
            returns.append(following)
    return torch.tensor(returns[::-1])


def test_vpg_on_ray_gets_the_local_whole_episode_targets() -> None:
    """The Ray actors' ``EnvRunner`` with ``whole_episodes`` cuts the segments the local VPG
    agent trains on (whole episodes, at least ``min_batch_size`` steps), so ``A2CTrainer``
    (``gae_lambda=1``) gets the same Monte-Carlo targets, not bootstrapped mid-episode."""
    from looprl.collector import EnvRunner

    policy, gamma = _policy(), 0.9
    trainer = A2CTrainer(policy, discount_factor=gamma)
    runner = EnvRunner(Scripted, n_envs=1, segment_length=8, whole_episodes=True)
    remote: list[SampleBatch] = []
    for _ in range(sum(Scripted.LENGTHS) + len(Scripted.LENGTHS)):  # steps and resets
        request = runner.request(0)
        runner.step(0, policy.rollout(request), policy.version)
        remote += [recursive_apply(s, torch.as_tensor) for s in runner.segments()]
    local = RecordingTrainer(policy)
    agent, env = VPG(policy, local, min_batch_size=8), Scripted()
    for _ in Scripted.LENGTHS:
        result = env.reset()[0]
        while True:
            state = State(torch.as_tensor(result.obs["obs"]), reward=float(result.reward[0]),
                          done=bool(result.done[0] or result.truncated[0]),
                          mask=0.0 if result.done[0] else 1.0)
            action = agent.act(state)
            if state.done:
                break
            result = env.step([action])[0]
    assert [s.reward.shape for s in remote] == [s.reward.shape for s in local.batches]
    assert len(remote) == 4 and any(bool(s.truncated.any()) for s in remote)
    for ray_segment, local_segment in zip(remote, local.batches, strict=True):
        assert float(ray_segment.obs.obs[0, 0, 1]) == 0.0  # an episode's first row
        assert bool((ray_segment.done | ray_segment.truncated)[-1, 0])  # ... to its end
        assert torch.equal(ray_segment.obs.obs[:, 0], local_segment.obs[:, 0])
        targets = []
        for segment in (ray_segment, local_segment):
            _, returns, mask = segment_gae(segment.reward, segment.value, segment.done,
                                           segment.truncated, gamma, trainer.gae_lambda)
            targets.append(returns[mask])
        assert torch.allclose(targets[0], targets[1])
        assert torch.allclose(targets[0], _monte_carlo(ray_segment, gamma), atol=1e-5)


# -- PPG ---------------------------------------------------------------------------------


def _ppg_policy() -> ActorCriticPolicy:
    torch.manual_seed(0)
    model = ppg_network(4, 2, hidden=16)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    return ActorCriticPolicy(Approximation(model, optimizer), CategoricalHead(2))


def _ppg_segment(policy: ActorCriticPolicy, seed: int, rows: int = 9, streams: int = 4):
    """A ``[rows, streams]`` segment without episode ends whose discounted returns
    (gamma 0.99, lambda 0.95) depend on the observations."""
    generator = torch.Generator().manual_seed(seed)
    obs = torch.randn(rows, streams, 4, generator=generator)
    result = policy.rollout(NamedArray(obs=obs.reshape(-1, 4)))
    no = torch.zeros(rows, streams, dtype=torch.bool)
    return SampleBatch(obs=obs, action=result.action.reshape(rows, streams),
                       reward=1.0 + obs.sum(-1), done=no, truncated=no,
                       log_prob=result.log_prob.reshape(rows, streams),
                       value=result.value.reshape(rows, streams))


def test_ppg_alternates_policy_and_auxiliary_phases() -> None:
    policy = _ppg_policy()
    trainer = PPGTrainer(
        policy, n_policy=2, aux_epochs=3, beta_clone=1.0, epochs=1, minibatch_size=16
    )
    aux_head = policy.module.aux_head
    phases = []
    for i in range(6):
        head_before = aux_head.weight.detach().clone()
        stats = trainer.step(_ppg_segment(policy, i)).stats
        aux_ran = "aux/aux_value" in stats
        phases.append(aux_ran)
        # only the auxiliary phase trains the aux head
        assert torch.equal(aux_head.weight, head_before) != aux_ran
        if aux_ran:
            assert {"aux/kl", "aux/value", "policy", "value"} <= set(stats)
            assert float(stats["aux/kl"]) < 0.05  # the cloning term keeps the policy
    assert phases == [False, True] * 3
    assert trainer.aux_phases == 3 and trainer.updates == 6
    assert policy.version == 6 + 3
    # 1 epoch x 2 minibatches of 32 rows per PPO step, 3 epochs x 4 minibatches per aux phase
    assert policy.approximation.updates == 6 * 2 + 3 * 3 * 4


def test_ppg_auxiliary_phase_fits_the_value_targets() -> None:
    policy = _ppg_policy()
    trainer = PPGTrainer(policy, n_policy=1, aux_epochs=1, epochs=1, minibatch_size=32)
    segment = _ppg_segment(policy, 0)
    _, returns, _ = segment_gae(segment.reward, segment.value, segment.done, segment.truncated,
                                0.99, 0.95)

    def aux_error() -> float:
        with torch.no_grad():
            aux_value = policy.analyze(NamedArray(obs=segment.obs[:-1],
                                                  action=segment.action[:-1])).aux_value
        return float(((aux_value - returns) ** 2).mean())

    first = aux_error()
    trainer.aux_epochs = 50
    trainer.step(segment)
    assert aux_error() < 0.5 * first


def test_ppg_auxiliary_phase_runs_in_minibatches() -> None:
    """The old policy is computed minibatch by minibatch: memory does not grow with n_policy."""
    policy = _ppg_policy()
    trainer = PPGTrainer(
        policy, n_policy=4, aux_epochs=1, epochs=1, minibatch_size=32, aux_minibatch_size=8
    )
    sizes: list[int] = []
    handle = policy.module.trunk.register_forward_hook(
        lambda module, inputs, output: sizes.append(inputs[0].shape[0])
    )
    segments = [_ppg_segment(policy, i) for i in range(4)]
    for segment in segments[:3]:
        trainer.step(segment)
    sizes.clear()
    stats = trainer.step(segments[3]).stats
    handle.remove()
    assert "aux/kl" in stats and trainer.aux_phases == 1
    assert max(sizes) == 32  # the PPO step's full-minibatch passes; aux passes are smaller
    aux_sizes = sizes[-(4 * 32 // 8) * 2 :]
    assert set(aux_sizes) == {8}  # 16 no-grad chunks for the old policy, 16 minibatches


# -- presets -----------------------------------------------------------------------------


SMOKE = {
    "vpg": (vpg, {"min_batch_size": 50, "hidden": 16}, Preset, Actor),
    "vac": (vac, {"n_envs": 4, "hidden": 16}, ParallelPreset, Actor),
    "a2c": (a2c, {"n_envs": 4, "n_steps": 5, "hidden": 16}, ParallelPreset,
            Actor),
    "ppg": (
        ppg,
        {"n_envs": 2, "n_steps": 16, "n_policy": 2, "minibatch_size": 16, "hidden": 16},
        ParallelPreset,
        Actor,
    ),
}


@pytest.mark.parametrize("name", list(SMOKE))
def test_preset_trains_saves_loads_and_evaluates(name: str, tmp_path: Path) -> None:
    builder, hyperparameters, kind, test_agent_type = SMOKE[name]
    seed_everything(0)  # the initial weights too
    env = GymEnvironment("CartPole-v1")
    preset = builder.hyperparameters(**hyperparameters).env(env).device("cpu").build()
    assert isinstance(preset, kind) and preset.name == name
    before = {k: v.clone() for k, v in preset.model.state_dict().items()}
    experiment = make_experiment(
        preset, env, train_steps=400, logdir=str(tmp_path), quiet=True, verbose=True, seed=0
    )
    experiment.train(frames=400)
    agent = experiment.agent
    assert agent.policy.module is preset.model  # training agents share the preset's model
    assert agent.policy.version > 0
    after = preset.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    if name == "ppg":
        assert agent.trainer.aux_phases >= 1
    loaded = saved_and_loaded(preset, tmp_path)
    states = StateArray({"observation": torch.randn(8, 4)}, (8,))
    test_agent = loaded.test_agent()
    assert isinstance(test_agent, test_agent_type)
    assert torch.equal(test_agent.act(states), preset.test_agent().act(states))
    # evaluation is the loaded (greedy) test agent's, replayed here in fresh environments
    if kind is Preset:
        experiment.env.reset(seed=7)  # the evaluation episodes continue this RNG
        replayed = replay_episodes(test_agent, "CartPole-v1", seed=7, episodes=2)
    else:  # ParallelEnvExperiment.test: min(n_envs, 2) copies, reset with seed + 10,000
        replayed = replay_first_episodes(
            test_agent, "CartPole-v1", min(preset.n_envs, 2), seed=10_000, quota=[1, 1]
        )
    assert experiment.test(episodes=2) == replayed
    experiment.close()


# rollouts of 2 x 8 transitions in minibatches of 6: 3 optimizer steps per epoch (2 with
# fewer than 13 rows: rows leaving a terminal state are dropped); PPG adds an auxiliary
# phase every second rollout, whose minibatch count also depends on the dropped rows
SCHEDULED = {
    "ppo": (ppo, "CartPole-v1", {}),
    "ppg": (ppg, "CartPole-v1", {"n_policy": 2, "aux_minibatch_size": 8}),
    "continuous-ppo": (continuous_ppo, "Pendulum-v1", {"lr_schedule": "linear"}),
    "ppg-dropped-rows": (ppg, "CartPole-v1", {"n_policy": 2, "aux_minibatch_size": 6}),
}


@pytest.mark.parametrize("case", list(SCHEDULED.values()), ids=list(SCHEDULED))
def test_linear_lr_decays_to_zero_over_the_training_budget(case, tmp_path: Path) -> None:
    builder, env_id, extra = case
    hyperparameters = {"n_envs": 2, "n_steps": 8, "epochs": 2, "minibatch_size": 6, "hidden": 8}
    seed_everything(0)
    env = GymVectorEnvironment(env_id, 2, seed=0)
    preset = builder.hyperparameters(**hyperparameters, **extra).env(env).device("cpu").build()
    rollouts, budget = 4, 4 * 2 * 8
    experiment = make_experiment(preset, env, train_steps=budget, logdir=str(tmp_path),
                                 quiet=True, seed=0)
    trainer, approximation = experiment.agent.trainer, experiment.agent.policy.approximation
    lr = preset.hyperparameters["lr"]
    assert approximation.optimizer.param_groups[0]["lr"] == lr
    used = []  # (update, learning rate) of every optimizer step
    step = approximation.step

    def recording_step(loss=None):
        used.append((trainer.updates, approximation.optimizer.param_groups[0]["lr"]))
        return step(loss)

    approximation.step = recording_step
    experiment.train(frames=budget)
    # the last rollout of the budget is trained within it, and the rate ends at 0
    assert trainer.updates == rollouts
    assert approximation.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)
    assert all(rate > 0 for _, rate in used)
    for k in range(rollouts):  # the j-th of an update's m steps: lr * (1 - (k + j / m) / 4)
        rates = [rate for update, rate in used if update == k]
        m = len(rates)
        expected = [lr * (1 - (k + j / m) / rollouts) for j in range(m)]
        assert rates == pytest.approx(expected, rel=1e-9)
    experiment.close()


@pytest.mark.parametrize("name", list(SMOKE))
def test_test_agents_take_the_mode_or_sample_as_alls_do_without_deterministic_test(name) -> None:
    """SRL's ``is_evaluation``: the mode; ``deterministic_test=False`` (the Atari presets'
    default): ALL's test agents, which sample; for a run's evaluation policy too."""
    builder, hyperparameters, _, _ = SMOKE[name]
    torch.manual_seed(0)
    env = GymEnvironment("CartPole-v1")
    states = StateArray({"observation": torch.zeros(256, 4)}, (256,))  # (one state, 256 times)
    preset = builder.hyperparameters(**hyperparameters).env(env).device("cpu").build()
    logits = preset.model(states.observation[:1])[0][0].detach()
    for agent in (preset.test_agent(), Actor(preset.policy(), evaluation=True)):
        assert torch.equal(agent.act(states), logits.argmax().expand(256))
    sampling = builder.hyperparameters(**hyperparameters, deterministic_test=False).env(
        env).device("cpu").build()
    sampling.model.load_state_dict(preset.model.state_dict())
    share = float(torch.softmax(logits, -1)[1])  # (about 1/2, untrained)
    for agent in (sampling.test_agent(), Actor(sampling.policy(), evaluation=True)):
        assert abs(float(agent.act(states).float().mean()) - share) < 0.15


@pytest.mark.parametrize("name", list(SMOKE))
def test_preset_test_agent_copies_parameters(name: str) -> None:
    builder, hyperparameters, _, _ = SMOKE[name]
    env = GymEnvironment("CartPole-v1")
    preset = builder.hyperparameters(**hyperparameters).env(env).device("cpu").build()
    test_agent = preset.test_agent()
    assert test_agent.policy.module is not preset.model
    with torch.no_grad():
        for parameter in preset.model.parameters():
            parameter.add_(torch.randn_like(parameter))
    states = StateArray({"observation": torch.randn(32, 4)}, (32,))
    fresh = preset.test_agent().act(states)
    assert torch.equal(fresh, preset.model(states.observation)[0].argmax(-1))
    if isinstance(preset, ParallelPreset):
        assert isinstance(preset.agent(), OnPolicyAgent)
        assert preset.parallel_test_agent().policy.module is not preset.model
    else:
        assert isinstance(preset.agent(), VPG)


@pytest.mark.parametrize("name", list(SMOKE))
def test_preset_rejects_bad_spaces_and_hyperparameters(name: str) -> None:
    builder = SMOKE[name][0]
    with pytest.raises(ValueError, match="handles discrete actions .* has Box actions"):
        builder.env(GymEnvironment("Pendulum-v1")).build()
    key = "min_batch_size" if name == "vpg" else "n_envs"
    with pytest.raises(ValueError, match=key):
        builder.hyperparameters(**{key: 0}).env(GymEnvironment("CartPole-v1")).build()
