"""Ape-X style DQN trainer on SRL sample segments (Horgan et al., 2018,
https://arxiv.org/abs/1803.00933; priorities as in R2D2, Kapturowski et al., 2019).

``SRLDQNTrainer.step(sample, weights)`` takes ``[T + 1, B]`` segments drawn from a
prioritized replay (``looprl.memory.PrioritizedSegmentReplay``) with their importance weights,
regresses ``Q(s_t, a_t)`` onto n-step double-Q targets with the local ``dqn_loss`` and
``double_q_target``, and returns one new priority per segment.

The policy contract (``looprl.agents.q_policy`` follows it): ``policy.analyze(sample,
target="q")`` returns Q-values ``[..., n_actions]`` (with gradients) for ``sample.obs`` of any
leading shape; ``policy.approximation`` holds the optimizer and ``policy.module`` all
parameters.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from looprl.agents.losses import double_q_target, dqn_loss
from looprl.agents.losses.vtrace import segment_mask
from looprl.agents.srl_common import prepare_sample, reinforce, sample_lag, scalars
from looprl.core import Policy, SampleBatch, Trainer, TrainerStepResult
from looprl.core.namedarray import NamedArray


def n_step_bootstrap(
    reward: torch.Tensor,
    done: torch.Tensor,
    truncated: torch.Tensor,
    gamma: float,
    n_step: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """n-step returns of every row of ``[T + 1, B]`` segments, stopped at episode or segment end.

    For row ``t``, ``K`` is the number of transitions up to ``n_step``, the first episode end
    (``done | truncated`` at row ``t + K``) or row ``T``, whichever comes first.

    Returns:
        ``(returns, bootstrap_row, discount)``, each ``[T, B]``:
        ``returns = sum_{k<K} gamma^k reward[t + 1 + k]``, ``bootstrap_row = t + K`` and
        ``discount = gamma^K``, 0 when row ``t + K`` is terminal (``done``).
    """
    rows, streams = reward.shape[0] - 1, reward.shape[1]
    end = done.bool() | truncated.bool()
    t = torch.arange(rows, device=reward.device).unsqueeze(1).expand(rows, streams)
    returns = torch.zeros(rows, streams, device=reward.device)
    boot = t.clone()
    active = torch.ones(rows, streams, dtype=torch.bool, device=reward.device)
    for k in range(1, n_step + 1):
        index = (t + k).clamp(max=rows)
        step = active & (t + k <= rows)
        gathered = reward.float().gather(0, index)
        returns = returns + torch.where(step, gamma ** (k - 1) * gathered, 0.0)
        boot = torch.where(step, index, boot)
        active = step & ~end.gather(0, index)
    terminal = done.bool().gather(0, boot)
    discount = torch.where(terminal, 0.0, gamma ** (boot - t).float())
    return returns, boot, discount


class SRLDQNTrainer(Trainer):
    """n-step double Q-learning on prioritized ``[T + 1, B]`` segments (Ape-X).

    Registered as ``Trainer(type_="dqn", ...)``. Each ``step`` takes one gradient step,
    increments ``policy.version`` and, every ``target_update`` steps, copies the online
    parameters into the target network (a copy of the policy).

    Args:
        policy: a Q policy (see the module docstring).
        discount_factor: gamma.
        n_step: transitions per return (cut at episode and segment ends).
        target_update: steps between target network updates.
        double_q: let the online network pick the bootstrap action (else max of the target).
        max_grad_norm: clip the global gradient norm (``None``/0: off).
        huber: Huber loss (else squared error), as in ``dqn_loss``.
        priority_eta: R2D2's mix of max and mean absolute TD error per segment.
        seed: unused (no randomness); accepted for a uniform trainer signature.
    """

    #: the trainer-side buffer the runtime pairs with it (``looprl.memory.make_sample_buffer``)
    sample_buffer = "prioritized"

    def __init__(
        self,
        policy: Policy,
        discount_factor: float = 0.99,
        n_step: int = 3,
        target_update: int = 500,
        double_q: bool = True,
        max_grad_norm: float | None = 10.0,
        huber: bool = True,
        priority_eta: float = 0.9,
        seed: int | None = None,
    ):
        if n_step < 1 or target_update < 1:
            raise ValueError(
                f"n_step and target_update must be >= 1, got {n_step}, {target_update}"
            )
        self._policy = policy
        self.discount_factor = discount_factor
        self.n_step = n_step
        self.target_update = target_update
        self.double_q = double_q
        self.max_grad_norm = max_grad_norm
        self.huber = huber
        self.priority_eta = priority_eta
        self.seed = seed
        self.steps = 0
        self.target_policy = _frozen_copy(policy)

    @property
    def policy(self) -> Policy:
        return self._policy

    def step(  # type: ignore[override]
        self, sample: SampleBatch, weights: Any = None
    ) -> TrainerStepResult:
        """One update on ``sample`` (``[T + 1, B]`` segments).

        Args:
            sample: segments with ``obs``, ``action``, ``reward``, ``done``, ``truncated``.
            weights: importance weights ``[B]`` of the segments (``None``: all 1), as
                ``PrioritizedSegmentReplay.sample`` returns them.

        Returns:
            ``TrainerStepResult`` with ``priorities`` ``[B]`` (a CPU float tensor) for
            ``PrioritizedSegmentReplay.update_priorities``.
        """
        required = ("obs", "action", "reward", "done", "truncated")
        sample = prepare_sample(sample, self._policy.device, "dqn", required)
        mask = segment_mask(sample.done, sample.truncated)
        values, targets = self._values_and_targets(sample)
        weight = self._weights(weights, sample).expand_as(values)
        loss = dqn_loss(values[mask], targets[mask], weight[mask], huber=self.huber)
        lag = sample_lag(sample, mask, self._policy.version)
        reinforce(self._policy.approximation, loss, self.max_grad_norm)
        self.steps += 1
        self._policy.version += 1
        if self.steps % self.target_update == 0:
            self.target_policy.module.load_state_dict(self._policy.module.state_dict())
        td = (targets - values).detach().abs()
        self.predictions = {"q_values": values[mask].detach()}
        stats = {"loss": loss.detach(), "q": values[mask].detach().mean(), "td": td[mask].mean()}
        stats.update(lag)
        return TrainerStepResult(scalars(stats), self.steps, self._priorities(td, mask))

    def _values_and_targets(self, sample: SampleBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """``Q(s_t, a_t)`` (with gradients) and the n-step double-Q targets, ``[T, B]``."""
        q = self._policy.analyze(NamedArray(obs=sample.obs), target="q")
        action = sample.action[:-1].long().reshape(q.shape[0] - 1, q.shape[1], 1)
        values = q[:-1].gather(-1, action).squeeze(-1)
        returns, boot, discount = n_step_bootstrap(
            sample.reward, sample.done, sample.truncated, self.discount_factor, self.n_step
        )
        with torch.no_grad():
            target_q = self.target_policy.analyze(NamedArray(obs=sample.obs), target="q")
            index = boot.unsqueeze(-1).expand(*boot.shape, q.shape[-1])
            next_target = target_q.gather(0, index)
            next_online = q.detach().gather(0, index) if self.double_q else next_target
            targets = double_q_target(
                returns, next_online, next_target, torch.ones_like(returns), discount
            )
        return values, targets

    def _weights(self, weights: Any, sample: SampleBatch) -> torch.Tensor:
        streams = sample.reward.shape[1]
        if weights is None:
            return torch.ones(1, streams, device=sample.reward.device)
        weights = torch.as_tensor(weights, dtype=torch.float32, device=sample.reward.device)
        if weights.shape != (streams,):
            raise ValueError(
                f"dqn trainer: weights must be [B={streams}], got {tuple(weights.shape)}"
            )
        return weights.unsqueeze(0)

    def _priorities(self, td: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """R2D2: ``eta * max|td| + (1 - eta) * mean|td|`` over each segment's training rows."""
        td = torch.where(mask, td, 0.0)
        count = mask.sum(0).clamp(min=1)
        eta = self.priority_eta
        priorities = eta * td.max(0).values + (1.0 - eta) * td.sum(0) / count
        return priorities.clamp(min=1e-6).cpu()


def _frozen_copy(policy: Policy) -> Policy:
    """A deep copy of ``policy`` for target values: its optimizer and logger are shared, not
    copied, and its parameters need no gradients."""
    memo: dict[int, Any] = {}
    approximation = getattr(policy, "approximation", None)
    for name in ("optimizer", "logger"):
        shared = getattr(approximation, name, None)
        if shared is not None:
            memo[id(shared)] = shared
    target = copy.deepcopy(policy, memo)
    for parameter in target.module.parameters():
        parameter.requires_grad_(False)
    return target
