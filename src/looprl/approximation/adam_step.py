"""``AdamStep``: the step of a plain ``torch.optim.Adam``/``AdamW`` as one call of torch's
public functional ``torch.optim.adam.adam`` per parameter group.

``Optimizer.step()`` spends most of its time on a small network in Python: the step wrapper
(hooks, profiling, grad mode) and ``_init_group``, which collects the state tensors of every
parameter anew at every step. ``AdamStep`` keeps those lists between steps (rebuilt when the
optimizer's ``state`` or ``param_groups`` are replaced: ``load_state_dict``, a copy, an
unpickling) and hands them to ``torch.optim.adam.adam`` with the group's own settings
(``fused``, ``foreach``, ``lr``, ``betas``, ``eps``, ``weight_decay``, ``amsgrad``,
``maximize``, AdamW's decoupled weight decay): the parameters, the optimizer state and its
``state_dict()`` are exactly those of ``optimizer.step()``.

A fused group also takes gradient clipping's factor into the kernel (``grad_scale``: each
gradient is divided by ``1 / factor`` as it is read) instead of a multiplication per gradient
first: the same update up to the rounding of that division.

``optimizer.step()`` itself runs instead before the optimizer has state (its first step
makes it), when a parameter has no gradient (Adam leaves such parameters alone), for a
``differentiable`` or ``capturable`` group, and under a ``GradScaler``. Step hooks
registered on the optimizer do not run on the functional path:
``Approximation(..., functional_step=False)`` steps through ``optimizer.step()``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.optim.adam import adam

__all__ = ["AdamStep"]

_STATE = ("exp_avg", "exp_avg_sq")


class AdamStep:
    """Steps ``optimizer`` (exactly a ``torch.optim.Adam`` or ``AdamW``) through
    ``torch.optim.adam.adam``; see the module docstring.

    Call ``ready()`` first: whether the functional step applies now (else call
    ``optimizer.step()``); then ``step(grad_scale)``.

    Args:
        optimizer: the optimizer to step.
        clipped: the parameters whose gradients the clipping factor applies to (the model's);
            the factor goes into the kernel only where they are the optimizer's, all in fused
            groups (``scales``).
    """

    def __init__(self, optimizer: torch.optim.Optimizer, clipped: list[torch.Tensor]):
        self.optimizer = optimizer
        self._clipped = list(clipped)  # (objects, not ids: copies map them)
        self._reset()

    @staticmethod
    def fits(optimizer: Any) -> bool:
        """Whether ``optimizer`` is exactly a ``torch.optim.Adam`` or ``AdamW`` (a subclass may
        step otherwise)."""
        return type(optimizer) in (torch.optim.Adam, torch.optim.AdamW)

    def _reset(self) -> None:
        self._key: tuple[Any, ...] | None = None  # what ``_groups`` were built from
        self._groups: list[tuple[dict[str, Any], list[torch.Tensor], tuple[list, ...]]] = []
        #: whether ``step`` takes gradient clipping's factor (``grad_scale``) into the kernel
        self.scales = False
        self._scale: torch.Tensor | None = None

    def ready(self) -> bool:
        """Whether the functional step applies now: the optimizer has state for every
        parameter, and every parameter has a gradient."""
        opt = self.optimizer
        key = (opt.state, opt.param_groups, *(len(g["params"]) for g in opt.param_groups))
        if self._key is None or key[0] is not self._key[0] or key[1] is not self._key[1] \
                or key[2:] != self._key[2:]:
            self._groups = self._build()
            self._key = key if self._groups else None
        if self._key is None or getattr(opt, "grad_scale", None) is not None \
                or getattr(opt, "found_inf", None) is not None:  # (a GradScaler's)
            return False
        return all(p.grad is not None for _, params, _ in self._groups for p in params)

    def grad_scale(self, factor: float | torch.Tensor) -> torch.Tensor:
        """What the kernel divides every gradient by to multiply it by ``factor`` (a number,
        or a 0-d tensor on the parameters' device): a float32 0-d tensor (for a number, one
        per stepper, refilled)."""
        if isinstance(factor, torch.Tensor):
            return torch.reciprocal(factor.to(torch.float32))
        scale = self._scale
        if scale is None:
            device = self._groups[0][1][0].device
            scale = self._scale = torch.empty((), dtype=torch.float32, device=device)
        return scale.fill_(1.0 / factor if factor else math.inf)  # (x / inf = x * 0)

    def step(self, grad_scale: torch.Tensor | None = None) -> None:
        """One step of every group (after ``ready()`` said so); ``grad_scale`` (only where
        ``scales``): what each gradient is divided by first."""
        with torch.no_grad():
            for group, params, lists in self._groups:
                beta1, beta2 = group["betas"]
                adam(params, [p.grad for p in params], *lists, foreach=group["foreach"],
                     fused=group["fused"], grad_scale=grad_scale, decoupled_weight_decay=group.get(
                         "decoupled_weight_decay", False), amsgrad=group["amsgrad"],
                     beta1=beta1, beta2=beta2, lr=group["lr"],
                     weight_decay=group["weight_decay"], eps=group["eps"],
                     maximize=group["maximize"])

    def _build(self) -> list[tuple[dict[str, Any], list[torch.Tensor], tuple[list, ...]]]:
        """Each group's parameters and state lists; empty if a state is missing (before the
        first step) or a group does not fit the functional step."""
        groups = []
        for group in self.optimizer.param_groups:
            params = list(group["params"])
            keys = _STATE + (("max_exp_avg_sq",) if group["amsgrad"] else ())
            states = [self.optimizer.state.get(p) for p in params]
            if group["differentiable"] or group["capturable"] or any(
                    not s or "step" not in s or any(k not in s for k in keys) for s in states) \
                    or any(torch.is_complex(p) for p in params):
                return []
            if not params:
                continue
            lists = tuple([s[k] for s in states] for k in keys)
            max_sqs = lists[2] if group["amsgrad"] else []
            groups.append((group, params, (*lists[:2], max_sqs, [s["step"] for s in states])))
        stepped = {id(p) for _, params, _ in groups for p in params}
        self.scales = bool(groups) and stepped == {id(p) for p in self._clipped} and all(
            group["fused"] for group, _, _ in groups)
        return groups
