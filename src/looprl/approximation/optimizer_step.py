"""``OptimizerStep``: ``optimizer.step()`` without its per-call Python work, where that is safe.

``torch.optim.Adam(..., fused=True).step()`` spends most of its time on a small network in
Python: the step wrapper (hooks, profiling, grad mode), ``_init_group`` collecting the state
tensors of every parameter anew, and grouping them by device and dtype. The arithmetic is two
kernel calls (``_foreach_add_`` on the step counts, then ``_fused_adam_``). ``OptimizerStep``
keeps the state lists between steps and makes those two calls itself, with the arguments
``Adam.step`` would pass: the parameters, optimizer state and results are exactly those of
``optimizer.step()``. The step counts (one 0-d tensor per parameter, each incremented by its
own small kernel) become views of one tensor, incremented by one ``add_``; their values and
``state_dict()`` are unchanged. Every other optimizer, and a fused Adam with step hooks, gradient
scaling, tensor learning rates or betas, or mixed devices/dtypes, takes ``optimizer.step()``.

A step can scale the gradients first (``grad_factor``: gradient clipping's factor). The lean path
hands the factor to the kernel, which divides each gradient by ``grad_scale = 1 / grad_factor``
as it reads it (the gradient scaler's argument), instead of a multiplication per gradient before
the step: the same update up to the rounding of that division.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.optim import optimizer as optimizer_module

__all__ = ["OptimizerStep"]

_FUSED_KERNELS = hasattr(torch, "_fused_adam_") and hasattr(torch, "_fused_adamw_")


class OptimizerStep:
    """Calls ``optimizer.step()``, or its two kernels directly for a fused ``Adam``/``AdamW``
    (see the module docstring). The state lists are rebuilt when the optimizer's state or
    parameter groups are replaced (``load_state_dict``, ``add_param_group``).

    Args:
        optimizer: the optimizer to step.
        scaled: the parameters whose gradients ``grad_factor`` multiplies (default: the
            optimizer's). The kernel takes the factor only where they are the optimizer's.
    """

    def __init__(self, optimizer: torch.optim.Optimizer,
                 scaled: list[torch.Tensor] | None = None):
        self.optimizer = optimizer
        self._lean = _FUSED_KERNELS and type(optimizer) in (torch.optim.Adam, torch.optim.AdamW)
        self._scaled = scaled
        self._key: tuple[Any, ...] | None = None  # what the lists below were built from
        self._groups: list[tuple[dict[str, Any], list[torch.Tensor], tuple[list, ...]]] = []
        self._factor_in_kernel = False  # whether ``scaled`` are the optimizer's parameters
        self._scale: torch.Tensor | None = None  # (``_grad_scale``)

    def __call__(self, grad_factor: float | torch.Tensor | None = None) -> None:
        """One ``optimizer.step()`` on the gradients times ``grad_factor`` (a number, or a 0-d
        tensor on the parameters' device; ``None``: the gradients as they are)."""
        grads = self._lean_grads()
        if grad_factor is not None and (grads is None or not self._factor_in_kernel):
            self._multiply(grad_factor)
            grad_factor = None
        if grads is None:
            self.optimizer.step()
            return
        scale = None if grad_factor is None else self._grad_scale(grad_factor)
        with torch.no_grad():
            for (group, params, lists), group_grads in zip(self._groups, grads):
                _fused_step(group, params, group_grads, *lists, scale)

    def _lean_grads(self) -> list[list[torch.Tensor]] | None:
        """Each group's gradients when the lean step applies now, else ``None``."""
        if not self._lean or not self._ready():
            return None
        grads = []
        for group, params, _ in self._groups:
            group_grads = [p.grad for p in params]
            if any(g is None for g in group_grads) or not _plain(group):
                return None  # (Adam leaves out parameters without gradients)
            grads.append(group_grads)
        return grads

    def _multiply(self, grad_factor: float | torch.Tensor) -> None:
        """The gradients of ``scaled`` times ``grad_factor``, in place."""
        params = self._scaled if self._scaled is not None else [
            p for group in self.optimizer.param_groups for p in group["params"]]
        grads = [p.grad for p in params if p.grad is not None]
        if grads:
            with torch.no_grad():
                torch._foreach_mul_(grads, grad_factor)

    def _grad_scale(self, grad_factor: float | torch.Tensor) -> torch.Tensor:
        """``1 / grad_factor`` as the float32 0-d tensor the kernel reads (one per stepper,
        refilled: no tensor made per step for a number)."""
        if isinstance(grad_factor, torch.Tensor):
            return torch.reciprocal(grad_factor.to(torch.float32))
        scale = self._scale
        if scale is None:
            device = self._groups[0][1][0].device
            scale = self._scale = torch.empty((), dtype=torch.float32, device=device)
        return scale.fill_(1.0 / grad_factor if grad_factor else math.inf)  # (x / inf = x * 0)

    def _ready(self) -> bool:
        """Whether the lean step applies now (building the state lists if needed)."""
        opt = self.optimizer
        if (opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks
                or optimizer_module._global_optimizer_pre_hooks
                or optimizer_module._global_optimizer_post_hooks
                or getattr(opt, "grad_scale", None) is not None
                or getattr(opt, "found_inf", None) is not None):
            return False
        key = (opt.state, opt.param_groups, *(len(group["params"]) for group in opt.param_groups))
        if self._key is None or any(a is not b for a, b in zip(key[:2], self._key[:2])) \
                or key[2:] != self._key[2:]:
            self._groups = self._build()
            self._key = key if self._groups else None
            stepped = {id(p) for _, params, _ in self._groups for p in params}
            self._factor_in_kernel = self._scaled is None or stepped == {
                id(p) for p in self._scaled}
        return bool(self._groups)

    def _build(self) -> list[tuple[dict[str, Any], list[torch.Tensor], tuple[list, ...]]]:
        """Each group's parameters and state lists; empty if a state is missing (before the
        first step) or a group does not fit the two kernels."""
        groups = []
        for group in self.optimizer.param_groups:
            params = list(group["params"])
            states = [self.optimizer.state.get(p) for p in params]
            if not params or any(not s or "step" not in s for s in states):
                return []
            if len({(p.device, p.dtype) for p in params}) != 1 or params[0].is_complex():
                return []
            steps = [s["step"] for s in states]
            if any(not isinstance(t, torch.Tensor) or t.device != params[0].device
                   or t.dim() != 0 or t.dtype != steps[0].dtype for t in steps):
                return []
            counts = torch.stack(steps)  # the step counts as views of one tensor: one add_
            for i, state in enumerate(states):  # a step instead of one per parameter
                state["step"] = counts[i]
            amsgrad = group["amsgrad"]
            lists = ([s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                     [s["max_exp_avg_sq"] for s in states] if amsgrad else [],
                     [s["step"] for s in states], counts)
            groups.append((group, params, lists))
        return groups


def _plain(group: dict[str, Any]) -> bool:
    """Whether ``group``'s settings are those the lean step passes through unchanged."""
    beta1, beta2 = group["betas"]
    return (bool(group.get("fused")) and not group["differentiable"]
            and not group["capturable"] and not isinstance(group["lr"], torch.Tensor)
            and not isinstance(beta1, torch.Tensor) and not isinstance(beta2, torch.Tensor))


def _fused_step(group: dict[str, Any], params: list[torch.Tensor], grads: list[torch.Tensor],
                exp_avgs: list[torch.Tensor], exp_avg_sqs: list[torch.Tensor],
                max_exp_avg_sqs: list[torch.Tensor], steps: list[torch.Tensor],
                counts: torch.Tensor, grad_scale: torch.Tensor | None = None) -> None:
    """The two kernel calls of ``torch.optim.adam._fused_adam`` for one group (``counts``:
    the tensor whose elements ``steps`` are, so ``_foreach_add_(steps, 1)`` is one add;
    ``grad_scale``: what every gradient is divided by first)."""
    beta1, beta2 = group["betas"]
    counts.add_(1)
    kernel = torch._fused_adamw_ if group.get("decoupled_weight_decay") else torch._fused_adam_
    kernel(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps,
           amsgrad=group["amsgrad"], lr=group["lr"], beta1=beta1, beta2=beta2,
           weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
           grad_scale=grad_scale, found_inf=None)
