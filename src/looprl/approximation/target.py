"""Target networks: slowly-moving copies of a model used to compute bootstrap targets.

* ``TrivialTarget`` -- the model itself (no separate target network).
* ``FixedTarget(update_frequency)`` -- a copy, overwritten every ``update_frequency`` updates
  (DQN, Mnih et al. 2015).
* ``PolyakTarget(rate)`` -- a copy moved a fraction ``rate`` towards the model at every
  update (DDPG/SAC soft updates).

Every target is called under ``torch.no_grad()``. Copies are updated tensor by tensor
(``copy_``, ``lerp_``) over precomputed lists of the two modules' tensors.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from typing import Any

import torch
from torch import nn

from looprl.core.hyperparameter import Hyperparameter
from looprl.core.suggest import check_count

__all__ = ["FixedTarget", "PolyakTarget", "TargetNetwork", "TrivialTarget"]


class TargetNetwork(ABC):
    """Interface of target networks: ``init(model)`` once, ``update()`` after each step."""

    _target: nn.Module

    def __call__(self, *inputs: Any) -> Any:
        """Evaluate the target network without tracking gradients."""
        with torch.no_grad():
            return self._target(*inputs)

    @abstractmethod
    def init(self, model: nn.Module) -> None:
        """Attach the target to ``model`` (called by ``Approximation.__init__``)."""

    def update(self) -> None:
        """Called after every optimizer step of the model (a no-op here)."""

    def sync(self) -> None:
        """Copy the model into the target now, e.g. after loading a checkpoint (a no-op
        here)."""

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The ``hp/*`` key of this target's rate (``{}``: none)."""
        return {}


class TrivialTarget(TargetNetwork):
    """The model itself serves as its own target."""

    def init(self, model: nn.Module) -> None:
        self._target = model


class _CopyTarget(TargetNetwork):
    """Base of targets that keep a separate, gradient-free deep copy of the model."""

    def init(self, model: nn.Module) -> None:
        self._source = model
        self._target = copy.deepcopy(model)
        self._target.requires_grad_(False)
        (self._source_tensors, self._target_tensors, self._source_other,
         self._target_other) = _tensor_lists(model, self._target)

    @torch.no_grad()
    def sync(self, rate: float = 1.0) -> None:
        """Move the target a fraction ``rate`` towards the model (1: copy it); buffers that
        are not floating-point are copied."""
        pairs = zip(self._target_tensors, self._source_tensors)
        if rate == 1.0:
            for target, source in pairs:
                target.copy_(source)
        else:
            for target, source in pairs:
                target.lerp_(source, rate)
        for target, source in zip(self._target_other, self._source_other):
            target.copy_(source)


class FixedTarget(_CopyTarget):
    """A copy of the model, hard-updated every ``update_frequency`` updates.

    Args:
        update_frequency: number of ``update()`` calls between copies (``hp/target_period``).
    """

    def __init__(self, update_frequency: int):
        check_count(update_frequency=update_frequency)
        self.update_frequency = update_frequency
        self._updates = 0

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """``hp/target_period``: updates between copies."""
        return {"hp/target_period": Hyperparameter.attribute(self, "update_frequency", int)}

    def update(self) -> None:
        self._updates += 1
        if self._updates % self.update_frequency == 0:
            self.sync()


class PolyakTarget(_CopyTarget):
    """A copy moved towards the model at every update: ``t <- t + rate * (m - t)``.

    Floating-point buffers (e.g. BatchNorm statistics) are averaged the same way; other
    buffers are copied.

    Args:
        rate: interpolation factor in ``(0, 1]`` (often called ``tau``; ``hp/tau``).
    """

    def __init__(self, rate: float):
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"rate must be in (0, 1], got {rate}")
        self.rate = float(rate)

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """``hp/tau``: the interpolation factor."""
        return {"hp/tau": Hyperparameter.attribute(self, "rate", float)}

    def update(self) -> None:
        self.sync(self.rate)


def _tensor_lists(source: nn.Module, target: nn.Module) -> tuple[list, list, list, list]:
    """The parameters and floating-point buffers of two structurally identical modules
    (source's, target's), then their other buffers (e.g. ``num_batches_tracked``)."""
    buffers = list(zip(source.buffers(), target.buffers()))
    floats = list(zip(source.parameters(), target.parameters()))
    floats += [(s, t) for s, t in buffers if s.is_floating_point()]
    other = [(s, t) for s, t in buffers if not s.is_floating_point()]
    return ([s for s, _ in floats], [t for _, t in floats],
            [s for s, _ in other], [t for _, t in other])
