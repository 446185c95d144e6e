"""A seed-004 user's own ``looprl.core.Policy`` with SRL's ``get_checkpoint`` /
``load_checkpoint`` and no ``module`` (importable by Ray workers:
``tests.distributed.checkpoint_policy``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tests.distributed.seed004_user import AnalyzedResult
from torch import nn

from looprl.core import Policy, RolloutResult


class CheckpointPolicy(Policy):
    """A feed-forward actor-critic of its own: parameters, a version and SRL's checkpoint
    methods, no ``module``."""

    def __init__(self) -> None:
        self.nets = [nn.Linear(1, 3)]  # (a list: no attribute the base could take for a module)
        self.version = 0
        self.device = "cpu"

    def parameters(self) -> Any:
        return self.nets[0].parameters()

    def inc_version(self) -> None:
        self.version += 1

    def get_checkpoint(self) -> dict[str, Any]:
        return {"steps": self.version, "version": self.version,
                "state_dict": self.nets[0].state_dict()}

    def load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.nets[0].load_state_dict(checkpoint["state_dict"])
        self.version = checkpoint["version"]

    def rollout(self, requests: Any, **kwargs: Any) -> RolloutResult:
        with torch.no_grad():
            out = self.nets[0](torch.as_tensor(np.asarray(requests.obs.obs)))
        dist = torch.distributions.Categorical(logits=out[:, :2])
        action = dist.sample()
        return RolloutResult(action=action.numpy(), log_prob=dist.log_prob(action).numpy(),
                             value=out[:, 2].numpy())

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> AnalyzedResult:
        out = self.nets[0](torch.as_tensor(np.asarray(sample.obs.obs)))
        dist = torch.distributions.Categorical(logits=out[..., :2])
        action = torch.as_tensor(np.asarray(sample.action)).long()
        return AnalyzedResult(log_prob=dist.log_prob(action), entropy=dist.entropy(),
                              value=out[..., 2])
