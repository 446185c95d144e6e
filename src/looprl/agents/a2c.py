"""Advantage Actor-Critic, A2C (Mnih et al., 2016, https://arxiv.org/abs/1602.01783): one
gradient step of ``a2c_loss`` per segment, n-step advantages ``A_t = R_t - V(s_t)``."""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.losses.policy_gradient import a2c_loss
from looprl.agents.on_policy import OnPolicyTrainer
from looprl.core import Policy
from looprl.core.namedarray import NamedArray

__all__ = ["A2CTrainer"]


class A2CTrainer(OnPolicyTrainer):
    """One gradient step of ``a2c_loss`` per segment (``gae_lambda=1``: n-step returns)."""

    def __init__(self, policy: Policy, *, gae_lambda: float = 1.0, **kwargs: Any):
        super().__init__(policy, gae_lambda=gae_lambda, **kwargs)

    def _loss(self, analysis: NamedArray, rows: NamedArray, advantage: torch.Tensor
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return a2c_loss(analysis.log_prob, advantage, analysis.value, rows.returns,
                        analysis.entropy, self.value_coef, self.entropy_coef)
