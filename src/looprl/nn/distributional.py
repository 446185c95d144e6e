"""Categorical (distributional) Q heads (Bellemare et al., 2017), as ``QDist`` takes them."""

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
    """Rainbow's dueling head (``all.nn.CategoricalDueling``): ``v + a - mean_a(a)`` per atom of
    the models' logits, returned flat ``(batch, num_actions * num_atoms)``."""

    def __init__(self, value_model: nn.Module, advantage_model: nn.Module):
        super().__init__()
        self.value_model = value_model
        self.advantage_model = advantage_model

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        value = self.value_model(features)
        batch, atoms = value.shape[0], value.shape[-1]
        advantages = self.advantage_model(features).view(batch, -1, atoms)
        logits = value.view(batch, 1, atoms) + advantages - advantages.mean(dim=1, keepdim=True)
        return logits.view(batch, -1)
