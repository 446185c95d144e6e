"""``QDist``: an ``Approximation`` of return distributions over fixed atoms (C51).

``q(state)`` returns probabilities of shape ``(*state.shape, num_actions, num_atoms)``;
``q(state, actions)`` the distribution of the given actions, ``(*state.shape, num_atoms)``.
Where the episode terminated (``mask == 0``) the distribution is a point mass on the atom
nearest to 0: a terminal state has return 0. The same holds for ``no_grad``, ``eval`` and
``target``. ``QDist.expectation`` is a view with ``Q(s, a) = sum_i z_i p_i(s, a)`` that
action-selection policies (``GreedyPolicy``) can use like a ``QNetwork``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation.approximation import Approximation

__all__ = ["ExpectedQ", "QDist", "QDistModule"]


class QDistModule(nn.Module):
    """Maps a ``State``/``StateArray`` (and optionally actions) to atom probabilities.

    Args:
        model: maps observations to ``(batch, num_actions, num_atoms)`` probabilities.
        atoms: the support, ``num_atoms`` values from ``v_min`` to ``v_max``.
    """

    def __init__(self, model: nn.Module, atoms: torch.Tensor):
        super().__init__()
        self.model = model
        self.register_buffer("atoms", atoms)
        terminal = torch.zeros_like(atoms)
        terminal[atoms.abs().argmin()] = 1.0
        self.register_buffer("terminal", terminal)

    def forward(self, state: Any, actions: Any = None) -> torch.Tensor:
        probs = self.model(state.as_input("observation"))
        probs = probs.view(*state.shape, *probs.shape[-2:])
        mask = torch.as_tensor(state.mask, dtype=probs.dtype, device=probs.device)
        mask = mask.view(*mask.shape, 1, 1)
        probs = mask * probs + (1 - mask) * self.terminal
        if actions is None:
            return probs
        actions = torch.as_tensor(actions, device=probs.device)
        index = actions.long().view(*actions.shape, 1, 1).expand(*actions.shape, 1, probs.shape[-1])
        return probs.gather(-2, index).squeeze(-2)


class QDist(Approximation):
    """Distributional action-value approximation (see the module docstring).

    Args:
        model: maps a batch of observations to ``(batch, num_actions, num_atoms)``
            probabilities (e.g. a ``CategoricalQHead``).
        optimizer: optimizer over ``model``'s parameters.
        num_actions: number of discrete actions.
        num_atoms: number of atoms of the support.
        v_min, v_max: the support's end points.
        name: log/checkpoint name.
        **kwargs: see ``Approximation``.
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 num_actions: int = 2, num_atoms: int = 51, v_min: float = -10.0,
                 v_max: float = 10.0, name: str = "q_dist", **kwargs: Any):
        if num_atoms < 2 or not v_min < v_max:
            raise ValueError(f"Need num_atoms >= 2 and v_min < v_max, got {num_atoms}, "
                             f"{v_min}, {v_max}")
        device = next(model.parameters()).device
        atoms = torch.linspace(v_min, v_max, num_atoms, device=device)
        self.num_actions = num_actions
        super().__init__(QDistModule(model, atoms), optimizer, name=name, **kwargs)

    @property
    def atoms(self) -> torch.Tensor:
        """The support ``z_1 .. z_N``."""
        return self.model.atoms

    @property
    def expectation(self) -> ExpectedQ:
        """A ``QNetwork``-like view of the expected action values."""
        return ExpectedQ(self)


class ExpectedQ:
    """Expected values ``sum_i z_i p_i`` of a ``QDist``, with ``QNetwork``'s call methods."""

    def __init__(self, dist: QDist):
        self.dist = dist
        self.device = dist.device

    @property
    def model(self) -> nn.Module:
        return self.dist.model

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
