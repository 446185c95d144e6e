"""The on-policy family on one data contract: ``ActorCriticPolicy``, ``SegmentBuffer``,
``OnPolicyAgent`` and the PPO, PPG, A2C and VAC trainers on ``[T + 1, B]`` segments.

The same trainer objects run in the local agents and in the Ray trainer workers; these tests
feed them segments directly (the local agent's and random ones).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from looprl.agents import (
    A2CTrainer,
    Actor,
    ActorCriticPolicy,
    OnPolicyAgent,
    PPGTrainer,
    PPOTrainer,
    VACTrainer,
)
from looprl.agents.losses import segment_gae
from looprl.approximation import Approximation
from looprl.core import (
    NamedArray,
    ParallelAgent,
    Policy,
    RolloutRequest,
    RolloutResult,
    SampleBatch,
    State,
    StateArray,
    Trainer,
    TrainerStepResult,
    namedarray,
)
from looprl.environments import GymVectorEnvironment
from looprl.memory import SegmentBuffer
from looprl.memory.segments import rows_of
from looprl.nn import MLP, ActorCritic, PPGNetwork
from looprl.policies.distributions import CategoricalHead

OBS, ACTIONS = 4, 3


class RecordingPolicy(ActorCriticPolicy):
    """An ``ActorCriticPolicy`` over small MLPs that records the leading shape it analyzes."""

    def __init__(self, seed=0, aux=False, lr=1e-2, obs=OBS, actions=ACTIONS):
        torch.manual_seed(seed)
        if aux:
            model = PPGNetwork(nn.Sequential(MLP(obs, 32, hidden=()), nn.Tanh()),
                               nn.Linear(32, actions), nn.Linear(32, 1), MLP(obs, 1, hidden=(32,)))
        else:
            model = ActorCritic(MLP(obs, actions, hidden=(32,)), MLP(obs, 1, hidden=(32,)))
        approximation = Approximation(model, torch.optim.Adam(model.parameters(), lr=lr))
        super().__init__(approximation, CategoricalHead(actions))
        self.shapes: list[tuple[int, ...]] = []

    def analyze(self, sample, target=None, **kwargs):
        self.shapes.append(tuple(np.shape(sample.action)))
        return super().analyze(sample, target, **kwargs)


@namedarray
class Analysis:
    log_prob: Any
    entropy: Any
    value: Any
    aux_value: Any = None
    logits: Any = None


class GRUNet(nn.Module):
    def __init__(self, hidden: int, aux: bool):
        super().__init__()
        self.cell = nn.GRUCell(OBS, hidden)
        self.actor = nn.Linear(hidden, ACTIONS)
        self.critic = nn.Linear(hidden, 1)
        self.aux = nn.Linear(hidden, 1) if aux else None


class RecurrentPolicy(Policy):
    """A stand-in GRU actor-critic that follows the trainers' policy contract:
    ``analyze`` runs over ``[T, B]`` from ``policy_state[0]``."""

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


# -- the policy ------------------------------------------------------------------------------


def test_rollout_log_probs_values_and_evaluation_rows() -> None:
    policy = RecordingPolicy()
    obs = torch.randn(400, OBS)
    with torch.no_grad():  # a near-uniform policy, so that sampling differs from argmax
        policy.module.actor[-1].weight.mul_(1e-3)
    logits, values, _, _ = policy.module(obs)
    result = policy.rollout(RolloutRequest(obs=obs))
    assert result.action.shape == (400,) and result.action.dtype == torch.int64
    expected = torch.log_softmax(logits, -1).gather(-1, result.action[:, None])[:, 0]
    torch.testing.assert_close(result.log_prob, expected)
    torch.testing.assert_close(result.value, values)
    assert not result.log_prob.requires_grad and result.policy_state is None
    rows = torch.arange(400) % 2 == 0
    mixed = policy.rollout(RolloutRequest(obs=obs.numpy(), is_evaluation=rows))
    assert isinstance(mixed, RolloutResult)
    assert torch.equal(mixed.action[rows], logits.argmax(-1)[rows])
    assert not torch.equal(mixed.action[~rows], logits.argmax(-1)[~rows])


def test_sampling_follows_the_distribution_and_a_seed() -> None:
    policy = RecordingPolicy()
    with torch.no_grad():
        policy.module.actor[-1].weight.zero_()
        policy.module.actor[-1].bias.copy_(torch.tensor([0.0, 0.0, 100.0]))
    assert (policy.rollout(RolloutRequest(obs=torch.randn(100, OBS))).action == 2).all()
    model = ActorCritic(nn.Linear(OBS, ACTIONS), nn.Linear(OBS, 1))
    a, b = (ActorCriticPolicy(Approximation(model), CategoricalHead(ACTIONS), seed=5)
            for _ in range(2))
    obs = torch.zeros(50, OBS)
    assert torch.equal(a.rollout(RolloutRequest(obs=obs)).action,
                       b.rollout(RolloutRequest(obs=obs)).action)


def test_analyze_matches_rollout_and_reads_one_field_observations() -> None:
    policy = RecordingPolicy()
    obs = torch.randn(5, 8, OBS)
    result = policy.rollout(RolloutRequest(obs=obs.reshape(40, OBS)))
    action = result.action.reshape(5, 8)
    analysis = policy.analyze(NamedArray(obs=NamedArray(obs=obs), action=action))
    torch.testing.assert_close(analysis.log_prob, result.log_prob.reshape(5, 8))
    torch.testing.assert_close(analysis.value, result.value.reshape(5, 8))
    assert analysis.logits.shape == (5, 8, ACTIONS) and analysis.log_prob.requires_grad
    assert (analysis.entropy > 0).all() and analysis.aux_value is None
    arrays = policy.analyze(NamedArray(obs=NamedArray(obs=obs.numpy()), action=action.numpy()))
    torch.testing.assert_close(arrays.log_prob, analysis.log_prob)  # (on the policy's device)
    with pytest.raises(ValueError, match="one observation tensor"):
        policy.analyze(NamedArray(obs=NamedArray(a=obs, b=obs), action=action))


def test_analyze_leaves_a_discrete_entropy_out_when_asked() -> None:
    policy = RecordingPolicy()
    sample = NamedArray(obs=torch.randn(5, OBS), action=torch.randint(ACTIONS, (5,)))
    full, lean = policy.analyze(sample), policy.analyze(sample, entropy=False)
    assert lean.entropy is None and torch.equal(lean.log_prob, full.log_prob)
    torch.testing.assert_close(policy.head.entropy(lean.logits), full.entropy)


def test_test_agent_on_state_and_state_array() -> None:
    policy = RecordingPolicy()
    agent = Actor(policy, evaluation=True)
    obs = torch.randn(5, OBS)
    logits = policy.module(obs)[0]
    assert torch.equal(agent.act(StateArray({"observation": obs}, (5,))), logits.argmax(-1))
    single = agent.act(State(obs[2]))
    assert single.shape == () and int(single) == int(logits[2].argmax())


# -- the local collector -----------------------------------------------------------------------


def test_segment_buffer_rows_ends_and_overlap() -> None:
    buffer = SegmentBuffer(segment_length=2, streams=2)
    outputs = RolloutResult(action=torch.tensor([1, 0]), log_prob=torch.zeros(2),
                            value=torch.tensor([0.5, 1.5]))
    # env 0 terminates at row 1, env 1 is truncated at row 2
    rows = [(0.0, [False, False], [1.0, 1.0]), (1.0, [True, False], [0.0, 1.0]),
            (2.0, [False, True], [1.0, 1.0])]
    for t, (reward, end, mask) in enumerate(rows):
        assert buffer.segments() == []
        buffer.write(None, *rows_of(torch.full((2, OBS), float(t)), torch.tensor([reward] * 2),
                                    torch.tensor(end), torch.tensor(mask), outputs, version=t))
    (segment,) = buffer.segments()
    assert segment.reward.shape == (3, 2) and segment.obs.shape == (3, 2, OBS)
    assert segment.done.tolist() == [[False, False], [True, False], [False, False]]
    assert segment.truncated.tolist() == [[False, False], [False, False], [False, True]]
    assert segment.policy_version[:, 0].tolist() == [0, 1, 2]
    # the last row starts the next segment; the segment handed out is a copy
    assert buffer.t.tolist() == [1, 1] and float(buffer.rows.obs[0, 0, 0]) == 2.0
    buffer.rows.obs[:] = -1.0
    assert float(segment.obs[2, 0, 0]) == 2.0


def test_segment_buffer_whole_episodes_grow_and_start_with_the_next_episode() -> None:
    """With ``whole_episodes`` a segment ends at the end of the episode that brings it to
    ``segment_length`` steps, the storage doubling as it goes; streams are written apart."""
    buffer = SegmentBuffer(segment_length=2, streams=2, whole_episodes=True)
    outputs = RolloutResult(action=torch.tensor([0]), log_prob=torch.zeros(1),
                            value=torch.zeros(1))
    for t in range(6):  # stream 1: an episode of 5 steps ending at row 5 (terminal)
        end = t == 5
        buffer.write(np.array([1]), *rows_of(torch.full((1, OBS), float(t)), 1.0, end,
                                             0.0 if end else 1.0, outputs, version=t))
        assert (buffer.segments() != []) == end
    assert len(buffer.rows.reward) == 6 and buffer.t.tolist() == [0, 0]  # 3 -> 6 rows
    two = RolloutResult(action=torch.tensor([0, 0]), log_prob=torch.zeros(2), value=torch.zeros(2))
    buffer.write(np.array([0, 1]), *rows_of(torch.zeros(2, OBS), 0.0, False, 1.0, two, 7))
    assert buffer.t.tolist() == [1, 1]  # each starts a segment with its first row


def test_agent_trains_on_overlapping_segments_every_n_steps() -> None:
    policy = RecordingPolicy(actions=2)
    trainer = PPOTrainer(policy, epochs=1, minibatch_size=64)
    segments: list[SampleBatch] = []
    step = trainer.step
    trainer.step = lambda sample: (segments.append(sample.clone()), step(sample))[1]
    agent = OnPolicyAgent(policy, trainer, n_envs=2, n_steps=4)
    assert isinstance(agent, ParallelAgent)
    env = GymVectorEnvironment("CartPole-v1", 2, seed=0)
    state = env.reset()
    for _ in range(13):
        action = agent.act(state)
        assert action.shape == (2,)
        state = env.step(action)
    # segments are complete at acts 5, 9 and 13
    assert len(segments) == 3 and policy.version == 3
    for first, second in zip(segments, segments[1:]):
        assert first.reward.shape == (5, 2) and first.obs.shape == (5, 2, OBS)
        assert torch.equal(first.obs[-1], second.obs[0])  # row T starts the next segment
    assert segments[1].policy_version[1:].eq(1).all() and segments[1].policy_version[0].eq(0).all()


# -- PPO -------------------------------------------------------------------------------------


def test_ppo_step_by_name_updates_the_policy():
    policy = RecordingPolicy()
    trainer = Trainer(type_="ppo", policy=policy, args=dict(epochs=2, minibatch_size=16, seed=0))
    assert isinstance(trainer, PPOTrainer) and trainer.sample_buffer == "on_policy"
    before = parameters(policy)
    sample = make_sample(policy, version=0)
    policy.version = 3
    result = trainer.step(sample.to_numpy())  # actors may send numpy
    assert isinstance(result, TrainerStepResult) and result.step == 1
    assert policy.version == 4 and changed(before, policy)
    assert result.priorities is None and finite(result.stats)
    for key in ("policy", "value", "entropy", "approx_kl", "clip_fraction", "explained_variance",
                "clip"):
        assert key in result.stats
    assert result.stats["sample_lag"] == 3.0
    mask = ~(sample.done | sample.truncated)[:-1]
    assert result.stats["valid_rows"] == float(mask.sum())
    assert set(policy.shapes[1:]) == {(16,)} | {(int(mask.sum()) % 16,)} - {(0,)}
    assert policy.approximation.updates == 2 * -(-int(mask.sum()) // 16)  # epochs x minibatches


@pytest.mark.parametrize(("type_", "args", "message"), [
    ("ppo", dict(clip=-1), "PPOTrainer's clip must be >= 0, got -1"),
    ("ppo", dict(value_clip="abc"), "PPOTrainer's value_clip must be >= 0"),
    ("ppo", dict(gae_lambda=1.5), r"PPOTrainer's gae_lambda must be in \[0, 1\]"),
    ("a2c", dict(discount_factor=2), r"A2CTrainer's discount_factor must be in \[0, 1\]"),
    ("vac", dict(entropy_coef=float("nan")), "VACTrainer's entropy_coef must be finite"),
    ("ppo", dict(vtrace=True, clip_rho=0), "PPOTrainer's clip_rho must be positive"),
    ("ppg", dict(beta_clone=-1), "PPGTrainer's beta_clone must be >= 0"),
    ("ppg", dict(n_policy=0.5), "PPGTrainer's n_policy must be a whole number"),
])
def test_trainers_by_name_check_their_arguments_ranges(type_, args, message):
    """``Trainer(type_=..., args=...)`` (seed 004) and the classes: one line naming the argument
    (was: ``clip=-1`` and ``discount_factor=2`` trained silently); a schedule and an infinite clip
    (PPO without clipping) are taken."""
    with pytest.raises(ValueError, match=message):
        Trainer(type_=type_, policy=RecordingPolicy(), args=args)
    for clip in (lambda p: 0.2 * (1 - p), float("inf")):  # (infinity: not clipped)
        assert Trainer(type_="ppo", policy=RecordingPolicy(), args=dict(clip=clip))
    assert Trainer(type_="ppo", policy=RecordingPolicy(),
                   args=dict(vtrace=True, clip_rho=float("inf"), clip_c=float("inf")))


def test_policies_by_name_check_their_arguments_ranges():
    """The ready-made policies' optimizer and exploration arguments."""
    for name, args, message in [
            ("actor-critic", dict(lr=-1), "the actor-critic policy's lr must be >= 0"),
            ("actor-critic", dict(eps=0), "the actor-critic policy's eps must be at least"),
            ("q-network", dict(epsilon=3), r"the q-network policy's epsilon must be in \[0, 1\]"),
            ("q-network", dict(clip_grad=-1), "the q-network policy's clip_grad must be >= 0")]:
        with pytest.raises(ValueError, match=message):
            Policy(type_=name, args=dict(obs_dim=4, action_dim=2, **args))
    with pytest.raises(ValueError, match="DQNTrainer's discount_factor must be in"):
        Trainer(type_="dqn", policy=Policy(type_="q-network", args=dict(obs_dim=4, action_dim=2)),
                args=dict(discount_factor=-0.5))
    # (was: AttributeError: 'ActorCriticPolicy' object has no attribute 'q', at its first step)
    with pytest.raises(TypeError, match=r"^DQNTrainer trains a Q-network policy \(a DQNPolicy: "
                                        r"Policy\(type_='q-network', args=...\)\), got a "
                                        "ActorCriticPolicy$"):
        Trainer(type_="dqn", policy=Policy(type_="actor-critic-separate",
                                           args=dict(obs_dim=4, action_dim=2)))


@pytest.mark.parametrize("minibatch_size", [None, 16, 20])
def test_ppo_logs_the_entropy_it_leaves_out_of_the_analysis(minibatch_size):
    """At ``entropy_coef=0`` the minibatches are analyzed without the entropy; the logged
    entropy (from the logits, after the update) and the training are those of an analysis
    with it (minibatches of one size, and of two: the last is smaller)."""
    class WithEntropy(PPOTrainer):
        def _weighs_entropy(self) -> bool:
            return True

    runs = []
    for trainer_type in (PPOTrainer, WithEntropy):
        policy = RecordingPolicy()
        trainer = trainer_type(policy, epochs=3, minibatch_size=minibatch_size,
                               entropy_coef=0.0, seed=0)
        stats = [trainer.step(make_sample(policy, seed=i)).stats for i in range(2)]
        runs.append((stats, parameters(policy)))
    (lean, lean_params), (full, full_params) = runs
    for a, b in zip(lean, full):
        assert a.keys() == b.keys() and a["entropy"] > 0
        assert a == pytest.approx(b, rel=1e-6)
    assert all(torch.equal(a, b) for a, b in zip(lean_params, full_params))


def test_ppo_clip_and_lr_schedules_anneal_with_progress():
    from looprl.approximation import anneal as linear

    policy = RecordingPolicy()
    trainer = PPOTrainer(policy, epochs=1, minibatch_size=None, clip=linear(0.2),
                         lr=linear(1e-2), total_updates=4)
    clips = [trainer.step(make_sample(policy, seed=i)).stats["clip"] for i in range(3)]
    assert clips == pytest.approx([0.2, 0.15, 0.1])
    assert trainer.progress == 0.75
    assert policy.approximation.optimizer.param_groups[0]["lr"] == pytest.approx(2.5e-3)
    trainer.hyperparameters()["hp/lr/approximation"].set(1e-3)  # the trainer's key: no schedule
    trainer.step(make_sample(policy, seed=3))
    assert policy.approximation.optimizer.param_groups[0]["lr"] == 1e-3


def test_the_lr_schedule_sets_every_optimizer_step_until_hp_lr_is_set():
    """Optimizer step ``j`` of update ``u`` (of ``S`` planned) runs at ``lr((u + j / S) / U)``
    and the update leaves ``lr((u + 1) / U)``, though a minibatch without valid rows takes no
    step; the schedule is the approximation's ``lr_scheduler``, dropped by ``hp/lr/<name>``."""
    from looprl.approximation import ProgressLR
    from looprl.approximation import anneal as linear

    policy = RecurrentPolicy()
    sample = make_sample(policy, rows=3, streams=2, seed=1)
    sample.done[:] = False
    sample.truncated[:] = False
    sample.done[:2, 0] = True  # stream 0 has no training row: its minibatches are skipped
    sample.policy_state = policy.states(sample.obs.obs, sample.done, sample.truncated)
    schedule = linear(1e-2)
    trainer = PPOTrainer(policy, epochs=2, minibatch_size=2, lr=schedule, total_updates=4)
    assert isinstance(policy.approximation.lr_scheduler, ProgressLR)
    optimizer = policy.approximation.optimizer
    seen, left = [], []
    step = policy.approximation.step
    policy.approximation.step = lambda loss=None: (
        seen.append(optimizer.param_groups[0]["lr"]), step(loss))[1]
    for _ in range(2):
        trainer.step(sample)
        left.append(optimizer.param_groups[0]["lr"])
    planned, taken = 4, 2  # 2 epochs x 2 streams, one stream each; stream 0's skipped
    assert seen == [schedule((u + j / planned) / 4) for u in range(2) for j in range(taken)]
    assert left == [schedule(1 / 4), schedule(2 / 4)]
    policy.approximation.hyperparameters()["hp/lr/approximation"].set(0.125)
    trainer.step(sample)
    assert policy.approximation.lr_scheduler is None
    assert seen[-taken:] == [0.125] * taken and optimizer.param_groups[0]["lr"] == 0.125


def test_ppo_clip_keeps_the_ratio_in_range():
    """With a tiny clip, a second epoch cannot move the policy much further than one: break
    the clip (clip=inf) and the ratio leaves the range."""
    def kl_after(clip: float) -> float:
        policy = RecordingPolicy(seed=2, lr=0.5)
        trainer = PPOTrainer(policy, epochs=8, minibatch_size=None, clip=clip, entropy_coef=0.0)
        sample = make_sample(policy, seed=3)
        trainer.step(sample)
        with torch.no_grad():
            analysis = policy.analyze(NamedArray(obs=sample.obs, action=sample.action))
        return float((sample.log_prob - analysis.log_prob).abs().max())

    assert kl_after(0.01) < kl_after(float("inf"))


@pytest.mark.parametrize("minibatch_size", [None, 16])
def test_ppo_clip_bounds_are_made_once_per_batch_and_always_of_the_minibatch(
        monkeypatch, minibatch_size):
    """One minibatch holding the batch: its clip bounds are made once per update (the clip
    changes between updates); several: once per minibatch. Every loss gets the bounds of its
    own advantages and clip."""
    from looprl.agents import ppo
    from looprl.agents.losses import ppo_clip_bounds
    from looprl.approximation import anneal as linear

    made, checked = [], []

    def counted(advantage, clip):
        made.append(clip)
        return ppo_clip_bounds(advantage, clip)

    def checking(*args, bounds, **kwargs):
        for got, want in zip(bounds, ppo_clip_bounds(args[2], args[6])):
            assert torch.equal(got, want)
        checked.append(args[6])
        return loss(*args, bounds=bounds, **kwargs)

    loss = ppo.ppo_loss
    monkeypatch.setattr(ppo, "ppo_clip_bounds", counted)
    monkeypatch.setattr(ppo, "ppo_loss", checking)
    policy = RecordingPolicy()
    trainer = PPOTrainer(policy, epochs=3, minibatch_size=minibatch_size, clip=linear(0.2),
                         total_updates=4)
    for i in range(2):
        trainer.step(make_sample(policy, seed=i))
    assert len(checked) == policy.approximation.updates
    if minibatch_size is None:
        assert checked == pytest.approx([0.2] * 3 + [0.15] * 3)
        assert made == pytest.approx([0.2, 0.15])
    else:
        assert len(checked) > 6 and made == checked


def test_ppo_vtrace_on_policy_with_lambda_1_equals_gae():
    """On-policy, lambda 1: V-trace's pg advantages and targets are GAE(1)'s."""
    gae_policy, vtrace_policy = RecordingPolicy(seed=3), RecordingPolicy(seed=3)
    sample = make_sample(gae_policy, seed=4)
    hp = dict(epochs=2, minibatch_size=20, gae_lambda=1.0, discount_factor=0.9, seed=0)
    PPOTrainer(gae_policy, **hp).step(sample)
    stale = sample.clone()
    stale.value = None  # V-trace reads the current values
    PPOTrainer(vtrace_policy, vtrace=True, **hp).step(stale)
    for a, b in zip(gae_policy.module.parameters(), vtrace_policy.module.parameters()):
        torch.testing.assert_close(a, b)
    # off-policy samples change the targets (ratios below 1 cut the traces)
    off_policy = RecordingPolicy(seed=3)
    sample.log_prob = sample.log_prob + 0.5
    PPOTrainer(off_policy, vtrace=True, **hp).step(sample)
    assert changed(parameters(vtrace_policy), off_policy)


@pytest.mark.parametrize("vtrace", [False, True])
def test_ppo_recurrent_minibatches_are_whole_streams(vtrace):
    policy = RecurrentPolicy()
    sample = make_sample(policy, rows=9, streams=6, seed=5)
    # 16 // 8 = 2 streams per minibatch
    trainer = PPOTrainer(policy, epochs=2, minibatch_size=16, vtrace=vtrace, seed=0)
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
    trainer = PPOTrainer(policy, epochs=1, minibatch_size=2, seed=0)  # one stream each
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
    policy = RecordingPolicy()
    trainer = PPOTrainer(policy)
    sample = make_sample(policy)
    sample.value = None
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['value'\]"):
        trainer.step(sample)
    with pytest.raises(TypeError, match="PPOTrainer.step takes a SampleBatch"):
        trainer.step({"obs": 1})
    finished = make_sample(policy)
    finished.done[:] = True
    result = trainer.step(finished)
    assert result.step == 0 and policy.version == 0


# -- A2C and VAC -----------------------------------------------------------------------------


def test_a2c_takes_one_step_on_n_step_advantages():
    policy = RecordingPolicy()
    trainer = A2CTrainer(policy, discount_factor=0.9)
    assert trainer.gae_lambda == 1.0
    sample = make_sample(policy, seed=6)
    result = trainer.step(sample)
    assert policy.approximation.updates == 1 and result.step == 1 and policy.version == 1
    assert {"policy", "value", "entropy"} <= set(result.stats)
    # the value part is the squared error to the n-step returns: GAE(1) + V
    _, returns, mask = segment_gae(sample.reward, sample.value, sample.done, sample.truncated,
                                   0.9, 1.0)
    expected = float(((sample.value[:-1] - returns)[mask] ** 2).mean())
    assert result.stats["value"] == pytest.approx(expected, rel=1e-5)


def test_vac_advantage_uses_the_current_critic():
    """VAC's actor follows ``r + gamma V(s') - V_now(s)``: with stored values far off, VAC
    and A2C(lambda=0) move the actor differently; with stored values equal to the current
    ones they agree."""
    sample = make_sample(RecordingPolicy(seed=7), rows=2, streams=32, seed=8)
    results = {}
    for stale in (False, True):
        for name, cls in (("vac", VACTrainer), ("a2c", A2CTrainer)):
            policy = RecordingPolicy(seed=7)
            batch = sample.clone()
            if stale:
                batch.value = batch.value + 5.0
            cls(policy, gae_lambda=0.0, value_coef=0.0).step(batch)
            results[name, stale] = parameters(policy)
    same = all(torch.allclose(a, b) for a, b in zip(results["vac", False], results["a2c", False]))
    differ = any(not torch.allclose(a, b)
                 for a, b in zip(results["vac", True], results["a2c", True]))
    assert same and differ


# -- PPG -------------------------------------------------------------------------------------


def distillation_error(policy, samples) -> float:
    """``0.5 * mean((V_aux(s) - R)^2)`` over the training rows of ``samples`` (GAE targets)."""
    errors = []
    for sample in samples:
        _, returns, mask = segment_gae(
            sample.reward, sample.value, sample.done, sample.truncated, 0.99, 0.95
        )
        with torch.no_grad():
            aux = policy.module(sample.obs.obs[:-1])[2]
        errors.append((aux - returns)[mask])
    return float(0.5 * (torch.cat(errors) ** 2).mean())


def test_ppg_auxiliary_phase_every_n_policy_steps():
    policy = RecordingPolicy(aux=True)
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
    # the auxiliary phase starts from about these errors (the second policy phase moves the
    # trunk the auxiliary head shares a little)
    expected = distillation_error(policy, samples)
    only_second = distillation_error(policy, samples[1:])
    second = trainer.step(samples[1])
    assert trainer.aux_phases == 1 and policy.version == 3 and second.step == 2
    # one auxiliary minibatch over both samples' rows, at the start of the phase
    assert second.stats["aux/aux_value"] == pytest.approx(expected, rel=2e-3)
    assert second.stats["aux/aux_value"] != pytest.approx(only_second, rel=2e-3)
    assert second.stats["aux/kl"] == pytest.approx(0.0, abs=1e-6)  # no drift yet (exact KL)
    assert finite(second.stats)
    assert distillation_error(policy, samples) < expected  # it distilled
    assert trainer._memory == []


def test_ppg_with_a_recurrent_policy_uses_whole_streams():
    policy = RecurrentPolicy(aux=True)
    trainer = PPGTrainer(
        policy, n_policy=1, aux_epochs=2, epochs=1, minibatch_size=16, aux_minibatch_size=24, seed=0
    )
    sample = make_sample(policy, rows=9, streams=6, seed=3)
    policy.shapes.clear()
    result = trainer.step(sample)
    # the check of the aux head (one stream), 3 policy minibatches of 2 streams, 2 chunks of
    # 3 streams for the old policy, then 2 epochs x 2 auxiliary minibatches of 3 streams
    assert policy.shapes == [(8, 1)] + [(8, 2)] * 3 + [(8, 3)] * 6
    assert trainer.aux_phases == 1 and policy.version == 2 and finite(result.stats)


def test_ppg_needs_an_auxiliary_head():
    policy = RecordingPolicy(aux=False)
    trainer = PPGTrainer(policy)
    with pytest.raises(ValueError, match="auxiliary value head"):
        trainer.step(make_sample(policy))
    assert policy.version == 0
