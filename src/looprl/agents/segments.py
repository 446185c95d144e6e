"""What the policies and trainers share: their bases (``ApproximationPolicy``,
``PolicyTrainer``), and checks and statistics of the ``SampleBatch`` segments they learn from."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.core import Policy, SampleBatch, Trainer
from looprl.core.namedarray import NamedArray, recursive_apply


class ApproximationPolicy(Policy):
    """A ``Policy`` whose parameters are those of one ``Approximation``, its ``approximation``."""

    approximation: Any

    @property
    def module(self) -> nn.Module:
        return self.approximation.model

    net = module  # (SRL's ``SingleModelPytorchPolicy`` names: a trainer of your own uses them)

    def parameters(self) -> Any:
        """The network's parameters (a trainer of your own builds its optimizer over them)."""
        return self.module.parameters()

    def approximations(self) -> dict[str, Any]:
        return {self.approximation.name: self.approximation}


class PolicyTrainer(Trainer):
    """A ``Trainer`` of the policy it was made with (its ``_policy``)."""

    @property
    def policy(self) -> Any:
        return self._policy


def on_device(batch: SampleBatch, device: torch.device) -> SampleBatch:
    """``batch`` as torch tensors on ``device``'s kind (moved only if numpy or elsewhere)."""
    reward = batch.reward
    if isinstance(reward, torch.Tensor) and reward.device.type == device.type:
        return batch
    return batch.to(device)


def prepare_sample(sample: SampleBatch, device: Any, trainer: str, required: tuple[str, ...]
                   ) -> SampleBatch:
    """``sample`` as torch tensors on ``device``, checked to be ``[T + 1, B]`` segments
    (``ValueError``: a required field missing, a bad shape)."""
    missing = [name for name in required if getattr(sample, name, None) is None]
    if missing:
        raise ValueError(f"{trainer} trainer: the sample lacks field(s) {missing}; actors must "
                         "record them")
    sample = sample.to(device)
    if sample.reward.dim() != 2 or sample.reward.shape[0] < 2:
        raise ValueError(f"{trainer} trainer: reward must be [T + 1, B] with T >= 1, "
                         f"got shape {tuple(sample.reward.shape)}")
    return sample


def transpose01(x: NamedArray) -> NamedArray:
    """Swap the two leading dimensions of every leaf (time-major <-> stream-major)."""
    return recursive_apply(x, lambda leaf: leaf.transpose(0, 1))


def common_units(approximation: Any, n: int) -> int:
    """The fewest of ``n`` over the processes ``approximation`` averages gradients with (DDP
    trainers must take equally many steps); ``n`` itself when it trains alone."""
    group = getattr(approximation, "process_group", None)
    if group is None:
        return n
    count = torch.tensor([n], dtype=torch.int64)
    torch.distributed.all_reduce(count, op=torch.distributed.ReduceOp.MIN, group=group)
    return int(count)


def explained_variance(values: torch.Tensor, returns: torch.Tensor) -> float:
    """``1 - Var(returns - values) / Var(returns)`` (nan when the returns are constant)."""
    if returns.numel() < 2:
        return float("nan")
    variance = returns.var()
    return float(1.0 - (returns - values).var() / variance) if variance > 0 else float("nan")


def sample_lag(sample: SampleBatch, mask: torch.Tensor, version: int) -> dict[str, float]:
    """Mean and max ``version - policy_version`` of the training rows (empty if unrecorded)."""
    versions = sample.policy_version
    if versions is None:
        return {}
    lag = (version - versions[:-1].reshape(mask.shape)[mask]).float()
    if lag.numel() == 0:
        return {}
    return {"sample_lag": float(lag.mean()), "sample_lag_max": float(lag.max())}


def scalars(stats: dict[str, Any]) -> dict[str, float]:
    """Statistics as plain floats (picklable, loggable)."""
    return {key: float(value) for key, value in stats.items()}
