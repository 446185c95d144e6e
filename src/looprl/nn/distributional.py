"""Categorical (distributional) Q heads (Bellemare et al., 2017, https://arxiv.org/abs/1707.06887).

The heads map features to per-action probabilities over ``num_atoms`` fixed atoms, shape
``(batch, num_actions, num_atoms)``; every ``[b, a, :]`` sums to one.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["CategoricalDueling", "CategoricalQHead"]


class CategoricalQHead(nn.Module):
    """Softmax over atoms of ``model``'s ``(batch, num_actions * num_atoms)`` logits."""

    def __init__(self, model: nn.Module, num_actions: int, num_atoms: int):
        super().__init__()
        self.model = model
        self.num_actions = num_actions
        self.num_atoms = num_atoms

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.model(x).view(-1, self.num_actions, self.num_atoms)
        return torch.softmax(logits, dim=-1)


class CategoricalDueling(nn.Module):
    """Rainbow's dueling distributional head (Hessel et al., 2018,
    https://arxiv.org/abs/1710.02298): ``logits = v + a - mean_a(a)`` per atom, then a softmax
    per action.

    Args:
        value_model: maps features to ``num_atoms`` value logits.
        advantage_model: maps the same features to ``num_actions * num_atoms`` logits.
    """

    def __init__(
        self, value_model: nn.Module, advantage_model: nn.Module, num_actions: int, num_atoms: int
    ):
        super().__init__()
        self.value_model = value_model
        self.advantage_model = advantage_model
        self.num_actions = num_actions
        self.num_atoms = num_atoms

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        value = self.value_model(features).view(-1, 1, self.num_atoms)
        advantages = self.advantage_model(features).view(-1, self.num_actions, self.num_atoms)
        logits = value + advantages - advantages.mean(dim=1, keepdim=True)
        return torch.softmax(logits, dim=-1)
