"""An actor worker's links to the run: ``SegmentSender`` hands its segments to the trainer
worker, one put in flight at a time; ``PolicyCopy`` pulls the trained parameters from the
``ParameterServer``. Importing this module imports Ray."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import ray
from ray.exceptions import RayActorError

from looprl.distributed.cluster import no_answer
from looprl.distributed.config import AlgorithmSpec
from looprl.distributed.pipeline import load_parameters, load_shared_state
from looprl.distributed.server import unpack

__all__ = ["HOLD_ROWS", "HOLD_SECONDS", "PolicyCopy", "SegmentSender"]

logger = logging.getLogger(__name__)

#: An asynchronous actor sends what it holds once it holds this many transitions ...
HOLD_ROWS = 64
#: ... or this many seconds after its last put (its samples reach the trainer that late at most).
HOLD_SECONDS = 0.02


class SegmentSender:
    """Puts an actor's segments to the ``trainer``: with ``sync``, each at once, waiting for
    the answer; else those held while a put is in flight, together. ``waited`` is called with
    the seconds spent waiting for the trainer."""

    def __init__(self, trainer: Any, sync: bool, index: int, waited: Callable[[float], None],
                 hubs: list[Any] = ()):
        self.trainer, self.sync, self.index, self.waited = trainer, sync, index, waited
        self.hubs = list(hubs)  # (the meta hubs whose writes of trainer keys it sends along)
        self._put: Any = None
        self._held: list[Any] = []
        self._rows = 0
        self._last = time.monotonic()
        self._frames = self._sent = 0  # the actor's env steps: at the latest send, at the put

    def send(self, segments: list[Any], frames: int = 0) -> int | None:
        """Hand over the segments a step completed (``frames``: the actor's env steps so far):
        synchronous, now, returning the policy version to act with next; asynchronous, once the
        put in flight is done and ``HOLD_ROWS`` or ``HOLD_SECONDS`` have gathered."""
        self._frames = frames
        self._held += segments
        self._rows += sum(transitions(segment) for segment in segments)
        if self.sync:
            return self.flush() if segments else None
        if not self._held or self._rows < HOLD_ROWS and (
                time.monotonic() - self._last < HOLD_SECONDS or self._in_flight()):
            return None
        self.wait()
        self._put_held()
        return None

    def flush(self) -> int | None:
        """Put what is held and wait for the trainer's answer (``None``: none)."""
        self.wait()
        if self._held:
            self._put_held()
        return self.wait()

    def wait(self) -> int | None:
        """The trainer's answer to the put in flight (``None``: none, or the trainer died)."""
        put, self._put = self._put, None
        if put is None:
            return None
        start = time.perf_counter()
        try:
            return ray.get(put)
        except RayActorError:
            logger.warning("actor %d: trainer unreachable, its last samples are lost", self.index)
            return None
        finally:
            self.waited(time.perf_counter() - start)

    def _in_flight(self) -> bool:
        """Whether the last put is not yet accepted (checked again ``HOLD_SECONDS`` later)."""
        if self._put is None or ray.wait([self._put], timeout=0)[0]:
            return False
        self._last = time.monotonic()
        return True

    def _put_held(self) -> None:
        writes = [hub.take_writes() for hub in self.hubs]
        self._put = self.trainer.put.remote(self._held, self._frames - self._sent,
                                            writes if any(writes) else None)
        self._held, self._rows, self._last = [], 0, time.monotonic()
        self._sent = self._frames


def transitions(segment: Any) -> int:
    """Transitions of a ``[T + 1, B]`` segment: ``T * B``."""
    steps, columns = np.shape(segment.reward)[:2]
    return int((steps - 1) * columns)


class PolicyCopy:
    """A policy that pulls parameters (its meta ``components``' shared states, its ``hubs``'
    trainer ``hp/*`` values) from the ``ParameterServer`` every ``interval`` seconds."""

    def __init__(self, spec: AlgorithmSpec, server: Any, interval: float):
        self.policy = spec.make_policy(acting=True)
        self.components: list[Any] = []
        self.hubs: list[Any] = []  # (the meta hubs whose steps read the trainer's ``hp/*``)
        self.server, self.interval = server, interval
        self.serial = 0  # the last publication loaded
        self.trainer_values: dict[str, Any] = {}  # its ``hp/*`` values, as a run logs them
        self._next = 0.0
        self._pending: Any = None

    def _due(self) -> bool:
        now = time.monotonic()
        if self._pending is None and now >= self._next:
            self._next = now + self.interval
            return True
        return False

    def maybe_pull(self, wait: bool = False) -> None:
        if self._due() or (wait and self._pending is None):
            self._pending = self.server.get.remote(self.serial)
        if self._pending is None:
            return
        ready, _ = ray.wait([self._pending], timeout=None if wait else 0)
        if ready:
            self._load(ray.get(self._pending))

    def pull_until(self, version: int, timeout: float) -> None:
        """Block until the loaded parameters are of ``version`` or newer, or warn at ``timeout``."""
        deadline = time.monotonic() + timeout
        while self.policy.version < version and time.monotonic() < deadline:
            self.maybe_pull(wait=True)
            if self.policy.version < version:
                time.sleep(0.001)  # published, but not yet arrived at the server
        if self.policy.version < version:
            logger.warning("runtime.sync: parameters of version %d did not arrive (%s); acting "
                           "on with version %d", version, no_answer(timeout), self.policy.version)

    async def maybe_pull_async(self) -> None:
        if self._due():
            self._pending = asyncio.ensure_future(self.server.get.remote(self.serial))
        if self._pending is not None and self._pending.done():
            self._load(self._pending.result())

    def _load(self, found: tuple[int, int, bytes] | None) -> None:
        self._pending = None
        if found is not None:
            parameters, shared, values, written, self.trainer_values = unpack(found[2])
            load_parameters(self.policy, parameters)
            self.serial, self.policy.version = found[0], found[1]
            if self.components:
                load_shared_state(self.components, shared)
            for hub, learner, writes in zip(self.hubs, values, written, strict=False):
                hub.trainer_values(learner, writes)
