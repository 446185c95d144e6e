"""One masking rule (``legal_mask``) behind every path that reads an ``action_mask``: illegal
actions valued ``MASKED_Q``, and a row that rules out every action (a finished agent) all legal,
never all ``MASKED_Q`` (an impossible choice)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from torch import nn

from looprl.agents.actor_critic import actor_critic_policy
from looprl.agents.dqn import QModel
from looprl.agents.independent import MaskedModule, masked_observation
from looprl.core import StateArray
from looprl.core.namedarray import NamedArray
from looprl.nn.fields import legal_mask
from looprl.policies import MASKED_Q, GreedyPolicy, legal_actions

MASK = np.array([[1, 0, 1], [0, 0, 0]], np.float32)  # row 1 rules out every action
LEGAL = [[True, False, True], [True, True, True]]
OBS = torch.randn(2, 4, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("mask", [MASK, torch.tensor(MASK), torch.tensor(MASK).bool()])
def test_legal_mask_takes_an_all_masked_row_as_all_legal(mask) -> None:
    assert legal_mask(mask).tolist() == LEGAL
    assert legal_actions({"action_mask": mask}).tolist() == LEGAL


def _q_model() -> tuple[torch.Tensor, torch.Tensor]:
    model = QModel(4, 3)
    return model(NamedArray(obs=OBS, action_mask=MASK)), model(OBS)


def _actor_critic() -> tuple[torch.Tensor, torch.Tensor]:
    network = actor_critic_policy(4, 3, seed=0).module
    with torch.no_grad():
        return network(NamedArray(obs=OBS, action_mask=MASK))[0], network(OBS)[0]


def _masked_module() -> tuple[torch.Tensor, torch.Tensor]:
    linear, x = nn.Linear(4 + 3, 3), masked_observation(OBS, MASK)
    return MaskedModule(linear, 3)(x), linear(x)


@pytest.mark.parametrize("path", [_q_model, _actor_critic, _masked_module])
def test_an_all_masked_row_gives_the_same_answer_on_every_path(
        path: Callable[[], tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Each network path's masked output is its unmasked one with ``MASKED_Q`` on the illegal
    actions: the all-masked row as it is."""
    masked, plain = path()
    assert torch.equal(masked, plain.masked_fill(~torch.tensor(LEGAL), MASKED_Q))
    assert (masked[1] > MASKED_Q).all()


def test_greedy_acts_on_an_all_masked_row_as_on_an_unmasked_one() -> None:
    values = torch.tensor([[0.0, 5.0, 1.0], [0.0, 1.0, 5.0]])  # all-illegal rows would take 0

    class Q:
        def no_grad(self, state):
            return values

    state = StateArray({"observation": OBS, "action_mask": torch.tensor(MASK)}, (2,))
    assert GreedyPolicy(Q(), 3).no_grad(state).tolist() == [2, 2]
