"""SRL trainers (PPO, PPG) on ``[T + 1, B]`` segments.

The policies here are small stand-ins that follow the contract of
``looprl.agents.actor_critic`` (``analyze(sample, target=...)``); DQN's are in ``test_dqn_windows``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from looprl.agents.losses import segment_gae
from looprl.agents.ppo import ActorCritic, PPOPolicy, PPOTrainer
from looprl.agents.srl_trainers import SRLPPGTrainer, SRLPPOTrainer
from looprl.approximation import Approximation
from looprl.core import (
    NamedArray,
    Policy,
    RolloutRequest,
    SampleBatch,
    Trainer,
    TrainerStepResult,
    namedarray,
)
from looprl.memory import RolloutBuffer
from looprl.nn import MLP
from looprl.policies.distributions import CategoricalHead

OBS, ACTIONS = 4, 3


@namedarray
class Analysis:
    log_prob: Any
    entropy: Any
    value: Any
    aux_value: Any = None
    logits: Any = None


class FeedForwardPolicy(PPOPolicy):
    """A local ``PPOPolicy`` that also answers ``analyze(sample, target="ppo")``."""

    def __init__(self, seed=0, aux=False, logits=False, lr=1e-2, obs=OBS, actions=ACTIONS):
        torch.manual_seed(seed)
        model = ActorCritic(MLP(obs, actions, hidden=(32,)), MLP(obs, 1, hidden=(32,)))
        model.aux_head = MLP(obs, 1, hidden=(32,)) if aux else None
        super().__init__(
            Approximation(model, torch.optim.Adam(model.parameters(), lr=lr)),
            CategoricalHead(actions),
        )
        self.with_logits = logits
        self.shapes: list[tuple[int, ...]] = []

    def analyze(self, sample, target=None, **kwargs):
        if target is None:  # the local PPOTrainer's flat batch
            return super().analyze(sample)
        obs = sample.obs.obs
        self.shapes.append(tuple(obs.shape[:-1]))
        logits, value = self.approximation(obs)
        log_prob, entropy = self.head.log_prob_and_entropy(logits, sample.action)
        model = self.approximation.model
        aux = model.aux_head(obs).squeeze(-1) if model.aux_head is not None else None
        return Analysis(log_prob, entropy, value, aux, logits if self.with_logits else None)


class GRUNet(nn.Module):
    def __init__(self, hidden: int, aux: bool):
        super().__init__()
        self.cell = nn.GRUCell(OBS, hidden)
        self.actor = nn.Linear(hidden, ACTIONS)
        self.critic = nn.Linear(hidden, 1)
        self.aux = nn.Linear(hidden, 1) if aux else None


class RecurrentPolicy(Policy):
    """A GRU actor-critic: ``analyze`` runs over ``[T, B]`` from ``policy_state[0]``."""

    def __init__(self, seed=0, hidden=8, aux=False):
        torch.manual_seed(seed)
        net = GRUNet(hidden, aux)
        self.approximation = Approximation(net, torch.optim.Adam(net.parameters(), lr=1e-2))
        self.device = torch.device("cpu")
        self.hidden = hidden
        self.version = 0
        self.shapes: list[tuple[int, ...]] = []

    @property
    def module(self):
        return self.approximation.model

    @property
    def default_policy_state(self):
        return NamedArray(hx=np.zeros((1, self.hidden), dtype=np.float32))

    def rollout(self, request, **kwargs):
        raise NotImplementedError

    def analyze(self, sample, target=None, **kwargs):
        net = self.approximation.model
        hx = sample.policy_state.hx[0, :, 0]
        reset = sample.done | sample.truncated
        self.shapes.append(tuple(sample.action.shape))
        outputs = []
        for t in range(sample.action.shape[0]):
            h = net.cell(sample.obs.obs[t], hx)
            outputs.append(h)
            hx = torch.where(reset[t].unsqueeze(-1), torch.zeros_like(h), h)
        h = torch.stack(outputs)
        logits, value = net.actor(h), net.critic(h).squeeze(-1)
        log_prob, entropy = CategoricalHead.log_prob_and_entropy(logits, sample.action)
        aux = net.aux(h).squeeze(-1) if net.aux is not None else None
        return Analysis(log_prob, entropy, value, aux)

    def states(self, obs, done, truncated):
        """The memory before each row, as an actor would record it."""
        net, hx = self.approximation.model, torch.zeros(obs.shape[1], self.hidden)
        states = []
        with torch.no_grad():
            for t in range(obs.shape[0]):
                states.append(hx)
                h = net.cell(obs[t], hx)
                hx = torch.where((done[t] | truncated[t]).unsqueeze(-1), torch.zeros_like(h), h)
        return NamedArray(hx=torch.stack(states).unsqueeze(2))


def make_sample(policy=None, rows=9, streams=6, seed=0, version=0) -> SampleBatch:
    """Random ``[rows, streams]`` segments with episode ends; log-probs and values from
    ``policy`` (so that they are on-policy) when given."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(rows, streams, OBS, generator=g)
    end = torch.rand(rows, streams, generator=g) < 0.2
    done = end & (torch.rand(rows, streams, generator=g) < 0.5)
    truncated = end & ~done
    reward = torch.randn(rows, streams, generator=g)
    reward[1:][end[:-1]] = 0.0
    sample = SampleBatch(
        obs=NamedArray(obs=obs),
        action=torch.randint(ACTIONS, (rows, streams), generator=g),
        reward=reward,
        done=done,
        truncated=truncated,
        log_prob=-torch.rand(rows, streams, generator=g) - 0.5,
        value=torch.randn(rows, streams, generator=g),
        policy_version=torch.full((rows, streams), version),
    )
    if isinstance(policy, RecurrentPolicy):
        sample.policy_state = policy.states(obs, done, truncated)
    if policy is not None:
        with torch.no_grad():
            analysis = policy.analyze(sample, target="ppo")
        sample.log_prob, sample.value = analysis.log_prob, analysis.value
    return sample


def parameters(policy) -> list[torch.Tensor]:
    return [p.detach().clone() for p in policy.module.parameters()]


def changed(before, policy) -> bool:
    return any(not torch.equal(a, b) for a, b in zip(before, policy.module.parameters()))


def finite(stats: dict[str, float]) -> bool:
    return all(np.isfinite(v) for k, v in stats.items() if k != "explained_variance")


# -- PPO -------------------------------------------------------------------------------------


def test_ppo_step_by_name_updates_the_policy():
    policy = FeedForwardPolicy()
    trainer = Trainer(type_="ppo", policy=policy, args=dict(epochs=2, minibatch_size=16, seed=0))
    assert isinstance(trainer, SRLPPOTrainer) and trainer.sample_buffer == "on_policy"
    before = parameters(policy)
    sample = make_sample(policy, version=0)
    policy.version = 3
    result = trainer.step(sample.to_numpy())  # actors may send numpy
    assert isinstance(result, TrainerStepResult) and result.step == 1
    assert policy.version == 4 and changed(before, policy)
    assert result.priorities is None and finite(result.stats)
    for key in ("policy", "value", "entropy", "approx_kl", "clip_fraction", "explained_variance"):
        assert key in result.stats
    assert result.stats["sample_lag"] == 3.0
    mask = ~(sample.done | sample.truncated)[:-1]
    assert result.stats["valid_rows"] == float(mask.sum())
    assert set(policy.shapes[1:]) == {(16,)} | {(int(mask.sum()) % 16,)} - {(0,)}


def local_batch(sample: SampleBatch, gamma: float, lam: float):
    """The same experience as the local ``PPO`` agent's ``RolloutBuffer`` sees it."""
    rows, streams = sample.reward.shape
    end = sample.done | sample.truncated
    buffer = RolloutBuffer(rows - 1, streams)
    for t in range(rows - 1):
        buffer.store(
            end[t],
            observation=sample.obs.obs[t],
            action=sample.action[t],
            log_prob=sample.log_prob[t],
            value=sample.value[t],
        )
        buffer.store_outcome(sample.reward[t + 1], end[t + 1], (~sample.done[t + 1]).float())
    return buffer.compute(sample.value[-1], gamma, lam)


@pytest.mark.parametrize("minibatch_size", [16, 1000])
def test_ppo_on_segments_equals_local_ppo_on_the_flat_batch(minibatch_size):
    local_policy, srl_policy = FeedForwardPolicy(seed=1), FeedForwardPolicy(seed=1)
    sample = make_sample(local_policy, seed=2)
    sample.log_prob = sample.log_prob - 0.1 * torch.rand(sample.log_prob.shape)  # off-policy
    hp = dict(epochs=3, minibatch_size=minibatch_size, clip=0.2, value_coef=0.5, entropy_coef=0.01)
    local = PPOTrainer(local_policy, generator=torch.Generator().manual_seed(7), **hp)
    srl = SRLPPOTrainer(srl_policy, discount_factor=0.9, gae_lambda=0.8, seed=7, **hp)
    local.step(local_batch(sample, 0.9, 0.8))
    srl.step(sample)
    for a, b in zip(local_policy.module.parameters(), srl_policy.module.parameters()):
        torch.testing.assert_close(a, b)
    assert changed(parameters(FeedForwardPolicy(seed=1)), srl_policy)


def test_ppo_vtrace_on_policy_with_lambda_1_equals_gae():
    """On-policy, lambda 1: V-trace's pg advantages and targets are GAE(1)'s."""
    gae_policy, vtrace_policy = FeedForwardPolicy(seed=3), FeedForwardPolicy(seed=3)
    sample = make_sample(gae_policy, seed=4)
    hp = dict(epochs=2, minibatch_size=20, gae_lambda=1.0, discount_factor=0.9, seed=0)
    SRLPPOTrainer(gae_policy, **hp).step(sample)
    stale = sample.clone()
    stale.value = None  # V-trace reads the current values
    SRLPPOTrainer(vtrace_policy, vtrace=True, **hp).step(stale)
    for a, b in zip(gae_policy.module.parameters(), vtrace_policy.module.parameters()):
        torch.testing.assert_close(a, b)
    # off-policy samples change the targets (ratios below 1 cut the traces)
    off_policy = FeedForwardPolicy(seed=3)
    sample.log_prob = sample.log_prob + 0.5
    SRLPPOTrainer(off_policy, vtrace=True, **hp).step(sample)
    assert changed(parameters(vtrace_policy), off_policy)


@pytest.mark.parametrize("vtrace", [False, True])
def test_ppo_recurrent_minibatches_are_whole_streams(vtrace):
    policy = RecurrentPolicy()
    sample = make_sample(policy, rows=9, streams=6, seed=5)
    # 16 // 8 = 2 streams per minibatch
    trainer = SRLPPOTrainer(policy, epochs=2, minibatch_size=16, vtrace=vtrace, seed=0)
    before = parameters(policy)
    policy.shapes.clear()
    result = trainer.step(sample)
    # (V-trace: the whole segment first), then 2 epochs x 3 minibatches of [T, 2]
    assert policy.shapes == [(9, 6)] * vtrace + [(8, 2)] * 6
    assert policy.version == 1 and changed(before, policy) and finite(result.stats)
    with pytest.raises(ValueError, match="policy_state"):
        trainer.step(make_sample(None))


@pytest.mark.parametrize("distributed", [False, True])
def test_a_minibatch_without_valid_rows_steps_only_beside_ddp_trainers(distributed, tmp_path):
    """Trainers synchronized by DDP must take as many gradient steps as each other (every
    backward is a collective): a recurrent minibatch of final observations only is skipped
    alone, and is a zero-gradient step beside other trainers."""
    import torch.distributed as dist

    policy = RecurrentPolicy()
    sample = make_sample(policy, rows=3, streams=2, seed=1)
    sample.done[:] = False
    sample.truncated[:] = False
    sample.done[:2, 0] = True  # stream 0: both training rows end an episode
    sample.policy_state = policy.states(sample.obs.obs, sample.done, sample.truncated)
    trainer = SRLPPOTrainer(policy, epochs=1, minibatch_size=2, seed=0)  # one stream each
    steps = []
    step = policy.approximation.step
    policy.approximation.step = lambda loss=None: (steps.append(loss), step(loss))
    if distributed:  # a group of one: DDP's collectives run, trivially
        dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'group'}", rank=0,
                                world_size=1)
        policy.approximation.distribute()
    try:
        trainer.step(sample)
    finally:
        if distributed:
            dist.destroy_process_group()
    assert len(steps) == (2 if distributed else 1)


def test_ppo_rejects_bad_samples_and_skips_empty_ones():
    policy = FeedForwardPolicy()
    trainer = SRLPPOTrainer(policy)
    sample = make_sample(policy)
    sample.value = None
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['value'\]"):
        trainer.step(sample)
    finished = make_sample(policy)
    finished.done[:] = True
    result = trainer.step(finished)
    assert result.step == 0 and policy.version == 0


# -- PPG -------------------------------------------------------------------------------------


def distillation_error(policy, samples) -> float:
    """``0.5 * mean((V_aux(s) - R)^2)`` over the training rows of ``samples`` (GAE targets)."""
    errors = []
    for sample in samples:
        _, returns, mask = segment_gae(
            sample.reward, sample.value, sample.done, sample.truncated, 0.99, 0.95
        )
        with torch.no_grad():
            aux = policy.module.aux_head(sample.obs.obs[:-1]).squeeze(-1)
        errors.append((aux - returns)[mask])
    return float(0.5 * (torch.cat(errors) ** 2).mean())


@pytest.mark.parametrize("logits", [False, True])
def test_ppg_auxiliary_phase_every_n_policy_steps(logits):
    policy = FeedForwardPolicy(aux=True, logits=logits)
    trainer = Trainer(
        type_="ppg",
        policy=policy,
        args=dict(
            n_policy=2, aux_epochs=1, epochs=1, minibatch_size=64, aux_minibatch_size=10_000, seed=0
        ),
    )
    samples = [make_sample(policy, seed=0), make_sample(policy, seed=1)]
    first = trainer.step(samples[0])
    assert "aux/kl" not in first.stats and trainer.aux_phases == 0 and policy.version == 1
    # the policy phase leaves the auxiliary head alone: the phase starts from these errors
    expected = distillation_error(policy, samples)
    second = trainer.step(samples[1])
    assert trainer.aux_phases == 1 and policy.version == 3 and second.step == 2
    # one auxiliary minibatch over both samples' rows, at the start of the phase
    assert second.stats["aux/aux_value"] == pytest.approx(expected, rel=1e-5)
    assert second.stats["aux/kl"] == pytest.approx(0.0, abs=1e-6)  # no drift yet
    assert finite(second.stats)
    assert distillation_error(policy, samples) < expected  # it distilled
    assert trainer._memory == []


def test_ppg_with_a_recurrent_policy_uses_whole_streams():
    policy = RecurrentPolicy(aux=True)
    trainer = SRLPPGTrainer(
        policy, n_policy=1, aux_epochs=2, epochs=1, minibatch_size=16, aux_minibatch_size=24, seed=0
    )
    sample = make_sample(policy, rows=9, streams=6, seed=3)
    policy.shapes.clear()
    result = trainer.step(sample)
    # the check of the aux head, 3 policy minibatches of 2 streams, 2 chunks of 3 streams
    # for the old policy, then 2 epochs x 2 auxiliary minibatches of 3 streams
    assert policy.shapes == [(2, 6)] + [(8, 2)] * 3 + [(8, 3)] * 6
    assert trainer.aux_phases == 1 and policy.version == 2 and finite(result.stats)


def test_ppg_needs_an_auxiliary_head():
    policy = FeedForwardPolicy(aux=False)
    trainer = SRLPPGTrainer(policy)
    with pytest.raises(ValueError, match="auxiliary value head"):
        trainer.step(make_sample(policy))
    assert policy.version == 0


# -- learning --------------------------------------------------------------------------------


class Collector:
    """A one-process actor: ``[T + 1, B]`` segments from a Gymnasium vector env (next-step
    autoreset: the row after a final observation starts the next episode with reward 0)."""

    def __init__(self, policy, envs: int, rows: int, seed: int):
        self.policy, self.rows = policy, rows
        self.env = gym.make_vec("CartPole-v1", num_envs=envs, vectorization_mode="sync")
        obs, _ = self.env.reset(seed=seed)
        zeros = np.zeros(envs, dtype=bool)
        self.last = self._row(obs, np.zeros(envs, dtype=np.float32), zeros, zeros)
        self.running, self.returns, self.steps = np.zeros(envs), [], 0

    def _row(self, obs, reward, done, truncated) -> dict:
        obs = torch.as_tensor(obs, dtype=torch.float32)
        result = self.policy.rollout(RolloutRequest(obs=obs))
        return dict(
            obs=obs,
            reward=torch.as_tensor(reward, dtype=torch.float32),
            done=torch.as_tensor(done),
            truncated=torch.as_tensor(truncated),
            action=result.action,
            log_prob=result.log_prob,
            value=result.value,
        )

    def segment(self) -> SampleBatch:
        rows = [self.last]
        for _ in range(self.rows):
            obs, reward, done, truncated, _ = self.env.step(rows[-1]["action"].numpy())
            self.running += reward
            for i in np.flatnonzero(done | truncated):
                self.returns.append(self.running[i])
                self.running[i] = 0.0
            rows.append(self._row(obs, reward, done, truncated))
        self.last, self.steps = rows[-1], self.steps + self.rows * len(reward)
        fields = {key: torch.stack([row[key] for row in rows]) for key in rows[0]}
        version = torch.full(fields["reward"].shape, self.policy.version)
        obs = NamedArray(obs=fields.pop("obs"))
        return SampleBatch(obs=obs, policy_version=version, **fields)


def test_srl_ppo_learns_cartpole():
    policy = FeedForwardPolicy(seed=0, lr=1e-3, obs=4, actions=2)
    trainer = SRLPPOTrainer(
        policy,
        epochs=10,
        minibatch_size=256,
        entropy_coef=0.0,
        discount_factor=0.98,
        gae_lambda=0.8,
        max_grad_norm=0.5,
        seed=0,
    )
    collector = Collector(policy, envs=8, rows=32, seed=0)
    best = 0.0
    while collector.steps < 50_000 and best <= 150:
        result = trainer.step(collector.segment())
        assert result.stats["sample_lag"] == 0.0
        if len(collector.returns) >= 20:
            best = max(best, float(np.mean(collector.returns[-20:])))
    collector.env.close()
    assert best > 150, f"mean return {best} after {collector.steps} steps"
