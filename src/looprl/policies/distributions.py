"""Action distributions as plain functions of network outputs (no ``torch.distributions``).

``torch.distributions`` validates arguments and builds objects on every call; on the hot
path of a rollout these few tensor operations are several times cheaper.
"""

from __future__ import annotations

import torch


class CategoricalHead:
    """A categorical distribution over ``n`` discrete actions, parameterized by logits."""

    def __init__(self, n: int):
        self.n = n

    @staticmethod
    def sample(logits: torch.Tensor) -> torch.Tensor:
        """Sample one action per row (Gumbel-max trick)."""
        noise = torch.rand_like(logits).log_().neg_().log_()
        return torch.argmax(logits - noise, dim=-1)

    @staticmethod
    def mode(logits: torch.Tensor) -> torch.Tensor:
        """The most likely action per row."""
        return torch.argmax(logits, dim=-1)

    @staticmethod
    def log_prob(logits: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``log pi(a | s)`` of ``actions`` (one per row)."""
        log_p = torch.log_softmax(logits, dim=-1)
        return log_p.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    @staticmethod
    def log_prob_and_entropy(
        logits: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``log pi(a | s)`` and the entropy of ``pi(. | s)``, sharing one log-softmax."""
        log_p = torch.log_softmax(logits, dim=-1)
        entropy = -(log_p.exp() * log_p).sum(-1)
        return log_p.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1), entropy
