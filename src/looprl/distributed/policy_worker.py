"""``PolicyWorker``: batches the actors' rollout requests on one policy copy
(``runtime.policy_workers``), which pulls the parameters and the exploration values that the
trainer's hooks set."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import ray

from looprl.collector.runner import check_result
from looprl.core.namedarray import concat
from looprl.distributed.config import RuntimeConfig
from looprl.distributed.sender import PolicyCopy
from looprl.distributed.workers import Worker, cuda_device, hands_over_warnings, named, run_spec
from looprl.meta.hub import StreamHooks
from looprl.meta.hyperparameters import acting_schedules, acting_values

__all__ = ["MAX_WAIT", "PolicyWorker"]

#: Seconds a policy worker waits for more requests before it answers those it holds.
MAX_WAIT = 0.002


@ray.remote
class PolicyWorker(Worker):
    """Batches the actors' rollout requests: ``batch_requests`` of them, or after ``MAX_WAIT``."""

    @hands_over_warnings
    def __init__(self, runtime: RuntimeConfig, server: str, batch_requests: int):
        # (its blocking gets are the constructor's, before any request: not Ray's warning,
        # which the users of every run with policy workers saw)
        os.environ["RAY_WARN_BLOCKING_GET_INSIDE_ASYNC"] = "0"
        super().__init__(runtime.torch_threads, server)
        spec = run_spec(server)
        if runtime.gpus_per_policy:
            spec = spec.on_device(cuda_device("policy", runtime.gpus_per_policy))
        self.copy = PolicyCopy(spec, named(server), runtime.pull_interval)
        # (hubs of no component, as an actor's: they set the exploration writes it publishes)
        self.copy.hubs = StreamHooks.over([], self.copy.policy, None,
                                          spec.agent_names(self.copy.policy)).hubs
        self.schedules = acting_schedules(self.copy.policy)
        self.batch_requests = max(1, batch_requests)
        self._waiting: list[tuple[Any, asyncio.Future]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._batches: list[int] = []

    def stats(self) -> dict[str, Any]:
        """Batch sizes and warnings since the last call, the version, pid and schedule steps."""
        batches, self._batches = self._batches, []
        return {"batch_rows": batches, "version": self.copy.policy.version, "id": os.getpid(),
                "schedules": self.schedule_steps(), "warnings": self.warned.take(),
                "hp": acting_values(self.copy.policy)}

    async def rollout(self, request: Any) -> tuple[Any, int]:
        """The policy's answer to ``request`` and the version that gave it."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._waiting.append((request, future))
        if len(self._waiting) >= self.batch_requests:
            await self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(MAX_WAIT, lambda: asyncio.ensure_future(self._flush()))
        return await future

    async def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, []
        if not waiting:
            return
        await self.copy.maybe_pull_async()
        requests = [request for request, _ in waiting]
        sizes = [len(request.obs) for request in requests]
        rows = sum(sizes)
        try:
            result = self.copy.policy.rollout(concat(requests))
            check_result(result, rows, policy=type(self.copy.policy).__name__)
            result = result.to_numpy()
        except Exception as error:  # noqa: BLE001 -- handed to every waiting actor
            for _, future in waiting:
                future.set_exception(error)
            return
        self._batches.append(rows)
        version = self.copy.policy.version
        start = 0
        for (_, future), size in zip(waiting, sizes, strict=True):
            future.set_result((result[start:start + size], version))
            start += size
