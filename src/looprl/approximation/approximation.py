"""``Approximation``: a model, its optimizer and everything around an update (seed 003)."""

from __future__ import annotations

import inspect
import math
import os
from typing import Any

import torch
from torch import nn

from looprl.approximation.adam_step import AdamStep
from looprl.approximation.target import (
    Checkpointer,
    DummyCheckpointer,
    TargetNetwork,
    TrivialTarget,
)
from looprl.core.hyperparameter import Hyperparameter, merge_hyperparameters
from looprl.core.suggest import check_count, check_device, is_number

__all__ = ["Approximation", "Identity", "JointApproximation", "data_parallel"]

_DENORMAL = 5e-324  # the smallest double, read as 0 where denormals are flushed


def flushing_denormals() -> bool:
    """Whether denormal floats are flushed to zero now (``torch.set_flush_denormal``'s flag)."""
    return _DENORMAL * 1.0 == 0.0


class Approximation:
    """A function approximator: forward passes, updates and their bookkeeping.

    Args:
        optimizer: over ``model``'s parameters; required by ``reinforce``/``step``.
        clip_grad: maximum gradient norm; ``0`` disables clipping.
        device: default: that of the model's parameters, else CPU.
        loss_scaling: factor the loss is multiplied by before ``backward``.
        name: used in log keys (``loss/<name>``) and checkpoint file names.
        scheduler: an lr scheduler stepped after every update (``lr_scheduler``: the same).
        target: a ``TargetNetwork`` (default: the model itself).
        log_every: log the loss and lr (and check the loss off the CPU) every this many updates.
        flush_denormal: on the CPU, step with denormal floats flushed to zero (faster).
        functional_step: step a plain ``Adam``/``AdamW`` through ``AdamStep`` (no step hooks).
    """

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 checkpointer: Checkpointer | None = None, clip_grad: float = 0,
                 device: str | torch.device | None = None, loss_scaling: float = 1,
                 name: str = "approximation", scheduler: Any = None,
                 target: TargetNetwork | None = None, logger: Any = None, log_every: int = 100,
                 flush_denormal: bool = True, *, lr_scheduler: Any = None,
                 functional_step: bool = True):
        check_count(log_every=log_every)
        if not isinstance(name, str):  # (its hp/lr/<name> key and checkpoint file name)
            raise TypeError(f"Approximation's name is a str, got {type(name).__name__} "
                            f"{name!r:.40}")
        _check_parts(model, optimizer, clip_grad, loss_scaling, target, checkpointer,
                     scheduler if scheduler is not None else lr_scheduler)
        if scheduler is not None and lr_scheduler is not None:
            raise ValueError("Approximation got both scheduler and lr_scheduler (the same "
                             "thing under two names): pass one")
        self.model = model
        self.name = name
        self._params = list(model.parameters())
        default = self._params[0].device if self._params else "cpu"  # (the first parameter's)
        self.device = torch.device(check_device(device) if device is not None else default)
        self.optimizer = optimizer
        self._adam = AdamStep(optimizer, self._params) if functional_step and type(
            optimizer) in (torch.optim.Adam, torch.optim.AdamW) else None
        self.logger = logger
        self._cpu = len({(p.device, p.dtype) for p in self._params}) <= 1 and all(
            p.device.type == "cpu" for p in self._params)  # (one dtype: no grouping needed)
        self._small = self._cpu and sum(p.numel() for p in self._params) <= _SMALL
        self._flush_denormal = flush_denormal and self.device.type == "cpu"
        self._clip_grad = float(clip_grad)
        self._loss_scaling = loss_scaling
        self.lr_scheduler = lr_scheduler if scheduler is None else scheduler
        self._log_every = log_every
        self._updates = 0
        #: the gradient norm before clipping at the last step, when it clips or tracks it
        self.grad_norm: torch.Tensor | None = None
        self.track_grad_norm = False
        self._target = target if target is not None else TrivialTarget()
        self._target.init(model)
        self._checkpointer = checkpointer if checkpointer is not None else DummyCheckpointer()
        log_dir = getattr(logger, "log_dir", None)
        self._checkpointer.init(model, os.path.join(log_dir or "", f"{name}.pt"))

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """``hp/lr/<name>`` (setting it drops ``lr_scheduler``) and the target's key."""
        found = self._target.hyperparameters()
        if self.optimizer is not None:
            found[f"hp/lr/{self.name}"] = Hyperparameter(
                lambda: float(self.optimizer.param_groups[0]["lr"]), self._set_lr, float)
        return found

    def _set_lr(self, value: Any) -> None:
        self.lr_scheduler = None  # the caller now drives the learning rate
        for group in self.optimizer.param_groups:
            group["lr"] = float(value)

    #: the DDP wrapper of ``model`` once ``distribute`` is called
    _ddp: nn.Module | None = None

    def __call__(self, *inputs: Any) -> Any:
        """Forward pass through the model, tracking gradients."""
        return self.model(*inputs) if self._ddp is None else self._ddp(*inputs)

    def no_grad(self, *inputs: Any) -> Any:
        """Forward pass under ``torch.no_grad()``."""
        with torch.set_grad_enabled(False):
            return self.model(*inputs)

    def eval(self, *inputs: Any) -> Any:
        """Forward pass in eval mode under ``torch.no_grad()``; the mode is then restored."""
        was_training = self.model.training
        if was_training:
            self.model.eval()
        try:
            with torch.set_grad_enabled(False):
                return self.model(*inputs)
        finally:
            if was_training:
                self.model.train()

    def target(self, *inputs: Any) -> Any:
        """Forward pass through the target network, under ``torch.no_grad()``."""
        return self._target(*inputs)

    @property
    def updates(self) -> int:
        """Number of optimizer steps taken so far."""
        return self._updates

    def reinforce(self, loss: torch.Tensor) -> Approximation:
        """Backpropagate ``loss * loss_scaling`` and ``step``."""
        if self.optimizer is None:
            raise self._no_optimizer("reinforce")
        return self._backward(loss).step(loss)

    def _backward(self, loss: torch.Tensor) -> Approximation:
        """Backpropagate ``loss * loss_scaling`` (one number with gradients, else one line)."""
        if not (isinstance(loss, torch.Tensor) and loss.requires_grad):
            raise ValueError(
                f"Approximation '{self.name}'.reinforce(loss) takes a loss tensor with gradients, "
                f"got {loss!r:.60}: compute it from the forward pass f(x), not f.no_grad(x), "
                "f.eval(x), f.target(x) or detached values")
        if loss.numel() != 1:  # (torch's words: "grad can be implicitly created only for ...")
            raise ValueError(
                f"Approximation '{self.name}'.reinforce(loss) takes one number, got a loss of "
                f"shape {tuple(loss.shape)}: reduce it first (loss.mean(), or the loss "
                "function's default reduction='mean')")
        scaled = loss * self._loss_scaling if self._loss_scaling != 1 else loss
        scaled.backward()
        return self

    def step(self, loss: torch.Tensor | None = None) -> Approximation:
        """Clip, step and clear the gradients, then update target, scheduler and checkpointer;
        a NaN/inf loss or clipped gradient norm raises ``FloatingPointError``."""
        if self.optimizer is None:
            raise self._no_optimizer("step")
        logged = self._updates % self._log_every == 0
        if loss is not None and (logged or self.device.type == "cpu"):
            self._check(loss)
        if logged:
            self._log(loss)
        self._optimizer_step(self._adam is not None and self._adam.ready())
        for group in self.optimizer.param_groups:  # zero_grad(set_to_none=True), minus its
            for param in group["params"]:  # dispatch overhead (it shows on small networks)
                param.grad = None
        self._target.update()
        if self.lr_scheduler is not None:
            self.lr_scheduler.step()
        self._checkpointer()
        self._updates += 1
        return self

    def _optimizer_step(self, functional: bool) -> None:
        scale, finite = None, True
        if self._clip_grad > 0 and functional and self._adam.scales:
            self.grad_norm, factor = _clip_factor(self._params, self._clip_grad, self._cpu,
                                                  self._small)
            finite = not self._cpu or factor is None or factor > 0  # (NaN, inf norms: NaN, 0)
            scale = None if factor is None else self._adam.grad_scale(factor)
        elif self._clip_grad > 0:
            self.grad_norm = _clip_gradients(self._params, self._clip_grad, self._cpu,
                                             self._small)
            finite = not self._cpu or math.isfinite(self.grad_norm)
        elif self.track_grad_norm:
            grads = [p.grad for p in self._params if p.grad is not None]
            self.grad_norm = nn.utils.get_total_norm(grads, foreach=True)
        if not finite:
            self.optimizer.zero_grad(set_to_none=True)  # (as ALL's error_if_nonfinite)
            raise FloatingPointError(
                f"Approximation '{self.name}': the gradient norm is {float(self.grad_norm)} at "
                f"update {self._updates} (the loss was finite); nothing was stepped. Look for an "
                "operation in the loss whose gradient is infinite (sqrt or log at 0), or try a "
                "lower learning rate.")
        flush = self._flush_denormal and not flushing_denormals()  # (the CPU: no-ops elsewhere)
        if flush:
            torch.set_flush_denormal(True)
        try:
            if functional:
                self._adam.step(scale)
            else:
                self.optimizer.step()
        finally:
            if flush:
                torch.set_flush_denormal(False)

    def zero_grad(self) -> Approximation:
        """Clear the gradients of the model's parameters."""
        self.model.zero_grad(set_to_none=True)
        return self

    def _check(self, loss: torch.Tensor) -> None:
        """``FloatingPointError`` (gradients cleared, nothing stepped) if ``loss`` is NaN/inf."""
        if loss.dim() == 0 and math.isfinite(loss.item()):  # (the usual case: ~0.3 us)
            return
        loss = loss.detach()
        if not bool(torch.isfinite(loss).all()):
            self.optimizer.zero_grad(set_to_none=True)
            raise FloatingPointError(
                f"Approximation '{self.name}': the loss is {loss.tolist()} at update "
                f"{self._updates}; training diverged. Try a lower learning rate, "
                "gradient clipping (clip_grad) or a smaller loss_scaling.")

    def _log(self, loss: torch.Tensor | None) -> None:
        if self.logger is not None:
            if loss is not None:
                self.logger.add_loss(self.name, loss.detach())
            self.logger.add_schedule(f"{self.name}/lr", self.optimizer.param_groups[0]["lr"])

    def _no_optimizer(self, method: str) -> RuntimeError:
        return RuntimeError(f"Approximation '{self.name}' has no optimizer: pass one to the "
                            f"constructor before calling {method}().")

    def distribute(self, process_group: Any = None,
                   find_unused_parameters: bool = True) -> Approximation:
        """Average gradients over ``process_group`` with DDP (``data_parallel``): every process
        makes as many ``__call__`` passes; copies and pickles are not distributed."""
        self._ddp = data_parallel(self.model, process_group, find_unused_parameters)
        return self

    @property
    def process_group(self) -> Any:
        """The process group gradients are averaged over (``None``: not distributed)."""
        return None if self._ddp is None else self._ddp.process_group

    def __getstate__(self) -> dict[str, Any]:  # (a process group neither pickles nor copies)
        return {key: value for key, value in self.__dict__.items() if key != "_ddp"}

    def parameters(self) -> Any:
        """The model's parameters."""
        return self.model.parameters()

    def state_dict(self) -> dict[str, Any]:
        """The model's ``state_dict``."""
        return self.model.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> Any:
        """Load the model's ``state_dict`` and copy it into the target network."""
        result = self.model.load_state_dict(state_dict, strict=strict)
        self._target.sync()
        return result


class Identity(Approximation):
    """``f(x) = x`` (``all.approximation.Identity``); ``reinforce`` and ``step`` do nothing."""

    def __init__(self, device: str | torch.device = "cpu", name: str = "identity",
                 **kwargs: Any):
        super().__init__(nn.Identity(), None, device=device, name=name, **kwargs)

    def reinforce(self, loss: Any = None) -> Identity:
        """Nothing to learn (``step``: nothing to update)."""
        return self

    step = reinforce


class JointApproximation(Approximation):
    """Several approximations (``parts``) trained as one (``model`` over their modules):
    ``reinforce(loss)`` backpropagates once, then steps each part with its own optimizer."""

    def __init__(self, model: nn.Module, parts: list[Approximation], name: str):
        self.parts = list(parts)
        super().__init__(model, None, name=name, device=self.parts[0].device)

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The parts' keys (a key they share is set on all)."""
        return merge_hyperparameters(*(part.hyperparameters() for part in self.parts))

    def target(self, *inputs: Any) -> tuple[Any, ...]:
        """Each part's target on ``inputs``."""
        return tuple(part.target(*inputs) for part in self.parts)

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> Any:
        """Load the model's ``state_dict`` and copy it into each part's target network."""
        result = self.model.load_state_dict(state_dict, strict=strict)
        for part in self.parts:
            part._target.sync()
        return result

    def reinforce(self, loss: torch.Tensor) -> JointApproximation:
        return self._backward(loss).step(loss)

    def step(self, loss: torch.Tensor | None = None) -> JointApproximation:
        for part in self.parts:
            part.step(loss)
        self._updates += 1
        return self


def _check_parts(model: Any, optimizer: Any, clip_grad: Any, loss_scaling: Any, target: Any,
                 checkpointer: Any, scheduler: Any) -> None:
    fix = "e.g. Approximation(model, torch.optim.Adam(model.parameters(), lr=1e-3))"
    for name, part, example in (("target", target, "FixedTarget(1000)"),
                                ("checkpointer", checkpointer, "PeriodicCheckpointer(200)")):
        if part is not None and (isinstance(part, type) or not callable(getattr(part, "init",
                                                                                None))):
            raise TypeError(f"Approximation's {name} is an object such as {name}={example} "
                            f"(an instance, not its class), got {part!r:.60}")
    if scheduler is not None and (isinstance(scheduler, type) or not callable(
            getattr(scheduler, "step", None))):  # (a LinearScheduler's step is its counter)
        raise TypeError(f"Approximation's scheduler is a learning-rate scheduler stepped after "
                        f"every update, such as torch.optim.lr_scheduler.StepLR(optimizer, "
                        f"1000) (an instance with a step() method), got {scheduler!r:.60}")
    if not (is_number(clip_grad) and clip_grad >= 0):
        raise ValueError(f"Approximation's clip_grad is the largest gradient norm, a number "
                         f">= 0 (0: no clipping), got {clip_grad!r:.40}")
    if not (is_number(loss_scaling) and loss_scaling > 0):
        raise ValueError(f"Approximation's loss_scaling multiplies the loss, a number > 0, got "
                         f"{loss_scaling!r:.40}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"Approximation's model is a torch nn.Module, got "
                        f"{type(model).__name__} {model!r:.40}; {fix}")
    if any(isinstance(p, nn.parameter.UninitializedParameter) for p in model.parameters()):
        raise ValueError("Approximation's model has uninitialized parameters (a lazy module such "
                         "as nn.LazyLinear): call it once on a batch of observations before "
                         "making the Approximation, e.g. model(torch.zeros(1, *obs_shape))")
    if optimizer is None:
        return
    groups = getattr(optimizer, "param_groups", None)
    if isinstance(optimizer, nn.Module) or not isinstance(groups, list) or not callable(
            getattr(optimizer, "step", None)):
        raise TypeError(f"Approximation's optimizer is a torch.optim.Optimizer, got "
                        f"{type(optimizer).__name__}; {fix}")
    own = {id(p) for p in model.parameters()}
    if own and not own.intersection(id(p) for group in groups for p in group["params"]):
        raise ValueError("Approximation's optimizer updates none of the model's parameters "
                         f"(it was built from another model's); {fix}")


def data_parallel(model: nn.Module, process_group: Any = None,
                  find_unused_parameters: bool = True) -> nn.Module:
    """``model`` in a DDP wrapper over ``process_group``, no collective in forward passes;
    ``find_unused_parameters=False`` where every loss trains all parameters."""
    ddp = nn.parallel.DistributedDataParallel
    no_sync = ("forward_sync_buffers" if "forward_sync_buffers" in inspect.signature(
        ddp).parameters else "broadcast_buffers")
    return ddp(model, process_group=process_group, find_unused_parameters=find_unused_parameters,
               **{no_sync: False})


#: parameters up to which a CPU model's gradient norm is taken over one concatenated vector
_SMALL = 2**15


def _clip_gradients(params: list[torch.Tensor], max_norm: float, cpu: bool,
                    small: bool) -> torch.Tensor:
    """``nn.utils.clip_grad_norm_(params, max_norm, foreach=True)``, faster on one CPU device
    and dtype (``cpu``); returns the norm before clipping."""
    if not cpu:
        return nn.utils.clip_grad_norm_(params, max_norm, foreach=True)
    norm, factor = _clip_factor(params, max_norm, cpu, small)
    if factor is not None:
        for param in params:
            if param.grad is not None:
                param.grad.mul_(factor)
    return norm


def _clip_factor(params: list[torch.Tensor], max_norm: float, cpu: bool, small: bool
                 ) -> tuple[torch.Tensor, float | torch.Tensor | None]:
    """The gradients' norm and clipping's factor (on the CPU a float, ``None``: below 1)."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.tensor(0.0), None
    vector_norm = torch.linalg.vector_norm
    if small:  # (a vector as it is: each ``reshape`` is a dispatch, about a twelfth of the norm)
        norm = vector_norm(torch.cat([g if g.ndim == 1 else g.ravel() for g in grads]))
    elif cpu:  # ``get_total_norm``'s arithmetic (CPU ``_foreach_norm`` is a loop of these)
        norm = vector_norm(torch.stack([vector_norm(g) for g in grads]))
    else:
        norm = nn.utils.get_total_norm(grads, foreach=True)
    if not cpu:
        return norm, torch.clamp(max_norm / (norm + 1e-6), max=1.0)
    factor = max_norm / (norm.item() + 1e-6)
    return norm, (None if factor >= 1.0 else factor)  # (NaN: a factor)

