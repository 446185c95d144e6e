"""DQN's acting and training call a ``QNetwork``'s network straight on the observations
(``QNetwork.network``, the ``QModule`` called on them): the same numbers and random draws as
through a ``StateArray``, and a hook registered on the ``QModule`` runs on that call too."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from looprl.agents.dqn import UPDATES, DQNPolicy, DQNTrainer
from looprl.approximation import FixedTarget, QNetwork
from looprl.core import RolloutRequest, SampleBatch
from looprl.core.namedarray import NamedArray
from looprl.policies import epsilon_greedy


def _policy(epsilon: float = 0.5) -> DQNPolicy:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    q = QNetwork(model, torch.optim.Adam(model.parameters(), lr=1e-2), clip_grad=1.0,
                 target=FixedTarget(3))
    return DQNPolicy(q, 3, epsilon=epsilon)


def _batch(seed: int) -> SampleBatch:
    g = torch.Generator().manual_seed(seed)
    return SampleBatch(obs=torch.randn(2, 8, 4, generator=g),
                       action=torch.randint(0, 3, (2, 8), generator=g),
                       reward=torch.randn(2, 8, generator=g),
                       done=torch.rand(2, 8, generator=g) < 0.2,
                       truncated=torch.zeros(2, 8, dtype=torch.bool))


def _run(policy: DQNPolicy, update: str = "q_learning") -> tuple[list, list, list]:
    """Actions of 20 rollouts, the parameters after 5 trainer steps (bootstrapping with
    ``update``) and the action values acting reads then, seeded."""
    torch.manual_seed(1)
    obs = np.random.default_rng(0).normal(size=(20, 5, 4)).astype(np.float32)
    actions = [policy.rollout(RolloutRequest(obs=o)).action.tolist() for o in obs]
    trainer = DQNTrainer(policy, update=update)
    for seed in range(5):
        trainer.step(_batch(seed))
    values = [policy._values(torch.from_numpy(o), 5, False) for o in obs]
    return actions, [p.detach().clone() for p in policy.q.model.parameters()], values


@pytest.mark.parametrize("update", list(UPDATES))
def test_network_path_equals_the_state_path(monkeypatch: pytest.MonkeyPatch,
                                            update: str) -> None:
    """Every built-in bootstrap rule, read through the networks (``Networks``) or through
    states: the same parameters after training."""
    assert _policy().q.network() is not None and _policy().q.network(target=True) is not None
    fast = _run(_policy(), update)
    monkeypatch.setattr(QNetwork, "network", lambda self, target=False: None)
    slow = _run(_policy(), update)
    assert fast[0] == slow[0]
    for a, b in zip(fast[1] + fast[2], slow[1] + slow[2], strict=True):
        assert torch.equal(a, b)


def test_a_hook_on_the_q_module_still_runs() -> None:
    policy = _policy()
    calls = []
    policy.q.model.register_forward_hook(lambda module, args, out: calls.append(len(out)))
    assert policy.q.network() is policy.q.model
    policy.rollout(RolloutRequest(obs=np.zeros((5, 4), np.float32)))
    assert calls == [5]
    DQNTrainer(policy).step(_batch(0))
    assert calls == [5, 8]  # the online network's pass (the target is another module)
    policy.q._target._target.register_forward_hook(lambda m, a, out: calls.append(-len(out)))
    assert policy.q.network(target=True) is policy.q._target._target
    DQNTrainer(policy).step(_batch(0))
    assert calls == [5, 8, 8, -8]


def test_one_field_observations_act_through_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``NamedArray`` of one field (what Ray environments send) acts as its tensor does: the
    same actions, from the network, no ``StateArray`` made."""
    policy = _policy()
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    torch.manual_seed(1)
    expected = policy.rollout(RolloutRequest(obs=obs)).action
    monkeypatch.setattr(policy, "states", lambda *args: pytest.fail("made a StateArray"))
    torch.manual_seed(1)
    assert torch.equal(policy.rollout(RolloutRequest(obs=NamedArray(obs=obs))).action, expected)


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
