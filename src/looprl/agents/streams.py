"""``RandomStream``: the random numbers of one unit of a run (an ``Actor``, a ``Learner``).

A policy samples its actions and a trainer its noise from torch's global generator. In one
process (a local run) the acting and the learning draws would interleave; on Ray each has a
process of its own. A seeded unit keeps a stream of its own instead: inside ``with stream:``
torch's global CPU generator runs from the stream's state, kept for the next time, and the
process's state is put back after. So an Actor and a Learner draw the same numbers whether
they share a process or not, and one seed gives one run on every runtime. (Only the CPU
generator: CUDA draws are not put in streams.)
"""

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
        self._outer = torch.get_rng_state()
        torch.set_rng_state(self.state)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.state = torch.get_rng_state()
        torch.set_rng_state(self._outer)
        self._outer = None
