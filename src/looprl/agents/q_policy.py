"""A ready-made Q-network policy of the SRL API (seed 004), for Ape-X style DQN trainers.

``Policy(type_="q-network", args=dict(obs_dim={"obs": 8}, action_dim=4))`` builds one. Its
network encodes the observation fields as the actor-critic policies do
(``looprl.nn.fields``), runs an MLP and maps the features to one value per action (with
``dueling=True``: value and advantage streams, ``Q = V + A - mean(A)``).

``rollout`` is epsilon-greedy per row: each row explores with its own rate
(``request.exploration``, e.g. Ape-X's per-actor epsilons, or the policy's ``epsilon``),
evaluation rows act greedily. An obs field ``action_mask`` restricts both the greedy and
the random actions to the valid ones; the Q-values of invalid actions are ``MASKED_Q``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.approximation import Approximation
from looprl.core import Policy, RolloutRequest, RolloutResult, deterministic_rows
from looprl.nn import Dueling, orthogonal_init
from looprl.nn.fields import Backbone, field_shapes, observation_fields

__all__ = ["MASKED_Q", "QModel", "QPolicy"]

#: The Q-value of an action masked out by the obs field ``action_mask``.
MASKED_Q = -1e8


class QModel(nn.Module):
    """Observation fields to action values ``[*lead, action_dim]``, for any leading shape.

    Args:
        obs_dim: ``{field: dim or shape}`` it reads (an int or a shape: the field ``obs``).
        action_dim: number of discrete actions.
        hidden_dim, num_layers, activation: the MLP.
        dueling: value and advantage streams instead of one linear layer.
    """

    def __init__(
        self,
        obs_dim: Any,
        action_dim: int,
        hidden_dim: int = 64,
        num_layers: int = 2,
        activation: str = "relu",
        dueling: bool = False,
    ):
        super().__init__()
        self.backbone = Backbone(field_shapes(obs_dim), hidden_dim, num_layers, activation)
        features = self.backbone.out_features

        def linear(out: int) -> nn.Module:
            return orthogonal_init(nn.Linear(features, out), 1.0)

        self.head = Dueling(linear(1), linear(action_dim)) if dueling else linear(action_dim)

    def values_and_mask(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Masked action values ``[*lead, A]`` and the action mask (``[*lead, A]`` or ``None``)."""
        device = next(self.parameters()).device
        fields, lead, mask = observation_fields(obs, self.backbone.encoder.shapes, device)
        values = self.head(self.backbone.features(fields))
        if mask is not None:
            values = values.masked_fill(~mask, MASKED_Q)
            mask = mask.reshape(*lead, -1)
        return values.reshape(*lead, -1), mask

    def forward(self, obs: Any) -> torch.Tensor:
        return self.values_and_mask(obs)[0]


class QPolicy(Policy):
    """Epsilon-greedy Q-network policy (registered as ``q-network``).

    ``rollout`` returns ``action`` (``[B]`` int64) and ``value`` (``max_a Q``, ``[B]``);
    ``analyze(sample, target="q")`` returns ``Q(sample.obs, .)`` ``[..., action_dim]`` with
    gradients, for any leading shape. The trainer optimizes ``approximation`` (Adam).

    Args:
        obs_dim: ``{field: dim or shape}`` (see ``QModel``).
        action_dim: number of discrete actions.
        hidden_dim, num_layers, activation: the MLP.
        dueling: dueling streams.
        epsilon: exploration rate of rows without a ``request.exploration``.
        lr: Adam's learning rate.
        clip_grad: maximum gradient norm of the approximation's updates (0: off).
        device: where the parameters live.
        seed: seeds the initial weights and the exploration (``None``: torch's global RNG).
    """

    def __init__(
        self,
        obs_dim: Any,
        action_dim: int,
        hidden_dim: int = 64,
        num_layers: int = 2,
        activation: str = "relu",
        dueling: bool = False,
        epsilon: float = 0.05,
        lr: float = 3e-4,
        clip_grad: float = 0.0,
        device: str | torch.device = "cpu",
        seed: int | None = None,
    ):
        if not isinstance(action_dim, int) or action_dim <= 0:
            raise ValueError(f"action_dim must be a positive int, got {action_dim!r}")
        with torch.random.fork_rng(devices=[], enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            model = QModel(obs_dim, action_dim, hidden_dim, num_layers, activation, dueling)
        self.device = torch.device(device)
        model = model.to(self.device)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.approximation = Approximation(
            model, optimizer, clip_grad=clip_grad, device=self.device, name="q"
        )
        self.action_dim = action_dim
        self.epsilon = epsilon
        self.version = 0
        self._generator = None
        if seed is not None:
            self._generator = torch.Generator(self.device).manual_seed(seed)

    @property
    def module(self) -> nn.Module:
        return self.approximation.model

    def parameters(self) -> Any:
        """The parameters of ``module``."""
        return self.module.parameters()

    def rollout(self, request: RolloutRequest, **kwargs: Any) -> RolloutResult:
        """Epsilon-greedy actions per row and ``max_a Q`` (no gradients)."""
        with torch.no_grad():
            values, mask = self.module.values_and_mask(request.obs)
        if values.dim() != 2:
            raise ValueError(
                f"rollout takes obs batched along dim 0 only, got leading shape "
                f"{tuple(values.shape[:-1])}"
            )
        value, greedy = values.max(dim=-1)
        rows = len(values)
        explore = self._rand(rows) < self._epsilons(request, rows)
        action = torch.where(explore, self._random_actions(rows, mask), greedy)
        return RolloutResult(action=action, value=value)

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> torch.Tensor:
        """``Q(sample.obs, .)`` ``[..., action_dim]`` with gradients (``target`` ``"q"``).

        Raises:
            ValueError: unknown ``target`` or a sample without ``obs``.
        """
        if (target or "q") != "q":
            raise ValueError(f"unknown analyze target {target!r}; QPolicy supports 'q'")
        if "obs" not in sample:
            raise ValueError("QPolicy.analyze needs a sample with an obs field")
        return self.approximation(sample["obs"])

    def _epsilons(self, request: RolloutRequest, rows: int) -> torch.Tensor:
        """The exploration rate of each row: 0 on evaluation rows."""
        rate = getattr(request, "exploration", None)
        rate = self.epsilon if rate is None else rate
        eps = torch.as_tensor(rate, dtype=torch.float32, device=self.device).flatten()
        if eps.numel() == 1:
            eps = eps.expand(rows)
        elif eps.numel() != rows:
            raise ValueError(
                f"exploration has {eps.numel()} rates for {rows} rows; give one "
                "per row or one for the batch"
            )
        deterministic = deterministic_rows(request)
        if isinstance(deterministic, torch.Tensor):
            if deterministic.numel() != rows:
                raise ValueError(f"is_evaluation has {deterministic.numel()} rows, obs {rows}")
            return torch.where(deterministic.to(self.device), torch.zeros_like(eps), eps)
        return torch.zeros_like(eps) if deterministic else eps

    def _rand(self, *shape: int) -> torch.Tensor:
        return torch.rand(shape, generator=self._generator, device=self.device)

    def _random_actions(self, rows: int, mask: torch.Tensor | None) -> torch.Tensor:
        """A uniformly random (valid, under ``mask``) action per row."""
        scores = self._rand(rows, self.action_dim)
        if mask is not None:
            scores = scores.masked_fill(~mask, -1.0)
        return scores.argmax(dim=-1)
