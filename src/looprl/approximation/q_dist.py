"""``QDist``: an ``Approximation`` of return distributions over fixed atoms (C51).

The model maps a batch of observations to one of two things, told apart by its output's
last dimensions:

* ``(batch, num_actions * num_atoms)`` -- flat logits, as ALL's models (``all.nn`` C51 and
  Rainbow networks, ``CategoricalDueling``) emit; ``QDist`` takes the softmax per action.
* ``(batch, num_actions, num_atoms)`` -- probabilities, used as they are (``CategoricalQHead``
  and the ``looprl.nn.cnn`` networks emit these). With a single action the two differ only
  in the number of dimensions: probabilities need all three.

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

__all__ = ["ExpectedQ", "QDist", "QDistModule", "project_distribution"]


class QDistModule(nn.Module):
    """Maps a ``State``/``StateArray`` (and optionally actions) to atom probabilities.

    Args:
        model: maps observations to ``(batch, num_actions * num_atoms)`` logits or
            ``(batch, num_actions, num_atoms)`` probabilities (see the module docstring).
        atoms: the support, ``num_atoms`` values from ``v_min`` to ``v_max``.
        num_actions: number of discrete actions.
    """

    def __init__(self, model: nn.Module, atoms: torch.Tensor, num_actions: int):
        super().__init__()
        self.model = model
        self.num_actions = num_actions
        self.register_buffer("atoms", atoms)
        terminal = torch.zeros_like(atoms)
        terminal[atoms.abs().argmin()] = 1.0
        self.register_buffer("terminal", terminal)

    def probabilities(self, observation: torch.Tensor) -> torch.Tensor:
        """``(rows, num_actions, num_atoms)`` probabilities of observations (see the module
        docstring: ``(..., num_actions, num_atoms)`` outputs are probabilities, ``(...,
        num_actions * num_atoms)`` ones logits; with one action, probabilities need 3
        dimensions)."""
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
        probs = self.probabilities(state.as_input("observation"))
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
        model: maps a batch of observations to ``(batch, num_actions * num_atoms)`` logits
            (ALL's convention) or ``(batch, num_actions, num_atoms)`` probabilities (e.g. a
            ``CategoricalQHead``).
        optimizer: optimizer over ``model``'s parameters.
        num_actions: number of discrete actions (``n_actions``: ALL's name for it).
        num_atoms: number of atoms of the support (``n_atoms``: ALL's name for it).
        v_min, v_max: the support's end points.
        name: log/checkpoint name.
        **kwargs: see ``Approximation``.

    Example (ALL's C51 model: flat logits, softmaxed per action by ``QDist``):
        >>> model = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2 * 51))
        >>> q = QDist(model, None, 2, 51, v_min=-10.0, v_max=10.0)
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 num_actions: int = 2, num_atoms: int = 51, v_min: float = -10.0,
                 v_max: float = 10.0, name: str = "q_dist", *, n_actions: int | None = None,
                 n_atoms: int | None = None, **kwargs: Any):
        num_actions = num_actions if n_actions is None else n_actions
        num_atoms = num_atoms if n_atoms is None else n_atoms
        if num_atoms < 2 or not v_min < v_max:
            raise ValueError(f"Need num_atoms >= 2 and v_min < v_max, got {num_atoms}, "
                             f"{v_min}, {v_max}")
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
        """``dist`` ``(batch, num_atoms)``, each probability sitting at its ``support`` value
        (``(batch, num_atoms)``, e.g. ``r + gamma * atoms``), projected onto ``atoms``
        (``project_distribution``), as ``all.approximation.QDist.project``."""
        return project_distribution(dist, support, self.atoms)

    @property
    def expectation(self) -> ExpectedQ:
        """A ``QNetwork``-like view of the expected action values."""
        return ExpectedQ(self)


def project_distribution(probs: torch.Tensor, support: torch.Tensor,
                         atoms: torch.Tensor) -> torch.Tensor:
    """C51's projection (Bellemare et al., 2017, https://arxiv.org/abs/1707.06887,
    Algorithm 1) of ``probs`` ``(..., n)``, whose ``j``-th probability sits at ``support[...,
    j]``, onto the evenly spaced ``atoms`` (``n`` of them, ``v_min .. v_max``).

    Each ``support`` value is clamped to ``[v_min, v_max]`` and lands at ``b = (Tz - v_min) /
    dz``; its probability is split between the neighbours ``l = floor(b)`` and ``u = ceil(b)``
    as ``p (u - b)`` and ``p (b - l)`` (all of it to ``l`` when ``b`` is integral, where ALL's
    ``project`` loses it)."""
    v_min, v_max = atoms[0], atoms[-1]
    delta = (v_max - v_min) / (atoms.shape[0] - 1)
    b = ((support.clamp(v_min, v_max) - v_min) / delta).clamp(0, atoms.shape[0] - 1)
    lower = b.floor()
    upper = b.ceil()
    lower_weight = torch.where(upper == lower, torch.ones_like(b), upper - b)
    target = torch.zeros_like(probs)
    target.scatter_add_(-1, lower.long(), probs * lower_weight)
    target.scatter_add_(-1, upper.long(), probs * (b - lower))
    return target


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
