"""The DQN family computes action values one way: its Q approximation called on the observations
(``q(obs)``, ``no_grad``, ``eval``, ``target``; no ``StateArray`` made) when acting, analyzing
and training, whatever the approximation (a ``QNetwork`` or a subclass, a ``QModel``, a
``QDist``), so a hook on the module runs, and DDP averages the gradient pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from looprl.agents.c51 import C51Policy, C51Trainer
from looprl.agents.dqn import UPDATES, DQNPolicy, DQNTrainer, q_network_policy
from looprl.approximation import FixedTarget, QDist, QNetwork
from looprl.approximation import approximation as approximation_module
from looprl.core import RolloutRequest, SampleBatch
from looprl.core.namedarray import NamedArray
from looprl.policies import epsilon_greedy


class RecordingQ(QNetwork):
    """A ``QNetwork`` subclass noting what each forward pass (``__call__``, ``no_grad``, ``eval``,
    ``target``) is called on: ``("call", type)`` and so on."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.inputs: list[tuple[str, type]] = []


def _recorded(name: str):
    def method(self, *inputs):
        self.inputs.append((name.strip("_"), type(inputs[0])))
        return getattr(super(RecordingQ, self), name)(*inputs)

    return method


for _name in ("__call__", "no_grad", "eval", "target"):
    setattr(RecordingQ, _name, _recorded(_name))


def _policy(epsilon: float = 0.5, kind: type = QNetwork) -> DQNPolicy:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    q = kind(model, torch.optim.Adam(model.parameters(), lr=1e-2), clip_grad=1.0,
             target=FixedTarget(3))
    return DQNPolicy(q, 3, epsilon=epsilon)


def _c51_policy() -> C51Policy:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3 * 5))
    dist = QDist(model, torch.optim.Adam(model.parameters(), lr=1e-2), num_actions=3,
                 num_atoms=5, v_min=-2.0, v_max=2.0, target=FixedTarget(3))
    return C51Policy(dist, 3, epsilon=0.5)


def _batch(seed: int, rows: int = 2, fields: bool = False) -> SampleBatch:
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(rows, 8, 4, generator=g)
    return SampleBatch(obs=NamedArray(obs=obs) if fields else obs,
                       action=torch.randint(0, 3, (rows, 8), generator=g),
                       reward=torch.randn(rows, 8, generator=g),
                       done=torch.rand(rows, 8, generator=g) < 0.2,
                       truncated=torch.zeros(rows, 8, dtype=torch.bool))


def _no_states(monkeypatch: pytest.MonkeyPatch, policy: DQNPolicy) -> None:
    monkeypatch.setattr(policy, "states", lambda *args: pytest.fail("made a StateArray"))


@pytest.mark.parametrize("update", list(UPDATES))
def test_every_rule_trains_on_the_observations(monkeypatch: pytest.MonkeyPatch,
                                               update: str) -> None:
    """Acting, evaluating, analyzing and a trainer step of every bootstrap rule, on n-step
    windows too, call a ``QNetwork`` subclass on observation tensors only."""
    policy = _policy(kind=RecordingQ)
    _no_states(monkeypatch, policy)
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    policy.rollout(RolloutRequest(obs=obs))
    policy.rollout(RolloutRequest(obs=obs, is_evaluation=True))
    assert policy.analyze(_batch(1)).shape == (2, 8, 3)
    DQNTrainer(policy, update=update).step(_batch(0))
    DQNTrainer(policy, update=update, n_step=2).step(_batch(2, rows=3, fields=True))
    kinds = {kind for kind, _ in policy.q.inputs}
    assert {"no_grad", "eval", "call", "target"} <= kinds
    assert {cls for _, cls in policy.q.inputs} == {torch.Tensor}


def test_c51_acts_analyzes_and_trains_on_the_observations(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """C51: the same one path; ``analyze`` of ``[T, B]`` rows equals that of each row."""
    for double in (False, True):
        policy = _c51_policy()
        _no_states(monkeypatch, policy)
        policy.rollout(RolloutRequest(obs=np.zeros((5, 4), np.float32)))
        C51Trainer(policy, n_step=2, double=double).step(_batch(0, rows=3))
        batch = _batch(1)
        probs = policy.analyze(batch)
        assert probs.shape == (2, 8, 3, 5) and probs.requires_grad
        for t in range(2):
            row = policy.analyze(NamedArray(obs=batch.obs[t]))
            assert torch.equal(probs[t], row)


def test_analyze_hands_the_model_rows() -> None:
    """``analyze`` of ``[T, B, ...]`` observations calls the network on rows ``[T * B, ...]``
    (as batch-first networks, CNNs among them, take them) and shapes its output back."""
    shapes = []
    for policy in (_policy(), _c51_policy()):
        policy.q.model.model.register_forward_pre_hook(
            lambda module, args: shapes.append(tuple(args[0].shape)))
        assert policy.analyze(_batch(0, rows=3)).shape[:3] == (3, 8, 3)
    assert shapes == [(24, 4)] * 2


def test_a_hook_on_the_q_module_runs() -> None:
    policy = _policy()
    calls = []
    policy.q.model.register_forward_hook(lambda module, args, out: calls.append(len(out)))
    policy.rollout(RolloutRequest(obs=np.zeros((5, 4), np.float32)))
    assert calls == [5]
    DQNTrainer(policy).step(_batch(0))
    assert calls == [5, 8]  # the online network's pass (the target is another module)


def test_one_field_observations_act_as_their_tensor() -> None:
    """A ``NamedArray`` of one field (what Ray environments send) acts as its tensor does."""
    policy = _policy()
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    torch.manual_seed(1)
    expected = policy.rollout(RolloutRequest(obs=obs)).action
    torch.manual_seed(1)
    assert torch.equal(policy.rollout(RolloutRequest(obs=NamedArray(obs=obs))).action, expected)


def test_a_q_model_reads_its_observation_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    """``q-network``'s ``QModel`` gets the fields themselves (the action mask among them)."""
    policy = q_network_policy({"obs": 4, "extra": 2}, 3, hidden_dim=8, epsilon=0.0, seed=0)
    _no_states(monkeypatch, policy)
    obs = NamedArray(obs=torch.randn(6, 4), extra=torch.randn(6, 2),
                     action_mask=torch.tensor([[0.0, 0.0, 1.0]] * 6))
    assert policy.rollout(RolloutRequest(obs=obs)).action.tolist() == [2] * 6
    batch = _batch(0)
    batch.obs = NamedArray(obs=batch.obs, extra=torch.zeros(2, 8, 2))
    DQNTrainer(policy, update="double_q").step(batch)


def test_the_gradient_pass_goes_through_ddp(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """A distributed Q approximation (``Approximation.distribute``): each trainer step of DQN
    and C51 makes its one gradient pass through the DDP wrapper; acting does not."""
    import torch.distributed as dist

    passes = []

    class Recording(nn.Module):
        def __init__(self, inner: nn.Module):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            passes.append(type(inputs[0]))
            return self.inner(*inputs)

    wrap = approximation_module.data_parallel
    monkeypatch.setattr(approximation_module, "data_parallel",
                        lambda model, *args: Recording(wrap(model, *args)))
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'group'}", rank=0,
                            world_size=1)  # a group of one: DDP's collectives run, trivially
    try:
        for policy, trainer in ((p := _policy(), DQNTrainer(p, double_q=True)),
                                (c := _c51_policy(), C51Trainer(c, double=True))):
            policy.approximation.distribute()
            policy.rollout(RolloutRequest(obs=np.zeros((5, 4), np.float32)))
            trainer.step(_batch(0))
            trainer.step(_batch(1))
    finally:
        dist.destroy_process_group()
    assert passes == [torch.Tensor] * 4


@pytest.mark.parametrize("epsilon", [0.0, 0.04, 0.3, 0.7, 1.0])
def test_coins_are_torchs_float32_comparison(epsilon: float) -> None:
    torch.manual_seed(3)
    _, explore = epsilon_greedy(torch.zeros(1000, 3), epsilon)
    torch.manual_seed(3)
    assert torch.equal(explore, torch.rand(1000) < epsilon)


def test_a_coin_at_float32_epsilon_does_not_explore(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch compares float32 coins with a float rate in float32: a coin equal to
    float32(0.7) (below 0.7) does not explore."""
    coin = float(np.float32(0.7))
    assert coin < 0.7 and not bool((torch.tensor([coin]) < 0.7).item())
    monkeypatch.setattr(torch, "rand", lambda shape, generator=None: torch.full(shape, coin))
    actions, explore = epsilon_greedy(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), 0.7)
    assert explore.tolist() == [False, False] and actions.tolist() == [1, 0]


def test_checkpoints_naming_the_rule_where_it_was_still_load() -> None:
    """A run checkpoint pickles the trainer's target rule by name; those made before the
    rules moved to ``looprl.agents.q_targets`` name ``looprl.agents.dqn._max``."""
    import pickle

    from looprl.agents import q_targets

    old = b"\x80\x04\x8c\x11looprl.agents.dqn\x94\x8c\x04_max\x94\x93\x94."  # (protocol 4)
    assert pickle.loads(old) is q_targets.UPDATES["q_learning"]
