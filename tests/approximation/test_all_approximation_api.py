"""``looprl.approximation`` as an ALL user writes against ``all.approximation`` (ALL 0.9.1):
``Identity``, ``QContinuous``, ``QDist`` with flat-logit models and ``project``, the
``scheduler`` argument, and ``Schedulable``/``LinearScheduler``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from looprl import nn
from looprl.approximation import Approximation, Identity, QContinuous, QDist
from looprl.core import State, StateArray
from looprl.optim import LinearScheduler, Schedulable  # (ALL's all.optim)


def _states(n: int = 3, mask: list[float] | None = None) -> StateArray:
    torch.manual_seed(0)
    x = {"observation": torch.randn(n, 4)}
    if mask is not None:
        x["mask"] = torch.tensor(mask)
    return StateArray(x, (n,))


def test_identity_returns_its_input_and_learns_nothing() -> None:
    features = Identity("cpu")
    states = _states()
    assert features(states) is states and features.target(states) is states
    assert features.eval(states) is states and features.no_grad(states) is states
    assert features.reinforce() is features and features.step() is features
    assert features.device == torch.device("cpu") and features.name == "identity"


def test_qdist_softmaxes_alls_flat_logits_per_action() -> None:
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2 * 5))
    q = QDist(model, torch.optim.Adam(model.parameters()), 2, 5, v_min=-2.0, v_max=2.0)
    states = _states(mask=[1.0, 0.0, 1.0])
    probs = q(states)
    expected = torch.softmax(model(states.observation).view(3, 2, 5), dim=2)
    assert probs.shape == (3, 2, 5)
    assert torch.allclose(probs[0], expected[0]) and torch.allclose(probs[2], expected[2])
    assert torch.equal(probs[1], torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0]] * 2))  # terminal
    chosen = q(states, torch.tensor([1, 0, 0]))
    assert torch.allclose(chosen[0], expected[0, 1])
    single = q.no_grad(State(states.observation[0]))
    assert single.shape == (2, 5) and torch.allclose(single, expected[0])
    assert q.n_actions == 2 and torch.equal(q.atoms, torch.linspace(-2.0, 2.0, 5))


def test_qdist_keeps_probability_models_and_takes_alls_keywords() -> None:
    model = nn.CategoricalQHead(nn.Linear(4, 2 * 5), 2, 5)
    q = QDist(model, None, n_actions=2, n_atoms=5, v_min=-1.0, v_max=1.0)
    probs = q.no_grad(_states())
    assert torch.allclose(probs, model(_states().observation))  # used as they are
    wrong = QDist(nn.Linear(4, 7), None, n_actions=2, n_atoms=5)
    with pytest.raises(ValueError, match=r"\(batch, 10\) logits or \(batch, 2, 5\) probabilities"):
        wrong.no_grad(_states())


def test_qdist_project_splits_probability_between_neighbouring_atoms() -> None:
    q = QDist(nn.Linear(4, 2 * 3), None, 2, 3, v_min=-1.0, v_max=1.0)
    dist = torch.tensor([[0.2, 0.3, 0.5], [0.2, 0.3, 0.5]])
    # row 0: support 0.5 + 0.5 * z = [0, 0.5, 1]: 0.2 -> atom 0; 0.3 halves between 0 and 1
    # row 1: support 3 + z, clamped at 1: everything on the last atom
    support = torch.stack([0.5 + 0.5 * q.atoms, 3.0 + q.atoms])
    projected = q.project(dist, support)
    assert torch.allclose(projected, torch.tensor([[0.0, 0.35, 0.65], [0.0, 0.0, 1.0]]))


def test_qcontinuous_reads_observation_and_action() -> None:
    model = nn.Linear(4 + 2, 1)
    q = QContinuous(model, None)
    states = _states(mask=[1.0, 1.0, 0.0])
    actions = torch.randn(3, 2)
    values = q(states, actions)
    expected = model(torch.cat((states.observation, actions), 1)).squeeze(-1)
    assert values.shape == (3,)
    assert torch.allclose(values[:2], expected[:2]) and values[2] == 0


def test_approximation_steps_alls_scheduler() -> None:
    model = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.5**step)
    f = Approximation(model, optimizer, scheduler=scheduler)
    f.reinforce(model(torch.ones(1, 2)).sum())
    assert optimizer.param_groups[0]["lr"] == 0.5
    with pytest.raises(ValueError, match="both scheduler and lr_scheduler"):
        Approximation(model, optimizer, scheduler=scheduler, lr_scheduler=scheduler)


def test_a_scheduler_without_step_is_one_line_when_made() -> None:
    """(was: "'int' object is not callable" after the first optimizer step, for an
    ``all.optim.LinearScheduler``, or a missing ``self`` for a scheduler class)"""
    model = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    for scheduler in (LinearScheduler(1.0, 0.1, 0, 10), torch.optim.lr_scheduler.StepLR):
        for keyword in ("scheduler", "lr_scheduler"):
            with pytest.raises(TypeError, match="scheduler is a learning-rate scheduler"):
                Approximation(model, optimizer, **{keyword: scheduler})


class _Explorer(Schedulable):
    def __init__(self) -> None:
        self.epsilon = LinearScheduler(1.0, 0.0, 1, 3)
        self.gamma = 0.9


def test_schedulable_reads_schedules_as_values_like_alls() -> None:
    explorer = _Explorer()
    # ALL's LinearScheduler: initial up to decay_start, linear to decay_end, then final
    assert [explorer.epsilon for _ in range(5)] == [1.0, 1.0, 0.5, 0.0, 0.0]
    assert explorer.gamma == 0.9


def test_q_of_actions_stored_as_one_element_tensors_and_a_wrong_count() -> None:
    """ALL gathers ``actions.view(-1, 1)``: ``(B, 1)`` actions (a replay of
    ``torch.multinomial(probs, 1)`` actions) pick one value per state; looprl raised
    ``gather``'s 'Index tensor must have the same number of dimensions'. Two actions for three
    states silently gave two values; now one line."""
    from looprl.agents.dqn import QModel
    from looprl.approximation import QNetwork
    from looprl.memory import ExperienceReplayBuffer

    torch.manual_seed(0)
    q = QNetwork(nn.Linear(4, 2))
    states = _states()
    flat = q.no_grad(states, torch.tensor([0, 1, 1]))
    assert torch.equal(q.no_grad(states, torch.tensor([[0], [1], [1]])), flat)
    replay = ExperienceReplayBuffer(10)
    for _ in range(4):
        replay.store(State(torch.randn(4)), torch.multinomial(torch.ones(2), 1),
                     State(torch.randn(4)))
    sampled, actions, _, _, _ = replay.sample(3)
    assert actions.shape == (3, 1) and q.no_grad(sampled, actions).shape == (3,)
    with pytest.raises(ValueError, match="2 actions .* of \\(3,\\) states"):
        q.no_grad(states, torch.tensor([0, 1]))
    dist = QDist(nn.Linear(4, 2 * 5), None, 2, 5, -1.0, 1.0)
    assert torch.equal(dist.no_grad(states, torch.tensor([[0], [1], [1]])),
                       dist.no_grad(states, torch.tensor([0, 1, 1])))
    with pytest.raises(ValueError, match="give one action per state"):
        dist.no_grad(states, torch.tensor([0, 1]))

    # an action outside the range (was torch's "index 5 is out of bounds for dimension 1 with
    # size 2"): checked where gather fails, or before a list reaches the device; a fractional or
    # NaN one (was cut to a whole one by long(), or torch's words): checked before the device
    rule = r"^q\(states, actions\): the approximation has 2 actions, so actions must be whole " \
        r"numbers 0 \.\. 1, got "
    for approximation in (q, dist, QModel(4, 2)):
        for actions in (torch.tensor([0, 5, 1]), [0, 5, 1], torch.tensor([[0], [5], [1]])):
            with pytest.raises(ValueError, match=rule + "5$"):
                approximation(states, actions)
        with pytest.raises(ValueError, match=rule + "-1$"):
            approximation(states, torch.tensor([0, -1, 1]))
        for actions, shown in (([0, 1.5, 1], "1.5"), (np.array([0.0, np.nan, 1.0]), "nan"),
                               (torch.tensor([[0.0], [1.0], [0.25]]), "0.25"),
                               (torch.tensor([0.0, float("inf"), 1.0]), "inf")):
            with pytest.raises(ValueError, match=rule + shown + "$"):
                approximation(states, actions)
        whole = torch.tensor([0.0, 1.0, 1.0])  # (whole floats: the values of 0, 1, 1)
        assert torch.equal(approximation(states, whole), approximation(states, [0, 1, 1]))
