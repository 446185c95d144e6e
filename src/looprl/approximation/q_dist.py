"""``QDist``: return distributions over fixed atoms (C51). The model returns flat logits
``(batch, num_actions * num_atoms)`` (ALL's; softmaxed per action) or probabilities ``(batch,
num_actions, num_atoms)``; ``q(state)`` gives ``(*state.shape, num_actions, num_atoms)``,
``q(state, actions)`` ``(*state.shape, num_atoms)``, a point mass nearest to 0 where terminated."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation
from looprl.approximation.q_network import gather_actions
from looprl.core.state import State
from looprl.core.suggest import either

__all__ = ["ExpectedQ", "QDist", "QDistModule", "check_support", "project_distribution"]


class QDistModule(nn.Module):
    """Maps a ``State``/``StateArray`` or observations (and actions) to ``atoms``' probabilities."""

    def __init__(self, model: nn.Module, atoms: torch.Tensor, num_actions: int):
        super().__init__()
        self.model = model
        self.num_actions = num_actions
        self.register_buffer("atoms", atoms)
        terminal = torch.zeros_like(atoms)
        terminal[atoms.abs().argmin()] = 1.0
        self.register_buffer("terminal", terminal)

    def probabilities(self, observation: torch.Tensor) -> torch.Tensor:
        """``(rows, num_actions, num_atoms)`` probabilities of observations."""
        output = self.model(observation)
        actions, atoms = self.num_actions, self.atoms.shape[0]
        if output.dim() >= 2 and tuple(output.shape[-2:]) == (actions, atoms) and (
                actions > 1 or output.dim() >= 3):
            return output.reshape(-1, actions, atoms)
        if output.shape[-1] == actions * atoms:
            return torch.softmax(output.reshape(-1, actions, atoms), dim=-1)
        raise ValueError(
            f"QDist's model returned shape {tuple(output.shape)}; it must return (batch, "
            f"n_actions * n_atoms) = (batch, {actions * atoms}) logits or (batch, {actions}, "
            f"{atoms}) probabilities: check n_actions and n_atoms against the model")

    def forward(self, state: Any, actions: Any = None) -> torch.Tensor:
        if isinstance(state, State):
            probs = self.probabilities(state.as_input("observation"))
            probs = probs.view(*state.shape, *probs.shape[-2:])
            mask = torch.as_tensor(state.mask, dtype=probs.dtype, device=probs.device)
            mask = mask.view(*mask.shape, 1, 1)
            probs = mask * probs + (1 - mask) * self.terminal
        else:
            probs = self.probabilities(state)
        return probs if actions is None else gather_actions(probs, actions, atoms=True)


class QDist(Approximation):
    """Distributional action values; ``n_actions``/``n_atoms``: ALL's ``num_actions``/``num_atoms``
    (``None``: 2, 51)."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 num_actions: int | None = None, num_atoms: int | None = None,
                 v_min: float = -10.0, v_max: float = 10.0, name: str = "q_dist", *,
                 n_actions: int | None = None,
                 n_atoms: int | None = None, **kwargs: Any):
        num_actions = either("num_actions", num_actions, "n_actions", n_actions, 2)
        num_atoms = either("num_atoms", num_atoms, "n_atoms", n_atoms, 51)
        check_support(v_min, v_max, num_atoms)
        device = next(model.parameters()).device
        atoms = torch.linspace(v_min, v_max, num_atoms, device=device)
        self.num_actions = num_actions
        super().__init__(QDistModule(model, atoms, num_actions), optimizer, name=name, **kwargs)

    @property
    def atoms(self) -> torch.Tensor:
        """The support ``z_1 .. z_N``."""
        return self.model.atoms

    @property
    def n_actions(self) -> int:
        """``num_actions`` (ALL's name)."""
        return self.num_actions

    def project(self, dist: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
        """``project_distribution`` of ``dist`` at ``support`` onto ``atoms``."""
        return project_distribution(dist, support, self.atoms)

    @property
    def expectation(self) -> ExpectedQ:
        """A ``QNetwork``-like view of the expected action values."""
        return ExpectedQ(self)


def check_support(v_min: float, v_max: float, num_atoms: int) -> None:
    """A one-line ``ValueError`` unless ``num_atoms >= 2`` atoms from ``v_min`` to ``v_max`` lie
    apart in float32 (else the projection would index with NaN)."""
    low, high = torch.tensor([v_min, v_max], dtype=torch.float32)
    span = high - low
    if num_atoms < 2 or span.isinf() or not span / (num_atoms - 1) > 0:
        raise ValueError(f"v_min < v_max needed, with {num_atoms} atoms apart in float32 "
                         f"(num_atoms >= 2, a span below 3.4e38), got {v_min} and {v_max}")


def project_distribution(probs: torch.Tensor, support: torch.Tensor,
                         atoms: torch.Tensor) -> torch.Tensor:
    """C51's projection of ``probs`` ``(..., n)`` at ``support`` onto the evenly spaced ``atoms``;
    one landing exactly on an atom goes all to it (ALL's ``project`` loses it)."""
    v_min, v_max = atoms[0], atoms[-1]
    delta = (v_max - v_min) / (atoms.shape[0] - 1)
    b = ((support.clamp(v_min, v_max) - v_min) / delta).clamp(0, atoms.shape[0] - 1)
    lower = b.floor()
    upper = b.ceil()
    lower_weight = torch.where(upper == lower, torch.ones_like(b), upper - b)
    target = probs.new_zeros((*probs.shape[:-1], atoms.shape[0]))
    target.scatter_add_(-1, lower.long(), probs * lower_weight)
    target.scatter_add_(-1, upper.long(), probs * (b - lower))
    return target


class ExpectedQ:
    """Expected values ``sum_i z_i p_i`` of a ``QDist``, with ``QNetwork``'s call methods."""

    def __init__(self, dist: QDist):
        self.dist = dist
        self.device, self.model = dist.device, dist.model

    def _expect(self, probs: torch.Tensor) -> torch.Tensor:
        return (probs * self.dist.atoms).sum(-1)

    def __call__(self, state: Any, actions: Any = None) -> torch.Tensor:
        return self._expect(self.dist(state, actions))

    def no_grad(self, state: Any, actions: Any = None) -> torch.Tensor:
        return self._expect(self.dist.no_grad(state, actions))

    def eval(self, state: Any, actions: Any = None) -> torch.Tensor:
        return self._expect(self.dist.eval(state, actions))

    def target(self, state: Any, actions: Any = None) -> torch.Tensor:
        return self._expect(self.dist.target(state, actions))
