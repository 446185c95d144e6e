"""``RandomStream``: the random numbers of one unit of a run (an ``Actor``, a ``Learner``).
Inside ``with stream:`` torch's global CPU generator runs from the stream's own state, so a
unit draws the same numbers whether it shares a process or not (CUDA draws excluded)."""

from __future__ import annotations

from types import TracebackType

import torch

__all__ = ["RandomStream"]


class RandomStream:
    """A unit's own stream of torch's global (CPU) random numbers, seeded with ``seed``."""

    def __init__(self, seed: int):
        self.state = torch.Generator().manual_seed(seed).get_state()
        self._outer: torch.Tensor | None = None

    def __enter__(self) -> RandomStream:
        generator = torch.default_generator  # (what torch.get/set_rng_state call, minus
        self._outer = generator.get_state()  # their Python wrappers: once per env step)
        generator.set_state(self.state)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        generator = torch.default_generator
        self.state = generator.get_state()
        generator.set_state(self._outer)
        self._outer = None
