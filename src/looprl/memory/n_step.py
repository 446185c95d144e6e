"""``NStepReplayBuffer``: ALL's n-step wrapper over a looprl replay buffer, switched to
``steps``-step windows. ``next_states`` of its samples hold the return as ``reward`` and the
``discount_factor^k`` of its ``k`` steps as ``discount``."""

from __future__ import annotations

from typing import Any

from looprl.core import SampleBatch, State
from looprl.core.suggest import check_count, is_number
from looprl.memory.replay import transitions
from looprl.memory.store import check_transition

__all__ = ["NStepReplayBuffer"]


class NStepReplayBuffer:
    """Stores ``steps``-step transitions in ``buffer``, an empty looprl replay buffer:
    ``NStepReplayBuffer(3, 0.99, ExperienceReplayBuffer(10_000))``."""

    def __init__(self, steps: int, discount_factor: float, buffer: Any):
        check_count(steps=steps)
        if not (is_number(discount_factor) and discount_factor >= 0):
            raise ValueError(f"NStepReplayBuffer needs a number discount_factor >= 0, got "
                             f"{discount_factor!r}")
        if not (hasattr(buffer, "n_step") and hasattr(buffer, "sample_batch")):
            raise TypeError(f"NStepReplayBuffer wraps a looprl replay buffer (e.g. "
                            f"ExperienceReplayBuffer(size)), got {type(buffer).__name__}")
        if buffer.n_step != steps and len(buffer):
            raise ValueError(f"NStepReplayBuffer needs an empty buffer (this one holds "
                             f"{len(buffer)} {buffer.n_step}-step transitions)")
        buffer.n_step = int(steps)
        self.steps, self.discount_factor, self.buffer = int(steps), discount_factor, buffer

    def store(self, state: State | None, action: Any, next_state: State) -> None:
        """Store a step; its window is written once complete (``buffer.store``)."""
        check_transition(type(self).__name__, state, action, next_state)
        self.buffer.store(state, action, next_state)

    def sample(self, batch_size: int) -> tuple:
        """``batch_size`` n-step transitions as ALL's tuple."""
        return transitions(self.buffer.sample_batch(batch_size), self.discount_factor)

    def sample_batch(self, batch_size: int) -> SampleBatch:
        """``batch_size`` windows ``[steps + 1, batch_size]``."""
        return self.buffer.sample_batch(batch_size)

    def update_priorities(self, *args: Any, **kwargs: Any) -> None:
        """The wrapped buffer's ``update_priorities``."""
        self.buffer.update_priorities(*args, **kwargs)

    def __len__(self) -> int:
        return len(self.buffer)
