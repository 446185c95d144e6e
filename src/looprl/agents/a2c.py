"""Advantage Actor-Critic, A2C (Mnih et al., 2016, https://arxiv.org/abs/1602.01783).

The synchronous version of A3C: ``n_envs`` environments step together for ``n_steps``
steps, then one gradient step on ``a2c_loss`` with n-step advantages ``A_t = R_t - V(s_t)``
and an entropy bonus. VPG uses ``A2CTrainer`` as it is, VAC with its own advantages.
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.losses.policy_gradient import a2c_loss
from looprl.agents.on_policy import OnPolicyTrainer
from looprl.core import Policy
from looprl.core.namedarray import NamedArray

__all__ = ["A2CTrainer"]


class A2CTrainer(OnPolicyTrainer):
    """One gradient step of the advantage actor-critic loss per segment (one without
    training rows is skipped).

    Args:
        policy: the policy to optimize.
        gae_lambda: GAE's lambda (``1``: n-step returns).
        **kwargs: ``OnPolicyTrainer``'s other arguments (``value_coef``, ``entropy_coef``,
            ``normalize_advantages``, ``discount_factor``, ``lr``...).
    """

    def __init__(self, policy: Policy, *, gae_lambda: float = 1.0, **kwargs: Any):
        super().__init__(policy, gae_lambda=gae_lambda, **kwargs)

    def _loss(self, analysis: NamedArray, rows: NamedArray, advantage: torch.Tensor
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return a2c_loss(analysis.log_prob, advantage, analysis.value, rows.returns,
                        analysis.entropy, self.value_coef, self.entropy_coef)
