"""Phasic Policy Gradient (Cobbe et al., 2021, https://arxiv.org/abs/2009.04416): as SRL's,
PPO iterations, then an auxiliary phase distilling the value targets into an auxiliary head."""

from __future__ import annotations

import math
from typing import Any

import torch

from looprl.agents.losses import ppg_aux_loss, value_loss
from looprl.agents.on_policy import mean_parts
from looprl.agents.ppo import PPOTrainer
from looprl.core import Policy
from looprl.core.namedarray import NamedArray
from looprl.core.ranges import check_arguments

__all__ = ["PPGTrainer"]


class PPGTrainer(PPOTrainer):
    """PPO updates with an auxiliary phase every ``n_policy`` of them: ``aux_epochs`` passes of
    ``aux_minibatch_size`` rows, the cloning term (the exact KL given ``logits``, else estimated
    from the stored actions) weighted by ``beta_clone``."""

    def __init__(self, policy: Policy, n_policy: int = 32, aux_epochs: int = 6,
                 beta_clone: float = 1.0, aux_minibatch_size: int | None = None,
                 **ppo_kwargs: Any):
        super().__init__(policy, **ppo_kwargs)
        check_arguments(type(self).__name__, n_policy=n_policy, aux_epochs=aux_epochs,
                        beta_clone=beta_clone, aux_minibatch_size=aux_minibatch_size)
        self.n_policy = n_policy
        self.aux_epochs = aux_epochs
        self.beta_clone = beta_clone
        self.aux_minibatch_size = aux_minibatch_size or self.minibatch_size
        self.aux_phases = 0
        self._memory: list[NamedArray] = []
        self._checked = False

    def _update(self, batch: NamedArray) -> dict[str, Any]:
        """A PPO iteration on ``batch``; then the auxiliary phase if the phase is over."""
        if not self._checked:
            self._check_aux_head(batch)
        keep = ("obs", "action", "returns") + (
            ("policy_state", "done", "truncated", "mask") if self.recurrent else ())
        self._memory.append(NamedArray(**{key: batch[key] for key in keep}))
        aux = len(self._memory) >= self.n_policy
        if aux:  # the learning-rate schedule spans both phases' optimizer steps
            self._begin_update(self._policy_steps(batch) + self._aux_steps())
        stats = super()._update(batch)
        if aux:
            stats.update(self.auxiliary_phase())
        return stats

    def _check_aux_head(self, batch: NamedArray) -> None:
        with torch.no_grad():
            analysis = self._analyze_units(batch[:1])
        if analysis.aux_value is None:
            raise ValueError(f"PPG needs a policy with an auxiliary value head; "
                             f"{type(self._policy).__name__} returned aux_value=None (build it "
                             "with auxiliary_head=True, or a PPGNetwork)")
        self._checked = True

    def _aux_steps(self) -> int:
        n = sum(m.returns.shape[0] for m in self._memory)
        size = self._units_per_minibatch(self._memory[0], self.aux_minibatch_size)
        return self.aux_epochs * math.ceil(n / size)

    def auxiliary_phase(self) -> dict[str, torch.Tensor]:
        """Distil the phase's value targets into the auxiliary head; clear the memory."""
        memory, self._memory = self._memory, []
        if self.recurrent and len({m.returns.shape[1] for m in memory}) > 1:
            raise ValueError("PPG with a recurrent policy needs segments of one length T")
        memory = NamedArray.cat(memory)
        n = memory.returns.shape[0]
        size = self._units_per_minibatch(memory, self.aux_minibatch_size)
        memory = self._with_old_policy(memory, size)
        parts = [self._aux_minibatch_step(minibatch) for _ in range(self.aux_epochs)
                 for minibatch in self._shuffled(memory, n, size)]
        self.aux_phases += 1
        self._policy.version += 1
        return mean_parts(parts)

    def _with_old_policy(self, memory: NamedArray, size: int) -> NamedArray:
        """``memory`` plus the log-probs (and logits) of the phase's starting policy."""
        with torch.no_grad():
            chunks = [self._analyze_units(memory[index])
                      for index in torch.arange(memory.returns.shape[0]).split(size)]
        old = {"old_log_prob": torch.cat([chunk.log_prob for chunk in chunks])}
        if chunks[0].logits is not None:
            old["old_logits"] = torch.cat([chunk.logits for chunk in chunks])
        return NamedArray(**dict(memory.items()), **old)

    def _aux_minibatch_step(self, units: NamedArray) -> dict[str, torch.Tensor]:
        analysis, rows = self._valid(units, self._analyze_units(units))
        if rows.returns.shape[0] == 0:
            return self._empty_step(analysis)
        if analysis.logits is not None and "old_logits" in rows:
            joint, parts = ppg_aux_loss(analysis.aux_value, rows.returns, rows.old_logits,
                                        analysis.logits, self.beta_clone)
        else:
            aux = 0.5 * value_loss(analysis.aux_value, rows.returns.detach())
            kl = (rows.old_log_prob - analysis.log_prob).mean()
            joint = aux + self.beta_clone * kl
            parts = {"aux_value": aux.detach(), "kl": kl.detach()}
        critic = 0.5 * value_loss(analysis.value, rows.returns)
        self._policy.approximation.reinforce(joint + critic)
        return {f"aux/{k}": v for k, v in parts.items()} | {"aux/value": critic.detach()}
