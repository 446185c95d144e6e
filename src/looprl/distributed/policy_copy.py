"""``PolicyCopy``: an actor's (or a policy worker's) copy of the trained policy, which pulls
the trainer's parameters from the ``ParameterServer``. Importing this module imports Ray."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import ray

from looprl.distributed.cluster import no_answer
from looprl.distributed.config import AlgorithmSpec
from looprl.distributed.pipeline import load_parameters, load_shared_state
from looprl.distributed.server import unpack

__all__ = ["PolicyCopy"]

logger = logging.getLogger(__name__)


class PolicyCopy:
    """A policy that pulls parameters (and its meta ``components``' shared states) from the
    ``ParameterServer`` every ``interval`` seconds."""

    def __init__(self, spec: AlgorithmSpec, server: Any, interval: float):
        self.policy = spec.make_policy(acting=True)
        self.components: list[Any] = []
        self.server, self.interval = server, interval
        self.serial = 0  # the last publication loaded
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
            parameters, shared = unpack(found[2])
            load_parameters(self.policy, parameters)
            self.serial, self.policy.version = found[0], found[1]
            if self.components:
                load_shared_state(self.components, shared)
