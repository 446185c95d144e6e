"""What the on-policy actor-critics (PPO, PPG, A2C, VAC, VPG) share: ``OnPolicyTrainer`` and
``OnPolicyAgent``."""

from __future__ import annotations

import logging
import math
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import torch

from looprl.agents.losses import normalize, segment_gae
from looprl.agents.losses.vtrace import segment_mask, vtrace
from looprl.agents.segments import (
    PolicyTrainer,
    common_units,
    explained_variance,
    prepare_sample,
    sample_lag,
    scalars,
    transpose01,
)
from looprl.agents.shell import SegmentAgent
from looprl.approximation.schedules import ProgressLR
from looprl.core import (
    Hyperparameter,
    Logger,
    ParallelAgent,
    Policy,
    SampleBatch,
    Trainer,
    TrainerStepResult,
)
from looprl.core.namedarray import NamedArray
from looprl.core.ranges import POSITIVE, UNIT, check_arguments
from looprl.core.suggest import check_count, check_seed
from looprl.memory.segments import SegmentBuffer

logger = logging.getLogger(__name__)

_REQUIRED = ("obs", "action", "reward", "done", "truncated", "log_prob")


class OnPolicyTrainer(PolicyTrainer):
    """Targets and minibatches of an on-policy actor-critic update; subclasses give the loss.

    Each ``step``: ``epochs`` passes of shuffled minibatches of ``minibatch_size`` valid rows
    (``None``: all; recurrent policies: ``max(1, minibatch_size // T)`` whole streams).
    ``vtrace``: V-trace targets from the current policy, else GAE from the stored values.
    ``lr``: a function of training progress in ``[0, 1]`` setting the learning rate (a
    ``ProgressLR``; setting ``hp/lr/<name>`` drops it); ``seed``: the shuffling.
    """

    _last_analysis: NamedArray | None = None  # of the latest minibatch step (``predictions``)

    def __init__(self, policy: Policy, epochs: int = 1, minibatch_size: int | None = None,
                 value_coef: float = 0.5, entropy_coef: float = 0.0,
                 discount_factor: float = 0.99, gae_lambda: float = 0.95,
                 normalize_advantages: bool = False, vtrace: bool = False, clip_rho: float = 1.0,
                 clip_c: float = 1.0, total_updates: float = float("inf"),
                 lr: Callable[[float], float] | None = None, seed: int | None = None):
        check_count(epochs=epochs)
        check_count(optional=True, minibatch_size=minibatch_size)
        owner = type(self).__name__
        check_arguments(owner, value_coef=value_coef, entropy_coef=entropy_coef,
                        discount_factor=discount_factor)
        UNIT.check("gae_lambda", gae_lambda, owner)
        for name, level in (("clip_rho", clip_rho), ("clip_c", clip_c)):  # (V-trace's; at 0
            if level != math.inf:  # every importance weight would be 0; inf: not truncated)
                POSITIVE.check(name, level, owner)
        self._policy = policy
        self.epochs, self.minibatch_size = epochs, minibatch_size
        self.value_coef, self.entropy_coef = value_coef, entropy_coef
        self.discount_factor, self.gae_lambda = discount_factor, gae_lambda
        self.normalize_advantages, self.vtrace = normalize_advantages, vtrace
        self.clip_rho, self.clip_c = clip_rho, clip_c
        self.total_updates, self.lr = total_updates, lr
        seed = check_seed(type(self).__name__, seed)
        self.generator = torch.Generator().manual_seed(seed) if seed is not None else None
        self.recurrent = policy.default_policy_state is not None
        self.updates = 0
        self._lr_schedule = None  # (the approximation steps it after every optimizer step)
        if lr is not None:
            self._lr_schedule = policy.approximation.lr_scheduler = ProgressLR(
                policy.approximation.optimizer, lr, total_updates)

    @property
    def progress(self) -> float:
        """Fraction of ``total_updates`` done, in ``[0, 1]``."""
        return min(self.updates / self.total_updates, 1.0)

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The coefficients', ``epochs``' and ``minibatch_size``'s keys and ``hp/lr/<name>``."""
        found = {f"hp/{key}": Hyperparameter.attribute(self, name, kind) for key, name, kind in (
            ("discount", "discount_factor", float), ("lam", "gae_lambda", float),
            ("entropy_coef", "entropy_coef", float), ("value_coef", "value_coef", float),
            ("epochs", "epochs", int))}
        if self.minibatch_size is not None:
            found["hp/batch_size"] = Hyperparameter.attribute(self, "minibatch_size", int)
        found.update({key: rate for key, rate in self._policy.hyperparameters().items()
                      if key.startswith("hp/lr/")})  # (setting it drops the lr schedule)
        return found

    def step(self, sample: SampleBatch) -> TrainerStepResult:
        """One update on ``sample`` (``[T + 1, B]`` segments)."""
        required = _REQUIRED + (("policy_state",) if self.recurrent else ())
        required += () if self.vtrace else ("value",)
        sample = prepare_sample(sample, self._policy.device, type(self).__name__, required)
        batch, stats = self._batch(sample)
        if not self._has_rows(batch):  # (usual: a one-step segment from an episode's end)
            logger.debug("%s: no training rows in the sample; skipped", type(self).__name__)
            return TrainerStepResult(scalars(stats), self.updates)
        self._begin_update(self._policy_steps(batch))
        stats.update(self._update(batch))
        self.updates += 1
        self._policy.version += 1
        self._begin_update(1)  # (the learning rate at the new progress)
        return TrainerStepResult(scalars(stats), self.updates)

    @abstractmethod
    def _loss(self, analysis: NamedArray, rows: NamedArray, advantage: torch.Tensor
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``(loss, detached parts)`` of a minibatch: the policy's ``analysis`` of ``rows``."""

    def _has_rows(self, batch: NamedArray) -> bool:
        return bool(batch.mask.any()) if self.recurrent else batch.advantage.shape[0] > 0

    def _batch(self, sample: SampleBatch) -> tuple[NamedArray, dict[str, Any]]:
        """Training units with targets: valid rows ``[N]`` (feed-forward) or streams ``[B, T]``."""
        advantage, returns, old_value = targets(self, sample)
        mask = segment_mask(sample.done, sample.truncated)
        rows = NamedArray(obs=sample.obs[:-1], action=sample.action[:-1],
                          log_prob=sample.log_prob[:-1], value=old_value, advantage=advantage,
                          returns=returns)
        stats = {"valid_rows": float(mask.sum()), **sample_lag(sample, mask, self._policy.version)}
        explained = explained_variance(old_value[mask], returns[mask])
        if math.isfinite(explained):  # (not where the returns are constant)
            stats["explained_variance"] = explained
        if not self.recurrent:
            return self._common(rows[mask]), stats
        recurrent = NamedArray(**dict(rows.items()), policy_state=sample.policy_state[:-1],
                               done=sample.done[:-1], truncated=sample.truncated[:-1], mask=mask)
        return self._common(transpose01(recurrent)), stats

    def _common(self, batch: NamedArray) -> NamedArray:
        """``batch``, or a random part as large as the smallest DDP-synchronized trainer's."""
        n = batch.advantage.shape[0]
        common = common_units(self._policy.approximation, n if self._has_rows(batch) else 0)
        if common == n:
            return batch
        return batch[torch.randperm(n, generator=self.generator)[:common]]

    def _units_per_minibatch(self, batch: NamedArray, size: int | None = None) -> int:
        """Rows (feed-forward) or whole streams (recurrent) per minibatch of ``size`` rows."""
        size = size or self.minibatch_size or batch.returns.numel()
        return max(1, size // batch.returns.shape[1]) if self.recurrent else size

    def _policy_steps(self, batch: NamedArray) -> int:
        n, size = batch.advantage.shape[0], self._units_per_minibatch(batch)
        return self.epochs * math.ceil(n / size)

    def _update(self, batch: NamedArray) -> dict[str, torch.Tensor]:
        """``epochs`` passes of shuffled minibatches; the parts averaged over minibatches."""
        n, size = batch.advantage.shape[0], self._units_per_minibatch(batch)
        whole = size >= n  # (one minibatch holding the whole batch: order is moot)
        advantage = self._advantage(batch.advantage) if whole and not self.recurrent else None
        parts = [self._minibatch_step(minibatch, advantage) for _ in range(self.epochs)
                 for minibatch in ([batch] if whole else self._shuffled(batch, n, size))]
        last, self._last_analysis = self._last_analysis, None
        if last is not None:  # the predictions of the last minibatch
            self.predictions = {"values": last.value.detach(), "log_probs": last.log_prob.detach()}
        return mean_parts(parts)

    def _shuffled(self, units: NamedArray, n: int, size: int) -> list[NamedArray]:
        shuffled = units[torch.randperm(n, generator=self.generator)]
        return [shuffled[start:start + size] for start in range(0, n, size)]

    def _analyze_units(self, units: NamedArray) -> NamedArray:
        options = {} if self._weighs_entropy() else {"entropy": False}
        if not self.recurrent:
            return self._policy.analyze(units, target="ppo", **options)
        return transpose01(self._policy.analyze(transpose01(units), target="ppo", **options))

    def _weighs_entropy(self) -> bool:
        """Whether the loss needs the analysis's entropy."""
        return True

    def _valid(self, units: NamedArray, analysis: NamedArray) -> tuple[NamedArray, NamedArray]:
        """The analysis and the units at valid rows only, flattened."""
        if not self.recurrent:
            return analysis, units
        return analysis[units.mask], units[units.mask]

    def _advantage(self, advantage: torch.Tensor) -> torch.Tensor:
        if self.normalize_advantages and advantage.shape[0] > 1:
            return normalize(advantage)
        return advantage

    def _minibatch_step(self, minibatch: NamedArray, advantage: torch.Tensor | None = None
                        ) -> dict[str, torch.Tensor]:
        """One optimizer step on ``minibatch`` (``advantage``: the loss's, when precomputed)."""
        analysis, rows = self._valid(minibatch, self._analyze_units(minibatch))
        if rows.advantage.shape[0] == 0:
            return self._empty_step(analysis)
        if advantage is None:
            advantage = self._advantage(rows.advantage)
        loss, parts = self._loss(analysis, rows, advantage)
        self._policy.approximation.reinforce(loss)
        self._last_analysis = analysis  # (``predictions`` are made once, after the update)
        return parts

    def _empty_step(self, analysis: NamedArray) -> dict[str, torch.Tensor]:
        """No step, but a zero-gradient one under DDP (each backward is a collective)."""
        if getattr(self._policy.approximation, "process_group", None) is not None:
            self._policy.approximation.reinforce(0.0 * analysis.value.sum())
        return {}

    def _begin_update(self, optimizer_steps: int) -> None:
        """Start the schedule's rate for ``optimizer_steps`` steps (unless ``hp/lr`` dropped it)."""
        if self._lr_schedule is not None and (
                self._policy.approximation.lr_scheduler is self._lr_schedule):
            self._lr_schedule.start(self.updates, optimizer_steps)


def targets(trainer: OnPolicyTrainer, sample: SampleBatch) -> tuple[torch.Tensor, ...]:
    """``(advantage, returns, old value)``, each ``[T, B]``: GAE from the stored values, or
    V-trace (``trainer.vtrace``) from the policy's."""
    gamma, lam = trainer.discount_factor, trainer.gae_lambda
    if sample.value is not None and sample.value.shape != sample.reward.shape:
        raise ValueError(f"{type(trainer).__name__} takes one value per row, but the policy's "
                         f"rollout gave rows of shape {tuple(sample.value.shape[2:])}: return "
                         "RolloutResult(value=...) of shape [rows]")
    if not trainer.vtrace:
        advantage, returns, _ = segment_gae(sample.reward, sample.value, sample.done,
                                            sample.truncated, gamma, lam)
        return advantage, returns, sample.value[:-1].float()
    with torch.no_grad():
        analysis = trainer.policy.analyze(sample, target="ppo")
    returns, advantage = vtrace(sample.log_prob[:-1], analysis.log_prob[:-1], sample.reward,
                                analysis.value, sample.done, sample.truncated, gamma, lam,
                                trainer.clip_rho, trainer.clip_c)
    value = sample.value if sample.value is not None else analysis.value
    return advantage, returns, value[:-1].float()


def mean_parts(parts: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The mean of each loss part over the minibatches that stepped (``{}``: skipped ones)."""
    parts = [step for step in parts if step]
    if not parts:
        return {}
    return {key: torch.stack([p[key] for p in parts]).mean(0) for key in parts[0]}


class OnPolicyAgent(SegmentAgent, ParallelAgent):
    """Local agent over ``n_envs`` parallel environments that learns from each fresh segment of
    ``n_steps`` rows (PPO, PPG, A2C, VAC; with ``n_steps=1`` VQN and VSarsa)."""

    def __init__(self, policy: Policy, trainer: Trainer, n_envs: int, n_steps: int = 128,
                 logger: Logger | None = None):
        super().__init__(policy, trainer, SegmentBuffer(n_steps, n_envs), logger)
        self.n_steps = n_steps  # (the parallel experiments' collector cuts segments as long)

