"""PPO and PPG trainers on SRL sample segments (seed 004; issue 11).

``SRLPPOTrainer.step(sample)`` takes a ``SampleBatch`` of time-major ``[T + 1, B]`` segments
(see its docstring for the row convention), computes GAE (or V-trace) targets per segment,
and runs ``PPOTrainer``'s epochs of shuffled minibatches of the same ``ppo_loss`` as the
local PPO agent. ``SRLPPGTrainer`` adds PPG's auxiliary phase (``ppg_aux_loss``).

The policy contract (``looprl.agents.actor_critic`` follows it):
``policy.analyze(sample, target="ppo")`` takes a ``NamedArray`` with ``obs`` (a ``NamedArray``
of observation fields), ``action`` and, for recurrent policies, ``policy_state``, ``done`` and
``truncated``, all ``[T, B, ...]``, and returns a ``NamedArray`` with ``log_prob``, ``entropy``,
``value`` and ``aux_value`` (``[T, B]``, with gradients; ``aux_value`` may be ``None``), plus
optionally ``logits`` (categorical policies, for PPG's exact KL). Feed-forward policies
(``default_policy_state is None``) accept any leading shape; the trainer then trains on
shuffled valid rows. Recurrent policies get minibatches of whole streams (columns of the
segment) and rebuild their memory from ``policy_state[0]``.

Trainers whose ``policy.approximation`` is distributed (``Approximation.distribute``, DDP) must
take equally many gradient steps: each step then trains on as many units on every trainer,
the smallest count among them (a random subset of the others' units).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import torch

from looprl.agents.losses import normalize, ppg_aux_loss, ppo_loss, segment_gae, value_loss
from looprl.agents.losses.vtrace import segment_mask, vtrace
from looprl.agents.ppo import PPOTrainer
from looprl.agents.srl_common import (
    common_units,
    explained_variance,
    prepare_sample,
    reinforce,
    sample_lag,
    scalars,
    transpose01,
)
from looprl.core import Policy, SampleBatch, TrainerStepResult
from looprl.core.namedarray import NamedArray

logger = logging.getLogger(__name__)

_REQUIRED = ("obs", "action", "reward", "done", "truncated", "log_prob")


class SRLPPOTrainer(PPOTrainer):
    """PPO (Schulman et al., 2017, https://arxiv.org/abs/1707.06347) on ``[T + 1, B]`` segments.

    Registered as ``Trainer(type_="ppo", policy=policy, args=dict(...))``. Each ``step`` is one
    PPO iteration (``epochs`` passes of minibatches) and increments ``policy.version``.

    Args:
        policy: an actor-critic policy (see the module docstring) whose ``approximation``
            holds the optimizer.
        epochs: passes over each sample.
        minibatch_size: rows per gradient step; recurrent policies take
            ``max(1, minibatch_size // T)`` whole streams per minibatch.
        clip: clipping range of the ratio (or a schedule of progress, as in ``PPOTrainer``).
        value_coef, entropy_coef: loss weights.
        discount_factor, gae_lambda: gamma and lambda of GAE (and the lambda of V-trace).
        normalize_advantages: normalize advantages per minibatch.
        max_grad_norm: clip the global gradient norm (``None``: the approximation's own).
        vtrace: targets by V-trace from the current policy's values and log-probs, which
            corrects for the lag of samples made by older policy versions; otherwise GAE
            from the values stored by the actors.
        clip_rho, clip_c: V-trace's truncation levels.
        value_clip, total_updates, lr: as in ``PPOTrainer``.
        seed: seeds the minibatch shuffling.
    """

    #: the trainer-side buffer the runtime pairs with it (``looprl.memory.make_sample_buffer``)
    sample_buffer = "on_policy"

    def __init__(
        self,
        policy: Policy,
        epochs: int = 4,
        minibatch_size: int = 256,
        clip: float | Callable[[float], float] = 0.2,
        value_coef: float = 0.5,
        entropy_coef: float = 0.01,
        discount_factor: float = 0.99,
        gae_lambda: float = 0.95,
        normalize_advantages: bool = True,
        max_grad_norm: float | None = None,
        vtrace: bool = False,
        clip_rho: float = 1.0,
        clip_c: float = 1.0,
        value_clip: float | None = None,
        total_updates: float = float("inf"),
        lr: Callable[[float], float] | None = None,
        seed: int | None = None,
    ):
        if epochs < 1 or minibatch_size < 1:
            raise ValueError(
                f"epochs and minibatch_size must be >= 1, got {epochs}, {minibatch_size}"
            )
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        super().__init__(
            policy, epochs=epochs, minibatch_size=minibatch_size, clip=clip,
            value_coef=value_coef, entropy_coef=entropy_coef, value_clip=value_clip,
            normalize_advantages=normalize_advantages, total_updates=total_updates,
            generator=generator, lr=lr,
        )  # fmt: skip
        self.discount_factor = discount_factor
        self.gae_lambda = gae_lambda
        self.max_grad_norm = max_grad_norm
        self.vtrace = vtrace
        self.clip_rho = clip_rho
        self.clip_c = clip_c
        self.recurrent = policy.default_policy_state is not None

    # -- the step -------------------------------------------------------------------------
    def step(self, sample: SampleBatch) -> TrainerStepResult:  # type: ignore[override]
        """One PPO iteration on ``sample`` (``[T + 1, B]`` segments); see the class docstring."""
        sample = self._prepare(sample)
        batch, stats = self._batch(sample)
        if not self._has_rows(batch):
            logger.warning("%s: no training rows in the sample; skipped", type(self).__name__)
            return TrainerStepResult(scalars(stats), self.updates)
        clip = self._clip()
        self._begin_update(self._policy_steps(batch.advantage.shape[0], batch))
        stats.update(self._policy_phase(batch, clip), clip=clip)
        return TrainerStepResult(scalars(self._end_update(stats)), self.updates)

    def _prepare(self, sample: SampleBatch) -> SampleBatch:
        required = _REQUIRED + (("policy_state",) if self.recurrent else ())
        required += () if self.vtrace else ("value",)
        return prepare_sample(sample, self._policy.device, type(self).__name__, required)

    def _has_rows(self, batch: NamedArray) -> bool:
        return bool(batch.mask.any()) if self.recurrent else batch.advantage.shape[0] > 0

    def _batch(self, sample: SampleBatch) -> tuple[NamedArray, dict[str, Any]]:
        """Training units with targets: valid rows ``[N]`` (feed-forward) or streams ``[B, T]``."""
        advantage, returns, old_value = self._targets(sample)
        mask = segment_mask(sample.done, sample.truncated)
        rows = NamedArray(
            obs=sample.obs[:-1], action=sample.action[:-1], log_prob=sample.log_prob[:-1],
            value=old_value, advantage=advantage, returns=returns,
        )  # fmt: skip
        stats = {
            "explained_variance": explained_variance(old_value[mask], returns[mask]),
            "valid_rows": float(mask.sum()),
            **sample_lag(sample, mask, self._policy.version),
        }
        if not self.recurrent:
            return self._common(rows[mask]), stats
        recurrent = NamedArray(
            **dict(rows.items()), policy_state=sample.policy_state[:-1],
            done=sample.done[:-1], truncated=sample.truncated[:-1], mask=mask,
        )  # fmt: skip
        return self._common(transpose01(recurrent)), stats

    def _common(self, batch: NamedArray) -> NamedArray:
        """``batch``, or a random part of it as large as the smallest batch of the trainers
        this one is synchronized with (DDP: all take as many gradient steps)."""
        n = batch.advantage.shape[0]
        common = common_units(self._policy.approximation, n if self._has_rows(batch) else 0)
        if common == n:
            return batch
        return batch[torch.randperm(n, generator=self.generator)[:common]]

    def _targets(self, sample: SampleBatch) -> tuple[torch.Tensor, ...]:
        """``(advantage, returns, old value)``, each ``[T, B]``."""
        gamma, lam = self.discount_factor, self.gae_lambda
        if not self.vtrace:
            advantage, returns, _ = segment_gae(
                sample.reward, sample.value, sample.done, sample.truncated, gamma, lam
            )
            return advantage, returns, sample.value[:-1].float()
        with torch.no_grad():
            analysis = self._policy.analyze(self._analysis_input(sample), target="ppo")
        returns, advantage = vtrace(
            sample.log_prob[:-1], analysis.log_prob[:-1], sample.reward, analysis.value,
            sample.done, sample.truncated, gamma, lam, self.clip_rho, self.clip_c,
        )  # fmt: skip
        value = sample.value if sample.value is not None else analysis.value
        return advantage, returns, value[:-1].float()

    def _analysis_input(self, segment: NamedArray) -> NamedArray:
        """What ``policy.analyze`` reads from a time-major segment."""
        if not self.recurrent:
            return NamedArray(obs=segment.obs, action=segment.action)
        return NamedArray(
            obs=segment.obs, action=segment.action, policy_state=segment.policy_state,
            done=segment.done, truncated=segment.truncated,
        )  # fmt: skip

    # -- minibatches ----------------------------------------------------------------------
    def _units_per_minibatch(self, batch: NamedArray) -> int:
        """Rows (feed-forward) or whole streams (recurrent) per minibatch."""
        if not self.recurrent:
            return self.minibatch_size
        return max(1, self.minibatch_size // batch.advantage.shape[1])

    def _policy_steps(self, n: int, batch: NamedArray | None = None) -> int:
        size = self.minibatch_size if batch is None else self._units_per_minibatch(batch)
        return self.epochs * (1 if size >= n else math.ceil(n / size))

    def _policy_phase(self, batch: NamedArray, clip: float) -> dict[str, torch.Tensor]:
        """``epochs`` passes of shuffled minibatches; the parts averaged over minibatches."""
        n, size = batch.advantage.shape[0], self._units_per_minibatch(batch)
        totals: dict[str, torch.Tensor] = {}
        count = 0
        for _ in range(self.epochs):
            if size >= n:  # one minibatch, the whole batch: order is moot (as PPOTrainer)
                minibatches = [batch]
            else:
                order = torch.randperm(n, generator=self.generator)
                minibatches = [batch[index] for index in order.split(size)]
            for minibatch in minibatches:
                parts = self._minibatch_step(minibatch, clip)
                for key, value in parts.items():
                    totals[key] = totals.get(key, 0.0) + value
                count += bool(parts)
        return {key: value / max(count, 1) for key, value in totals.items()}

    def _analyze_units(self, units: NamedArray) -> NamedArray:
        """``policy.analyze`` of training units, in the units' layout."""
        if not self.recurrent:
            return self._policy.analyze(self._analysis_input(units), target="ppo")
        segment = transpose01(units)
        return transpose01(self._policy.analyze(self._analysis_input(segment), target="ppo"))

    def _valid(self, units: NamedArray, analysis: NamedArray) -> tuple[NamedArray, NamedArray]:
        """The analysis and the units at valid rows only, flattened."""
        if not self.recurrent:
            return analysis, units
        return analysis[units.mask], units[units.mask]

    def _minibatch_step(self, minibatch: NamedArray, clip: float) -> dict[str, torch.Tensor]:
        analysis, rows = self._valid(minibatch, self._analyze_units(minibatch))
        if rows.advantage.shape[0] == 0:
            return self._empty_step(analysis)
        advantage = rows.advantage
        if self.normalize_advantages and advantage.shape[0] > 1:
            advantage = normalize(advantage)
        loss, parts = ppo_loss(
            analysis.log_prob, rows.log_prob, advantage, analysis.value, rows.returns,
            analysis.entropy, clip, self.value_coef, self.entropy_coef,
            old_values=rows.value, value_clip=self.value_clip,
        )  # fmt: skip
        with torch.no_grad():
            log_ratio = analysis.log_prob - rows.log_prob
            ratio = log_ratio.exp()
            parts["approx_kl"] = ((ratio - 1.0) - log_ratio).mean()
            parts["clip_fraction"] = ((ratio - 1.0).abs() > clip).float().mean()
        self._schedule_lr()
        reinforce(self._policy.approximation, loss, self.max_grad_norm)
        self.predictions = {
            "values": analysis.value.detach(),
            "log_probs": analysis.log_prob.detach(),
        }
        return parts


    def _empty_step(self, analysis: NamedArray) -> dict[str, torch.Tensor]:
        """A minibatch without valid rows (recurrent streams of final observations only):
        no step, unless the trainer is synchronized by DDP, whose every backward is a
        collective of all trainers: then a zero-gradient step beside theirs."""
        if getattr(self._policy.approximation, "process_group", None) is not None:
            reinforce(self._policy.approximation, 0.0 * analysis.value.sum(), self.max_grad_norm)
        return {}


class SRLPPGTrainer(SRLPPOTrainer):
    """PPG (Cobbe et al., 2021, https://arxiv.org/abs/2009.04416) on ``[T + 1, B]`` segments.

    Registered as ``Trainer(type_="ppg", ...)``. The policy phase is ``SRLPPOTrainer``'s step;
    after every ``n_policy`` steps, the auxiliary phase runs ``aux_epochs`` passes over the
    phase's training units, distilling the value targets into the policy's auxiliary value
    head (``analyze(...).aux_value``) while a cloning term keeps the policy where it was at
    the start of the phase, and training the value head further on the same targets. The
    cloning term is ``ppg_aux_loss``'s exact categorical KL when ``analyze`` returns
    ``logits``; otherwise the sampled estimate ``mean(log pi_old(a) - log pi(a))`` over the
    stored actions (any action space).

    Args:
        policy: an actor-critic policy with an auxiliary value head.
        n_policy: steps per phase (the paper's ``N_pi``).
        aux_epochs: passes of the auxiliary phase (``E_aux``).
        beta_clone: weight of the behaviour-cloning term.
        aux_minibatch_size: rows per auxiliary gradient step (default: ``minibatch_size``).
        **ppo_kwargs: ``SRLPPOTrainer``'s arguments.

    Raises:
        ValueError: at the first ``step``, if the policy has no auxiliary value head.
    """

    def __init__(
        self,
        policy: Policy,
        n_policy: int = 32,
        aux_epochs: int = 6,
        beta_clone: float = 1.0,
        aux_minibatch_size: int | None = None,
        **ppo_kwargs: Any,
    ):
        super().__init__(policy, **ppo_kwargs)
        self.n_policy = n_policy
        self.aux_epochs = aux_epochs
        self.beta_clone = beta_clone
        self.aux_minibatch_size = aux_minibatch_size or self.minibatch_size
        self.aux_phases = 0
        self._memory: list[NamedArray] = []
        self._checked = False

    def step(self, sample: SampleBatch) -> TrainerStepResult:  # type: ignore[override]
        """A PPO iteration on ``sample``; then the auxiliary phase if the phase is over."""
        sample = self._prepare(sample)
        if not self._checked:
            self._check_aux_head(sample)
        batch, stats = self._batch(sample)
        if not self._has_rows(batch):
            return TrainerStepResult(scalars(stats), self.updates)
        keep = ("obs", "action", "returns") + (
            ("policy_state", "done", "truncated", "mask") if self.recurrent else ()
        )
        self._memory.append(NamedArray(**{key: batch[key] for key in keep}))
        aux = len(self._memory) >= self.n_policy
        steps = self._policy_steps(batch.advantage.shape[0], batch)
        self._begin_update(steps + (self._aux_steps() if aux else 0))
        clip = self._clip()
        stats.update(self._policy_phase(batch, clip), clip=clip)
        if aux:
            stats.update(self.auxiliary_phase())
        return TrainerStepResult(scalars(self._end_update(stats)), self.updates)

    def _check_aux_head(self, sample: SampleBatch) -> None:
        with torch.no_grad():
            analysis = self._policy.analyze(self._analysis_input(sample[:2]), target="ppo")
        if getattr(analysis, "aux_value", None) is None:
            raise ValueError(
                f"PPG needs a policy with an auxiliary value head; {type(self._policy).__name__}"
                " returned aux_value=None (build it with auxiliary_head=True)"
            )
        self._checked = True

    def _aux_units(self, memory: NamedArray) -> int:
        """Rows (feed-forward) or whole streams (recurrent) per auxiliary minibatch."""
        if not self.recurrent:
            return self.aux_minibatch_size
        return max(1, self.aux_minibatch_size // memory.returns.shape[1])

    def _aux_steps(self) -> int:
        n = sum(m.returns.shape[0] for m in self._memory)
        return self.aux_epochs * math.ceil(n / self._aux_units(self._memory[0]))

    def auxiliary_phase(self) -> dict[str, torch.Tensor]:
        """Distil the phase's value targets into the auxiliary head; clear the memory."""
        if self.recurrent and len({m.returns.shape[1] for m in self._memory}) > 1:
            self._memory.clear()
            raise ValueError("PPG with a recurrent policy needs segments of one length T")
        memory = NamedArray.cat(self._memory)
        self._memory.clear()
        n = memory.returns.shape[0]
        size = self._aux_units(memory)
        memory = self._with_old_policy(memory, size)
        totals: dict[str, torch.Tensor] = {}
        count = 0
        for _ in range(self.aux_epochs):
            order = torch.randperm(n, generator=self.generator)
            for index in order.split(size):
                parts = self._aux_minibatch_step(memory[index])
                for key, value in parts.items():
                    totals[key] = totals.get(key, 0.0) + value
                count += 1
        self.aux_phases += 1
        self._policy.version += 1
        return {key: value / max(count, 1) for key, value in totals.items()}

    def _with_old_policy(self, memory: NamedArray, size: int) -> NamedArray:
        """``memory`` plus the log-probs (and logits) of the policy at the start of the phase."""
        with torch.no_grad():
            chunks = [
                self._analyze_units(memory[index])
                for index in torch.arange(memory.returns.shape[0]).split(size)
            ]
        old = {"old_log_prob": torch.cat([chunk.log_prob for chunk in chunks])}
        if getattr(chunks[0], "logits", None) is not None:
            old["old_logits"] = torch.cat([chunk.logits for chunk in chunks])
        return NamedArray(**dict(memory.items()), **old)

    def _aux_minibatch_step(self, units: NamedArray) -> dict[str, torch.Tensor]:
        analysis, rows = self._valid(units, self._analyze_units(units))
        if rows.returns.shape[0] == 0:
            return self._empty_step(analysis)
        logits = getattr(analysis, "logits", None)
        if logits is not None and "old_logits" in rows:
            joint, parts = ppg_aux_loss(
                analysis.aux_value, rows.returns, rows.old_logits, logits, self.beta_clone
            )
        else:
            aux = 0.5 * value_loss(analysis.aux_value, rows.returns.detach())
            kl = (rows.old_log_prob - analysis.log_prob).mean()
            joint = aux + self.beta_clone * kl
            parts = {"aux_value": aux.detach(), "kl": kl.detach()}
        critic = 0.5 * value_loss(analysis.value, rows.returns)
        self._schedule_lr()
        reinforce(self._policy.approximation, joint + critic, self.max_grad_norm)
        return {f"aux/{k}": v for k, v in parts.items()} | {"aux/value": critic.detach()}
