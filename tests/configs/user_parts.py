"""A user's own parts, attached from the config by import path (``configs.user_parts:...``):
the tests' directory is on the path of pytest and (``PYTHONPATH``) of the Ray workers."""

from __future__ import annotations

from typing import Any

from looprl.meta import MetaComponent


class ScaledReward(MetaComponent):
    """Multiplies every reward by ``scale`` (and counts the steps it saw)."""

    def __init__(self, scale: float = 1.0, offset: float = 0.0):
        super().__init__()
        self.scale, self.offset, self.steps = scale, offset, 0
        self.post_step_methods.append(self.rescale)

    def rescale(self, metrics: dict[str, Any]) -> None:
        self.steps += 1
        transition = metrics["transition"]
        transition["reward"] = transition["reward"] * self.scale + self.offset


class NotAComponent:
    """A class that is no ``MetaComponent``."""
