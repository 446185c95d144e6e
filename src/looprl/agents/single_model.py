"""``SingleModelPytorchPolicy``: the base of a user's own policy over one ``nn.Module`` (seed 004).

Subclass it, hand your network to ``super().__init__``, then write ``default_policy_state``,
``rollout`` and ``analyze``; the base gives a device (``"cpu"`` by default, unlike SRL's), a
``version``, DDP (``distributed()``: ``net`` is then the wrapper) and checkpoints loadable
with ``torch.load(..., weights_only=True)``; ``looprl.nn.fields.observation_tensor`` reads obs::

    class MyPolicy(SingleModelPytorchPolicy):
        def __init__(self, hidden: int = 64, device: str = "cpu"):
            super().__init__(MyNet(hidden), device=device)

        def rollout(self, requests, **kwargs):
            with torch.no_grad():
                logits = self.net(observation_tensor(requests.obs, self.device))
            ...
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from looprl.approximation.approximation import data_parallel
from looprl.core import Policy
from looprl.core.suggest import check_device

__all__ = ["SingleModelPytorchPolicy"]


class SingleModelPytorchPolicy(Policy):
    """A ``Policy`` over one ``nn.Module`` (see the module docstring; ``TypeError`` otherwise)."""

    def __init__(self, neural_network: nn.Module, device: str | torch.device = "cpu"):
        if not isinstance(neural_network, nn.Module):
            raise TypeError(f"SingleModelPytorchPolicy takes a torch.nn.Module, got a "
                            f"{type(neural_network).__name__}: pass your network, e.g. "
                            "super().__init__(MyNet(...))")
        self.device = torch.device(check_device(device))
        self._module = neural_network.to(self.device)
        self._ddp: nn.Module | None = None
        self.version = 0

    @property
    def net(self) -> nn.Module:
        """The network to run: its DDP wrapper after ``distributed()``, else ``module``."""
        return self._module if self._ddp is None else self._ddp

    @property
    def module(self) -> nn.Module:
        """The plain network (its ``state_dict`` is what is published and saved)."""
        return self._module

    def parameters(self) -> Any:
        """The network's parameters (for the trainer's optimizer)."""
        return self._module.parameters()

    def train_mode(self) -> None:
        """Put the network in training mode (dropout, batch norm)."""
        self._module.train()

    def eval_mode(self) -> None:
        """Put the network in evaluation mode."""
        self._module.eval()

    def to(self, device: str | torch.device) -> SingleModelPytorchPolicy:
        """Move the network to ``device`` (before the optimizer is built); return ``self``."""
        self.device = torch.device(check_device(device))
        self._module.to(self.device)
        return self

    def distributed(self, **kwargs: Any) -> None:
        """Average gradients with DDP (``kwargs``: its ``process_group``), if a group exists."""
        if self._ddp is None and dist.is_available() and dist.is_initialized():
            self._ddp = data_parallel(self._module, **kwargs)

    def get_checkpoint(self) -> dict[str, Any]:
        """``{"steps": version, "version": version, "state_dict": ...}``, tensors on the CPU."""
        state = {key: value.detach().cpu() for key, value in self._module.state_dict().items()}
        return {"steps": self.version, "version": self.version, "state_dict": state}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_ddp"] = None  # a process group neither pickles nor copies
        return state
