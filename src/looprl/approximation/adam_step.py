"""``AdamStep``: ``optimizer.step()`` of a plain ``Adam``/``AdamW`` as one functional
``torch.optim.adam.adam`` call per group, the state lists kept between steps; step hooks do not
run. A fused group takes clipping's factor into the kernel (``grad_scale``)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.optim.adam import adam

__all__ = ["AdamStep"]

_STATE = ("exp_avg", "exp_avg_sq")


class AdamStep:
    """Steps ``optimizer`` through ``torch.optim.adam.adam`` when ``ready()``; ``clipped``: the
    parameters clipping applies to (``scales``: they are the optimizer's, all fused)."""

    def __init__(self, optimizer: torch.optim.Optimizer, clipped: list[torch.Tensor]):
        self.optimizer = optimizer
        self._clipped = list(clipped)  # (objects, not ids: copies map them)
        self._key: tuple[Any, ...] | None = None  # what ``_groups`` were built from
        self._groups: list[tuple[dict[str, Any], list[torch.Tensor], tuple[list, ...]]] = []
        self.scales = False
        self._scale: torch.Tensor | None = None

    def ready(self) -> bool:
        """Whether the functional step applies now (state and gradients for all)."""
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
        """The 0-d tensor the kernel divides gradients by to multiply them by ``factor``."""
        if isinstance(factor, torch.Tensor):
            return torch.reciprocal(factor.to(torch.float32))
        scale = self._scale
        if scale is None:
            device = self._groups[0][1][0].device
            scale = self._scale = torch.empty((), dtype=torch.float32, device=device)
        return scale.fill_(1.0 / factor if factor else math.inf)  # (x / inf = x * 0)

    def step(self, grad_scale: torch.Tensor | None = None) -> None:
        """One step of every group; ``grad_scale`` (where ``scales``) divides the gradients."""
        with torch.set_grad_enabled(False):  # (no_grad, cheaper to enter)
            for group, params, lists in self._groups:
                beta1, beta2 = group["betas"]
                adam(params, [p.grad for p in params], *lists, foreach=group["foreach"],
                     fused=group["fused"], grad_scale=grad_scale, decoupled_weight_decay=group.get(
                         "decoupled_weight_decay", False), amsgrad=group["amsgrad"],
                     beta1=beta1, beta2=beta2, lr=group["lr"],
                     weight_decay=group["weight_decay"], eps=group["eps"],
                     maximize=group["maximize"])

    def _build(self) -> list[tuple[dict[str, Any], list[torch.Tensor], tuple[list, ...]]]:
        """Each group's parameters and state lists; empty where the step does not fit."""
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
