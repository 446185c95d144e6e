"""Proximal Policy Optimization (Schulman et al., 2017, https://arxiv.org/abs/1707.06347):
``PPOTrainer``, registered as ``Trainer(type_="ppo", ...)``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from looprl.agents.losses import ppo_clip_bounds, ppo_loss
from looprl.agents.on_policy import OnPolicyTrainer
from looprl.core import Hyperparameter, Policy
from looprl.core.namedarray import NamedArray
from looprl.core.ranges import check_arguments
from looprl.policies.distributions import CategoricalHead

__all__ = ["PPOTrainer"]


class PPOTrainer(OnPolicyTrainer):
    """PPO on ``[T + 1, B]`` segments (``OnPolicyTrainer``'s targets, minibatches and ``**kwargs``).
    ``clip``: the ratio's clipping range, or a function of training progress in ``[0, 1]``;
    ``value_clip``: clip value predictions around the old values (``None``: off)."""

    def __init__(self, policy: Policy, epochs: int = 4, minibatch_size: int | None = 256,
                 clip: float | Callable[[float], float] = 0.2, value_clip: float | None = None,
                 normalize_advantages: bool = True, entropy_coef: float = 0.01, **kwargs: Any):
        super().__init__(policy, epochs=epochs, minibatch_size=minibatch_size,
                         normalize_advantages=normalize_advantages, entropy_coef=entropy_coef,
                         **kwargs)
        clips = {"clip": clip, "value_clip": value_clip}  # (math.inf: not clipped)
        check_arguments(type(self).__name__,
                        **{key: value for key, value in clips.items() if value != math.inf})
        self.clip = clip
        self.value_clip = value_clip
        self._clip_now = self._clip()
        self._log_ratios: list[torch.Tensor] = []
        self._logits: list[torch.Tensor] = []  # of minibatches analyzed without the entropy
        #: (advantages, their ``ppo_clip_bounds``) of the last minibatch
        self._bounds: tuple[torch.Tensor, tuple[torch.Tensor, ...]] | None = None

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """``OnPolicyTrainer``'s keys and ``hp/clip`` (setting it replaces a schedule)."""
        clip = Hyperparameter(self._clip, lambda value: setattr(self, "clip", float(value)))
        return {**super().hyperparameters(), "hp/clip": clip}

    def _clip(self) -> float:
        return self.clip(self.progress) if callable(self.clip) else self.clip

    def _update(self, batch: NamedArray) -> dict[str, Any]:
        self._clip_now = self._clip()
        self._log_ratios, self._logits = [], []
        stats = super()._update(batch)
        self._bounds = None
        if self._log_ratios:  # mean((ratio - 1) - log ratio), the share of |ratio - 1| > clip
            clip, ratios = self._clip_now, self._log_ratios
            stats["approx_kl"] = minibatch_mean(ratios, lambda x: (x.exp() - 1.0) - x)
            stats["clip_fraction"] = minibatch_mean(
                ratios, lambda x: ((x.exp() - 1.0).abs() > clip).float())
        if self._logits:
            stats["entropy"] = minibatch_mean(self._logits, CategoricalHead.entropy)
        return {**stats, "clip": self._clip_now}

    def _weighs_entropy(self) -> bool:
        return bool(self.entropy_coef)

    def _loss(self, analysis: NamedArray, rows: NamedArray, advantage: torch.Tensor
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        if self._bounds is None or self._bounds[0] is not advantage:
            # (when one minibatch holds the batch, every epoch has the same advantages)
            self._bounds = (advantage, ppo_clip_bounds(advantage, self._clip_now))
        loss, parts = ppo_loss(analysis.log_prob, rows.log_prob, advantage, analysis.value,
                               rows.returns, analysis.entropy, self._clip_now, self.value_coef,
                               self.entropy_coef, old_values=rows.value,
                               value_clip=self.value_clip, bounds=self._bounds[1])
        # diagnostics (and an entropy left out) are computed for all minibatches at once
        self._log_ratios.append(analysis.log_prob.detach() - rows.log_prob)
        if analysis.entropy is None:
            self._logits.append(analysis.logits.detach())
        return loss, parts


def minibatch_mean(tensors: list[torch.Tensor], stat: Callable[[torch.Tensor], torch.Tensor]
                   ) -> torch.Tensor:
    """``stat`` of each minibatch's tensor, averaged over its rows, then over minibatches."""
    if all(x.shape == tensors[0].shape for x in tensors):
        values = stat(torch.stack(tensors))
        return values.mean(tuple(range(1, values.dim()))).mean()
    return torch.stack([stat(x).mean() for x in tensors]).mean()
