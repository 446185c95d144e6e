"""The Ray workers of a distributed run (seed 004's actor, policy and trainer workers).

* ``ParameterServer`` -- holds the latest published parameters by version.
* ``ActorWorker`` -- steps env copies (``EnvRunner``), asks a policy worker (or its own policy
  copy) for actions, and sends ``[T + 1, B]`` segments to the trainer. Its envs are split in
  groups, so it steps one group while the policy answers another.
* ``PolicyWorker`` -- an async actor: batches the requests of many actors into one
  ``rollout`` and pulls new parameters by version.
* ``TrainerWorker`` -- owns the sample buffer (``TrainerCore``), runs ``Trainer.step``,
  publishes parameters, checkpoints, and resumes from its checkpoint after a restart. With
  ``runtime.trainers = N > 1``, N of them (ranks 0..N-1) form one torch.distributed group
  (``looprl.distributed.ddp``): each learns from its own actors' samples, DDP averages their
  gradients, all step together, and rank 0 alone publishes and checkpoints.
* evaluation workers -- ``ActorWorker`` s built with ``evaluation=True`` and no trainer: they
  play deterministic episodes, once per parameter publication, and send no samples.

Each worker's long-running loop is a method (``run``) the controller calls; ``stats`` and
``stop`` run beside it (threaded actors). Ray restarts a worker that dies; the controller
calls ``run`` again. Importing this module imports Ray.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import ray
import torch
from ray import cloudpickle
from ray.exceptions import RayActorError, RayTaskError

from looprl.distributed import ddp
from looprl.distributed.collector import EnvRunner, RolloutSizeError
from looprl.distributed.config import AlgorithmSpec, RuntimeConfig
from looprl.distributed.pipeline import TrainerCore

__all__ = ["ActorWorker", "ParameterServer", "PolicyWorker", "TrainerWorker"]

logger = logging.getLogger(__name__)

TRAINER_CHECKPOINT = "trainer_checkpoint.pt"


def _restarted() -> bool:
    with warnings.catch_warnings():  # Ray's property uses one of its deprecated APIs
        warnings.simplefilter("ignore", DeprecationWarning)
        return ray.get_runtime_context().was_current_actor_reconstructed


def _parameters(policy: Any) -> dict[str, Any]:
    """The policy's parameters as CPU tensors (cheap to ship through the object store)."""
    return {k: v.detach().cpu() for k, v in policy.module.state_dict().items()}


@ray.remote(num_cpus=0)
class ParameterServer:
    """The latest parameters a trainer published.

    Each publication gets the next serial number, and copies pull by serial, not by policy
    version: a trainer restarted from an older checkpoint publishes an older version, which
    must still replace what its dead predecessor published.
    """

    def __init__(self) -> None:
        self.serial = 0
        self.latest: tuple[int, int, dict[str, Any]] | None = None

    def put(self, version: int, parameters: dict[str, Any]) -> None:
        """Publish ``parameters`` (of policy ``version``)."""
        self.serial += 1
        self.latest = (self.serial, version, parameters)

    def get(self, newer_than: int) -> tuple[int, int, dict[str, Any]] | None:
        """``(serial, version, parameters)`` if published after serial ``newer_than``."""
        return self.latest if self.latest is not None and self.serial > newer_than else None


class _PolicyCopy:
    """A policy that pulls parameters from the ``ParameterServer`` every ``interval`` seconds."""

    def __init__(self, spec: AlgorithmSpec, server: Any, interval: float):
        self.policy = spec.make_policy()
        self.server = server
        self.interval = interval
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

    def pull_until(self, version: int) -> None:
        """Block until the loaded parameters are of ``version`` or newer (sync sampling)."""
        while self.policy.version < version:
            self.maybe_pull(wait=True)
            if self.policy.version < version:
                time.sleep(0.001)  # published, but not yet arrived at the server

    async def maybe_pull_async(self) -> None:
        if self._due():
            self._pending = asyncio.ensure_future(self.server.get.remote(self.serial))
        if self._pending is not None and self._pending.done():
            self._load(self._pending.result())

    def _load(self, found: tuple[int, int, dict[str, Any]] | None) -> None:
        self._pending = None
        if found is not None:
            self.serial, self.policy.version = found[0], found[1]
            self.policy.module.load_state_dict(found[2])


@ray.remote(max_concurrency=2)
class ActorWorker:
    """Steps ``runtime.envs_per_actor`` env copies and sends segments to the trainer.

    Args:
        index: this worker's number (seeds its envs, picks its policy worker and epsilon).
        spec: the algorithm.
        runtime: the runtime options.
        server: the ``ParameterServer``.
        trainer: the ``TrainerWorker`` (``None``: no samples are sent, e.g. evaluation).
        policy_worker: a ``PolicyWorker`` (``None``: this worker runs its own policy copy).
        seed: the run's seed.
        evaluation: deterministic actions.
    """

    def __init__(self, index: int, spec: AlgorithmSpec, runtime: RuntimeConfig, server: Any,
                 trainer: Any, policy_worker: Any, seed: int, evaluation: bool = False):
        torch.set_num_threads(runtime.torch_threads)
        self.index = index
        self.evaluation = evaluation
        self.trainer = trainer
        self.policy_worker = policy_worker
        self.sync = runtime.sync and trainer is not None
        self.local = None if policy_worker is not None and not evaluation else _PolicyCopy(
            spec, server, runtime.pull_interval)
        default_state = (self.local.policy if self.local else spec.make_policy()
                         ).default_policy_state
        explorations = spec.explorations
        exploration = explorations[index % len(explorations)] if explorations else None
        own_seed = seed + 10_000 * index + (1_000_000 if _restarted() else 0)
        torch.manual_seed(own_seed)  # the policy copy's sampling
        self.runner = EnvRunner(
            spec.make_env, None, runtime.envs_per_actor, runtime.segment_length,
            default_state, groups=1 if self.local else runtime.groups,
            seed=own_seed, exploration=exploration, is_evaluation=evaluation,
        )
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stats = {"frames": 0, "episodes": [], "inference_seconds": 0.0,
                       "send_seconds": 0.0, "rows": 0, "requests": 0}
        self._put: Any = None

    def ready(self) -> str:
        """The node this worker runs on (the controller waits for it: placement check)."""
        return ray.get_runtime_context().get_node_id()

    def stop(self) -> None:
        """End ``run`` after the current step."""
        self._stop.set()

    def stats(self) -> dict[str, Any]:
        """Frames, finished episodes and timings since the last call (then reset)."""
        with self._lock:
            stats = dict(self._stats)
            self._stats.update(frames=0, episodes=[], inference_seconds=0.0, send_seconds=0.0,
                               rows=0, requests=0)
        stats["env_seconds"], self.runner.env_seconds = self.runner.env_seconds, 0.0
        return stats

    def run(self) -> None:
        """Step envs until ``stop``."""
        if self.local is not None:
            self.local.maybe_pull(wait=True)
            while not self._stop.is_set():
                self._local_step()
            return
        groups = len(self.runner.groups)
        pending = [self._ask(g) for g in range(groups)]
        while not self._stop.is_set():
            for g in range(groups):
                result, version = self._answer(g, pending[g])
                self.runner.step(g, result, version)
                pending[g] = self._ask(g)
                self._after_step()

    def _local_step(self) -> None:
        start = time.perf_counter()
        self.local.maybe_pull()
        request = self.runner.request(0)
        result = None if request is None else self.local.policy.rollout(request)
        self._count(request, time.perf_counter() - start)
        self.runner.step(0, result, self.local.policy.version)
        ended = bool(self.runner.episodes)
        self._after_step()
        if ended and self.evaluation:
            self._wait_for_new_parameters()

    def _wait_for_new_parameters(self) -> None:
        """Evaluation plays each parameter version once, instead of spinning a CPU."""
        serial = self.local.serial
        while self.local.serial == serial and not self._stop.is_set():
            time.sleep(self.local.interval)
            self.local.maybe_pull()

    def _ask(self, group: int) -> tuple[Any, Any]:
        request = self.runner.request(group)
        ref = None if request is None else self.policy_worker.rollout.remote(request)
        return request, ref

    def _answer(self, group: int, pending: tuple[Any, Any]) -> tuple[Any, int]:
        request, ref = pending
        if ref is None:
            return None, 0
        start = time.perf_counter()
        while True:
            try:
                result, version = ray.get(ref)
                break
            except RayActorError:  # the policy worker died: Ray restarts it, ask again
                logger.warning("actor %d: policy worker unreachable, asking again", self.index)
                time.sleep(0.5)
                ref = self.policy_worker.rollout.remote(request)
            except RayTaskError as error:  # the policy itself failed: stop with its message
                raise error.as_instanceof_cause() from None
        self._count(request, time.perf_counter() - start)
        return result, version

    def _count(self, request: Any, seconds: float) -> None:
        with self._lock:
            self._stats["inference_seconds"] += seconds
            if request is not None:
                self._stats["rows"] += len(request.obs)
                self._stats["requests"] += 1

    def _after_step(self) -> None:
        episodes = self.runner.pop_episodes()
        frames, self.runner.frames = self.runner.frames, 0
        with self._lock:
            self._stats["frames"] += frames
            # (return, length, this worker's frames since the last ``stats`` when it ended)
            self._stats["episodes"] += [(e.ret, e.length, self._stats["frames"])
                                        for e in episodes]
        segments = self.runner.segments()
        if segments and self.trainer is not None:
            self._send(segments)

    def _send(self, segments: list[Any]) -> None:
        """Send ``segments`` once the previous batch arrived (backpressure). With
        ``runtime.sync``, wait for the trainer's answer and load the version it names, so
        that the next samples come from the parameters trained on these."""
        start = time.perf_counter()
        self._wait_put()
        self._put = self.trainer.put.remote(segments)
        if self.sync:
            version = self._wait_put()
            if version is not None:
                self.local.pull_until(version)
        with self._lock:
            self._stats["send_seconds"] += time.perf_counter() - start

    def _wait_put(self) -> int | None:
        """The trainer's answer to the last ``put`` (``None``: no put, or the trainer died)."""
        put, self._put = self._put, None
        if put is None:
            return None
        try:
            return ray.get(put)
        except RayActorError:
            logger.warning("actor %d: trainer unreachable, its last samples are lost",
                           self.index)
            return None


@ray.remote
class PolicyWorker:
    """Batches the rollout requests of many actor workers (an async Ray actor).

    Requests are answered together once ``batch_requests`` of them wait, or after
    ``max_wait`` seconds. Parameters are pulled every ``runtime.pull_interval`` seconds.
    """

    def __init__(self, spec: AlgorithmSpec, runtime: RuntimeConfig, server: Any,
                 batch_requests: int, max_wait: float = 0.002):
        torch.set_num_threads(runtime.torch_threads)
        if runtime.gpus_per_policy:
            spec = spec.on_device("cuda")
        self.copy = _PolicyCopy(spec, server, runtime.pull_interval)
        self.batch_requests = max(1, batch_requests)
        self.max_wait = max_wait
        self._waiting: list[tuple[Any, asyncio.Future]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._batches: list[int] = []

    def ready(self) -> str:
        """The node this worker runs on."""
        return ray.get_runtime_context().get_node_id()

    def stats(self) -> dict[str, Any]:
        """Rows per batched rollout since the last call, and the policy version."""
        batches, self._batches = self._batches, []
        return {"batch_rows": batches, "version": self.copy.policy.version}

    async def rollout(self, request: Any) -> tuple[Any, int]:
        """The policy's answer to ``request`` and the version that gave it."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((request, future))
        if len(self._waiting) >= self.batch_requests:
            await self._flush()
        elif self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.max_wait,
                                          lambda: asyncio.ensure_future(self._flush()))
        return await future

    async def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, []
        if not waiting:
            return
        await self.copy.maybe_pull_async()
        from looprl.core.namedarray import concat, recursive_apply

        requests = [request for request, _ in waiting]
        sizes = [len(request.obs) for request in requests]
        try:
            result = self.copy.policy.rollout(concat(requests))
            result = recursive_apply(result, _to_numpy)
            _check_size(result, sum(sizes), self.copy.policy)
        except Exception as error:  # noqa: BLE001 -- handed to every waiting actor
            for _, future in waiting:
                future.set_exception(error)
            return
        self._batches.append(sum(sizes))
        version = self.copy.policy.version
        start = 0
        for (_, future), size in zip(waiting, sizes, strict=True):
            future.set_result((result[start:start + size], version))
            start += size


def _to_numpy(leaf: Any) -> Any:
    return leaf.detach().cpu().numpy() if isinstance(leaf, torch.Tensor) else leaf


def _check_size(result: Any, rows: int, policy: Any) -> None:
    n = len(result.action)
    if n != rows:
        raise RolloutSizeError(f"{type(policy).__name__}.rollout returned {n} actions for a "
                               f"request of {rows} rows; return one row per request row")


@ray.remote(max_concurrency=64)  # actors waiting in ``put`` must not block ``stats``/``stop``
class TrainerWorker:
    """Owns the sample buffer, runs ``Trainer.step``, publishes parameters, checkpoints.

    After a restart (Ray restarts a trainer that died) it continues from its latest
    checkpoint in ``run_dir``. With ``runtime.trainers > 1``, ``run`` follows ``join_group``.
    """

    def __init__(self, spec: AlgorithmSpec, runtime: RuntimeConfig, server: Any,
                 run_dir: str, seed: int, rank: int = 0):
        torch.set_num_threads(runtime.torch_threads)
        sys.setswitchinterval(0.0005)  # ``put`` gets the GIL quickly beside the training loop
        torch.manual_seed(seed + rank)
        np.random.seed(seed + rank)  # each rank samples its own prioritized batches
        self.rank = rank
        self.group = None if runtime.trainers == 1 else ddp.TrainerGroup(
            rank, runtime.trainers, runtime.gpus_per_trainer > 0, runtime.trainer_timeout)
        self.runtime = runtime
        self.server = server
        self.path = Path(run_dir) / TRAINER_CHECKPOINT
        if runtime.gpus_per_trainer:
            spec = spec.on_device("cuda")
        self.core = TrainerCore(spec.make_trainer(spec.make_policy()), spec.buffer,
                                spec.buffer_args, runtime.max_lag)
        self._capacity = runtime.queue_batches * getattr(self.core.buffer, "batch_streams", 0)
        self.resumed_from: int | None = None
        if self.path.exists() and rank == 0:
            state = torch.load(self.path, weights_only=False)  # plain pickle reads cloudpickle
            self.core.load_state_dict(state["core"])
            self.resumed_from = state["steps"]
        self.steps = self.resumed_from or 0
        self._lock = threading.Condition()  # notified after every step (sync sampling)
        self._stop = threading.Event()
        self._feeders = len(range(rank, runtime.actors, runtime.trainers))  # its actors
        self._waiting = 0  # sync: puts waiting for the step their samples join
        self._more = 0  # sync: generations of "all feeders wait, the batch needs more"
        self._published = -1
        self._training = False  # a batch has been taken and is being trained on
        self._stats: list[dict[str, float]] = []
        self._lags: list[float] = []
        self._publish()

    def ready(self) -> dict[str, Any]:
        """The node, the step resumed from (``None``: a fresh start) and this process's id."""
        return {"node": ray.get_runtime_context().get_node_id(),
                "resumed_from": self.resumed_from, "id": os.getpid()}

    def rendezvous(self) -> str:
        """Rank 0: where a new trainer group meets (an ``init_method``)."""
        return ddp.rendezvous(ray.util.get_node_ip_address())

    def join_group(self, init_method: str) -> None:
        """Form the trainer group (``rendezvous`` on rank 0 names ``init_method``), take rank 0's
        trainer and step count (its checkpoint's, after a restart), average gradients (DDP)."""
        self.group.join(init_method)
        mine = cloudpickle.dumps((self.core.trainer, self.steps)) if self.rank == 0 else None
        self.core.trainer, self.steps = cloudpickle.loads(self.group.share(mine))
        self.group.distribute(self.core.policy)
        self._first_step = self.steps + 1

    def digest(self) -> dict[str, Any]:
        """Train steps and a hash of the policy's parameters (equal on synchronized ranks)."""
        return {"steps": self.steps, "digest": ddp.digest(self.core.policy.module)}

    def put(self, segments: list[Any]) -> int:
        """Receive segments from an actor worker; return the policy version the actor should
        sample with next.

        An on-policy buffer holding ``runtime.queue_batches`` batches makes the caller wait
        (backpressure: actors do not make samples that could only be trained on late). With
        ``runtime.sync``, the caller waits until a step has trained on its samples, unless
        every actor feeding this trainer waits and the batch still needs more samples.
        """
        while not self.core.prioritized and not self._stop.is_set():
            with self._lock:
                if len(self.core.buffer) < self._capacity:
                    break
            time.sleep(0.002)
        with self._lock:
            version = self.core.policy.version
            for sample in segments:
                self.core.put(sample)
                if sample.policy_version is not None:
                    self._lags.append(float(version - np.min(sample.policy_version)))
            if self.runtime.sync:
                self._wait_trained(version)
            return self._published

    def _wait_trained(self, version: int, timeout: float = 30.0) -> None:
        """Sync sampling (holding the lock): wait until parameters newer than ``version``
        are published, or until every feeder waits for a batch that needs more samples."""
        self._waiting += 1
        generation = self._more
        deadline = time.monotonic() + timeout  # a feeder that died must not block the rest
        while (self._published <= version and generation == self._more
               and not self._stop.is_set() and time.monotonic() < deadline):
            if self._waiting >= self._feeders and not self._training and not self.core.ready():
                self._more += 1
                self._lock.notify_all()
                break
            self._lock.wait(0.05)
        self._waiting -= 1

    def stop(self) -> None:
        """End ``run`` after the current step."""
        self._stop.set()

    def stats(self) -> dict[str, Any]:
        """Train steps, their statistics and the sample lags since the last call."""
        with self._lock:
            stats, self._stats = self._stats, []
            lags, self._lags = self._lags, []
            return {"steps": self.steps, "version": self.core.policy.version, "stats": stats,
                    "lags": lags, "received": self.core.received, "dropped": self.core.dropped}

    def run(self) -> None:
        """Train whenever the buffer is ready, until ``stop``. Several trainers step together
        (each step waits for every one's batch) and all end when one is stopped.

        Raises:
            TrainerGroupError: a collective failed (another trainer died or hung).
        """
        try:
            while (batch := self._next_batch()) is not None:
                self._train(batch)
        except RuntimeError as error:
            if self.group is None or not ddp.collective_failure(error):
                raise
            raise ddp.TrainerGroupError(f"trainer {self.rank}: a collective of the trainers "
                                        f"failed ({str(error).splitlines()[0][:200]})") from None

    def _next_batch(self) -> Any:
        """The next batch once the buffer is ready; ``None`` once any trainer is stopped."""
        while not self._stop.is_set():
            with self._lock:
                batch = self.core.next_batch()
                self._training = batch is not None
            if batch is not None:
                break
            time.sleep(0.001)
        else:
            batch = None
        if self.group is not None and not self.group.agree(batch is not None):
            return None
        return batch

    def _train(self, batch: Any) -> None:
        result = self.core.learn(batch)  # actors keep sending meanwhile
        self.steps += 1
        if self.group is not None and self.steps == self._first_step:
            self.group.check_in_sync(self.core.policy.module)  # DDP did average gradients
        if self.steps % self.runtime.publish_every == 0:
            self._publish()
        with self._lock:
            self.core.finish(batch, result)
            self._stats.append({k: float(v) for k, v in result.stats.items()})
            self._training = False
            self._lock.notify_all()  # sync: waiting puts see the new version
        every = self.runtime.checkpoint_every
        if every and self.steps % every == 0 and self.rank == 0:
            self.checkpoint()

    def checkpoint(self) -> int:
        """Save the trainer (policy, optimizer, counters) to ``run_dir``; return the step."""
        temporary = self.path.with_name(self.path.name + ".tmp")
        torch.save({"core": self.core.state_dict(), "steps": self.steps}, temporary,
                   pickle_module=cloudpickle)  # user classes defined in scripts pickle too
        temporary.replace(self.path)
        return self.steps

    def policy_checkpoint(self) -> dict[str, Any]:
        """The policy's ``get_checkpoint()``."""
        return self.core.policy.get_checkpoint()

    def _publish(self) -> None:
        policy = self.core.policy
        if self.rank == 0:
            self.server.put.remote(policy.version, _parameters(policy))
        self._published = policy.version  # trainers step together: rank 0 published it too
