"""``TrainerWorker``; several form one torch.distributed process group (``TrainerGroup``,
``runtime.trainers > 1``) whose collectives time out: a trainer that dies or hangs ends the
others' in an error. Rank 0 alone publishes and checkpoints. Importing this module imports Ray."""

from __future__ import annotations

import hashlib
import io
import logging
import os
import socket
import sys
import tempfile
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import numpy as np
import ray
import torch
import torch.distributed as dist
from ray import cloudpickle
from torch import nn

from looprl.agents.shell import seed_units
from looprl.distributed.cluster import answer_timeout, no_answer
from looprl.distributed.config import RuntimeConfig
from looprl.distributed.pipeline import (
    PendingWrites,
    hyperparameter_values,
    policy_parameters,
    record_losses,
    trainer_core,
)
from looprl.distributed.sender import transitions
from looprl.distributed.server import Publisher, publication
from looprl.distributed.workers import Worker, cuda_device, hands_over_warnings, named, run_spec
from looprl.memory.replay import replay_contents_saved

__all__ = ["TrainerGroup", "TrainerGroupError", "TrainerWorker", "collective_failure", "digest",
           "rendezvous", "tcp_rendezvous"]

logger = logging.getLogger(__name__)

#: the least seconds between trainer 0's periodic checkpoints (``runtime.checkpoint_every``):
#: one every 20 steps cost a fast trainer (DQN's) a quarter of its speed
CHECKPOINT_SECONDS = 5.0


class TrainerGroupError(RuntimeError):
    """A collective of the trainer group failed: another trainer died, hung or left."""


def rendezvous(node_ip: str) -> str:
    """An ``init_method`` for rank 0 on ``node_ip``: a file on loopback, else TCP."""
    if node_ip.startswith("127."):
        return "file://" + os.path.join(tempfile.gettempdir(), f"looprl-ddp-{uuid.uuid4().hex}")
    return tcp_rendezvous(node_ip)


def tcp_rendezvous(node_ip: str) -> str:
    """A ``tcp://`` ``init_method`` on a free port of ``node_ip``."""
    with socket.socket() as probe:
        probe.bind((node_ip, 0))
        return f"tcp://{node_ip}:{probe.getsockname()[1]}"


def collective_failure(error: BaseException) -> bool:
    """Whether ``error`` comes from the communication of a group."""
    return isinstance(error, dist.DistError) or any(
        word in str(error) for word in ("gloo", "NCCL", "Connection reset", "Connection closed"))


def digest(module: nn.Module) -> str:
    """A short hash of ``module``'s parameters (equal digests: equal parameters)."""
    sha = hashlib.sha1()
    for parameter in module.parameters():
        sha.update(parameter.detach().cpu().contiguous().numpy().tobytes())
    return sha.hexdigest()[:16]


class TrainerGroup:
    """This process's membership in the trainers' process group."""

    def __init__(self, rank: int, size: int, gpus: bool, timeout: float):
        self.rank, self.size, self.gpus, self.timeout = rank, size, gpus, timeout

    def join(self, init_method: str) -> None:
        """Form the group with the other trainers (blocks until all joined)."""
        if init_method.startswith("file://"):
            loopback = [name for _, name in socket.if_nameindex() if name.startswith("lo")]
            if loopback:
                os.environ.setdefault("GLOO_SOCKET_IFNAME", loopback[0])
                if self.gpus:
                    os.environ.setdefault("NCCL_SOCKET_IFNAME", loopback[0])
        if self.gpus:
            torch.cuda.set_device(0)  # Ray shows each trainer its own GPU(s) only
        dist.init_process_group("cpu:gloo,cuda:nccl" if self.gpus else "gloo",
                                init_method=init_method, rank=self.rank, world_size=self.size,
                                timeout=timedelta(seconds=self.timeout))

    def distribute(self, policy: Any) -> None:
        """Let DDP average the gradients of ``policy.approximation`` or of a
        ``SingleModelPytorchPolicy``'s network over the group (``ValueError``: neither)."""
        approximation = getattr(policy, "approximation", None)
        if hasattr(approximation, "distribute"):  # (unused parameters: where a loss may)
            approximation.distribute(
                find_unused_parameters=getattr(policy, "unused_parameters", True))
        elif callable(getattr(policy, "distributed", None)):
            policy.distributed()
        else:
            raise ValueError(f"runtime.trainers > 1 needs a policy whose approximation "
                             f"(looprl.approximation.Approximation) runs its gradient forward "
                             f"passes, or a SingleModelPytorchPolicy; {type(policy).__name__} "
                             "is neither")

    def agree(self, ready: bool, writes: Any = None) -> tuple[bool, list[Any]]:
        """Whether every trainer is ``ready``, and every trainer's ``writes`` but ``None`` s,
        in rank order (gathered only where one has some)."""
        flags = torch.tensor([int(ready), -int(writes is not None)])
        dist.all_reduce(flags, op=dist.ReduceOp.MIN)
        if not flags[1]:
            return bool(flags[0]), []
        every: list[Any] = [None] * self.size
        dist.all_gather_object(every, writes)
        return bool(flags[0]), [each for each in every if each is not None]

    def share(self, payload: bytes | None) -> bytes:
        """Rank 0's ``payload`` on every trainer."""
        box = [payload if self.rank == 0 else None]
        dist.broadcast_object_list(box, src=0, device=torch.device("cpu"))
        return box[0]

    def check_in_sync(self, module: nn.Module) -> None:
        """Raise ``ValueError`` unless every trainer's ``module`` has the same parameters."""
        mine = torch.tensor([int(digest(module), 16) >> 1], dtype=torch.int64)
        every = [torch.zeros_like(mine) for _ in range(self.size)]
        dist.all_gather(every, mine)
        if len({int(value) for value in every}) > 1:
            raise ValueError("the trainers' parameters differ after a step: the policy's "
                             "analyze must run its network through policy.approximation(...) "
                             "(a SingleModelPytorchPolicy's: through self.net(...)) for DDP to "
                             "average the gradients")


@ray.remote(max_concurrency=64)  # actors waiting in ``put`` must not block ``stats``/``stop``
class TrainerWorker(Worker):
    """Owns the sample buffer (a ``Learner``), trains, publishes parameters to the
    ``ParameterServer`` named ``server`` and hands it its checkpoints, whence it continues
    after a restart; ``checkpoint``: the driver's path of it, which errors name."""

    @hands_over_warnings
    def __init__(self, runtime: RuntimeConfig, server: str, seed: int, rank: int, checkpoint: str):
        super().__init__(runtime.trainer_threads or runtime.torch_threads, server)
        spec = run_spec(server)
        sys.setswitchinterval(0.0005)  # ``put`` gets the GIL quickly beside the training loop
        torch.manual_seed(seed + rank)
        np.random.seed((seed + rank) % 2**32)  # (NumPy's range: rank 0 seeds as a local run)
        self.rank, self.runtime = rank, runtime
        self.group = None if runtime.trainers == 1 else TrainerGroup(
            rank, runtime.trainers, runtime.gpus_per_trainer > 0, runtime.trainer_timeout)
        self.publisher = Publisher(named(server))
        if runtime.gpus_per_trainer:
            spec = spec.on_device(cuda_device("trainer", runtime.gpus_per_trainer))
        self.core = trainer_core(spec, max_lag=kept_lag(runtime), seed=seed)
        self.env_label, self.verbose = spec.env_label, spec.verbose
        seed_units(seed + rank, learner=self.core)
        self.resumed_from: int | None = None
        self.frames = 0  # its actors' env steps at their latest puts (``count_frames_from``)
        saved = ray.get(self.publisher.server.trainer_checkpoint.remote()) if rank == 0 else None
        if saved is not None:
            from looprl.experiments.checkpoint import load_saved  # (not in actors)

            state = load_saved(checkpoint, saved[1])
            self.core.load_state_dict(state["core"])
            self.resumed_from = state["steps"]
        self.steps = self.resumed_from or 0
        self._logged = record_losses(self.core, lambda: self.frames, runtime.trainers, self.verbose)
        self._lock = threading.Condition()  # notified after every step (sync sampling)
        self._feeders = len(range(rank, runtime.actors, runtime.trainers))  # its actors
        self._waiting = 0  # sync: puts waiting for the step their samples join
        self._blocked = 0  # puts waiting for room (``Learner.backlogged``)
        self._more = 0  # sync: generations of "all feeders wait, the batch needs more"
        self._published, self._published_at = -1, 0.0
        self._training = False  # a batch has been taken and is being trained on
        self._checkpoint_due: bool | None = None  # the driver asked for one: with replay?
        self._checkpointed_at = -CHECKPOINT_SECONDS  # (``time.monotonic()`` of the last)
        self._lags: list[float] = []
        self._rows = 0  # env steps trained on since stats()
        self._waited = 0.0  # seconds the loop waited for samples since stats()
        self._meta: dict[str, float] = {}  # the update hooks' log/* values since stats()
        self._writes = PendingWrites(  # (``put``'s, to set before a batch is drawn)
            [learner.hooks for learner in getattr(self.core, "cores", [self.core])])
        self._publish()
        self.publisher.flush(answer_timeout(runtime))  # (before the actors pull)

    def ready(self) -> dict[str, Any]:
        """``Worker.ready``'s answer, the step resumed from and the sample counts."""
        return {**super().ready(), "resumed_from": self.resumed_from,
                "counts": (self.core.received, self.core.dropped)}

    def count_frames_from(self, frames: int) -> None:
        """Count the env steps of the samples it receives from ``frames`` (the run's)."""
        with self._lock:
            self.frames = frames

    def rendezvous(self) -> str:
        """Rank 0: where a new trainer group meets (an ``init_method``)."""
        return rendezvous(ray.util.get_node_ip_address())

    def join_group(self, init_method: str) -> None:
        """Join the trainer group at rank 0's ``rendezvous`` and take rank 0's trainer."""
        self.group.join(init_method)
        mine = cloudpickle.dumps((self.core.trainer, self.steps)) if self.rank == 0 else None
        self.core.trainer, self.steps = cloudpickle.loads(self.group.share(mine))
        if self.core.hooks is not None:
            self.core.hooks.bind_parts()  # (rank 0's trainer: its policy, optimizers, ...)
        self.group.distribute(self.core.policy)
        self._logged = record_losses(self.core, lambda: self.frames, self.runtime.trainers,
                                     self.verbose)
        self._first_step = self.steps + 1

    def digest(self) -> dict[str, Any]:
        """Train steps and a hash of the policy's parameters."""
        try:
            return {"steps": self.steps, "digest": digest(self.core.policy.module)}
        except NotImplementedError:  # (one trainer: a policy with get_checkpoint() only)
            return {"steps": self.steps, "digest": None}

    def put(self, segments: list[Any], frames: int = 0, writes: list[dict] | None = None) -> int:
        """Receive an actor's segments, the env steps it took since its last put and what its
        hooks wrote to the trainer's ``hp/*`` keys meanwhile (one dict per learner: set before
        the next batch is drawn; several trainers: each trainer's set on all before the step);
        return the policy version to sample with next (waits while backlogged, or sync)."""
        with self._lock:
            self._writes.add(writes)
            self.frames += frames
            self._blocked += 1
            while self.core.backlogged(self.runtime.queue_batches) and not self._stop.is_set():
                self._lock.wait(0.05)
            self._blocked -= 1
            version = self.core.policy.version
            for sample in segments:
                self.core.put(sample)
                if sample.policy_version is not None:
                    self._lags.append(float(version - np.min(sample.policy_version)))
            if self.runtime.sync:
                self._wait_trained(version)
            return self._published

    def _wake(self) -> None:
        """(Holding the lock.) Wake the waiting puts, if sync or one waits for room."""
        if self.runtime.sync or (
                self._blocked and not self.core.backlogged(self.runtime.queue_batches)):
            self._lock.notify_all()

    def _wait_trained(self, version: int) -> None:
        """(Holding the lock.) Wait until the learner owes no step and has published a
        version newer than ``version``, or every feeder waits for a batch that needs more."""
        self._waiting += 1
        generation, timeout = self._more, answer_timeout(self.runtime)
        deadline = time.monotonic() + timeout  # a feeder that died must not block the rest
        while generation == self._more and not self._stop.is_set() and (
                time.monotonic() < deadline):
            if not self._training and not self.core.ready():  # nothing owed
                if self._published < self.core.policy.version:
                    self._publish()  # (what publish_every left unpublished)
                if self._published > version:
                    break
                if self._waiting >= self._feeders:
                    self._more += 1
                    self._lock.notify_all()
                    break
            self._lock.wait(0.05)
        else:
            if generation == self._more and not self._stop.is_set():
                logger.warning("runtime.sync: the segments of policy version %d were not "
                               "trained on (%s); the actor acts on", version, no_answer(timeout))
        self._waiting -= 1

    def stats(self) -> dict[str, Any]:
        """Since the last call: lags, ``log/*`` values, rows, waits, logged rows and warnings;
        the step count and ``hp/*`` values."""
        logged = [row for recorder in self._logged for row in recorder.take()]
        with self._lock:
            lags, self._lags = self._lags, []
            meta, self._meta = self._meta, {}
            rows, waited, self._rows, self._waited = self._rows, self._waited, 0, 0.0
            return {"steps": self.steps, "version": self.core.policy.version,
                    "lags": lags, "received": self.core.received, "dropped": self.core.dropped,
                    "meta": meta, "hp": hyperparameter_values(self.core), "rows": rows,
                    "wait_seconds": waited, "logged": logged, "warnings": self.warned.take()}

    def run(self) -> None:
        """Train whenever the buffer is ready, until ``stop``."""
        try:
            while (batch := self._next_batch()) is not None:
                self._train(batch)
            self.publisher.flush(answer_timeout(self.runtime))
        except FloatingPointError as error:  # (NaN from the environment says so, as locally)
            from looprl.experiments.diagnose import explain_divergence
            hubs = [getattr(learner, "hooks", None)
                    for learner in getattr(self.core, "cores", [self.core])]
            components = [c for hub in hubs if hub is not None for c in hub.components]
            raise FloatingPointError(explain_divergence(error, self.env_label, self.frames,
                                                        components=components)) from error
        except RuntimeError as error:
            if self.group is None or not collective_failure(error):
                raise
            raise TrainerGroupError(f"trainer {self.rank}: a collective of the trainers "
                                        f"failed ({str(error).splitlines()[0][:200]})") from None

    def _next_batch(self) -> Any:
        """The next batch once the buffer is ready; ``None`` once any trainer is stopped."""
        batch, last = None, time.perf_counter()
        while batch is None and not self._stop.is_set():
            with self._lock:
                now = time.perf_counter()
                self._waited, last = self._waited + now - last, now
                if self.group is None and (taken := self._writes.take()):
                    self._writes.apply([taken])  # (before the rows after them are drawn)
                batch = self.core.next_batch()
                self._training = batch is not None
                if batch is not None:
                    self._wake()
            if batch is None:
                if self._published < self.core.policy.version:  # idle: publish the latest
                    self._publish()
                time.sleep(0.001)
        if self.group is not None:
            with self._lock:
                taken = self._writes.take()
            ready, every = self.group.agree(batch is not None, taken)
            self._writes.apply(every)  # (every trainer's, in rank order: alike on all)
            if not ready:
                return None
        return batch

    def _train(self, batch: Any) -> None:
        result = self.core.learn(batch)  # actors keep sending meanwhile
        self.steps += 1
        if self.group is not None and self.steps == self._first_step:
            self.group.check_in_sync(self.core.policy.module)  # DDP did average gradients
        # with runtime.sync each step publishes; else one every pull_interval / 2 s at most (a
        # publication per step cost a fast trainer a third of its time; idle, it publishes)
        due = self.steps % self.runtime.publish_every == 0 and (self.runtime.sync or (
            time.monotonic() - self._published_at >= self.runtime.pull_interval / 2))
        if due and result.agree_pushing is not False:  # (SRL's: the trainer may hold it back)
            self._publish()
        with self._lock:
            self.core.finish(batch, result)
            self._rows += trained_rows(batch)
            self._meta.update(self.core.log_scalars())
            self._training = False
            self._wake()  # (sync: waiting puts see the new version)
        every = self.runtime.checkpoint_every
        due = self._checkpoint_due
        if self.rank == 0 and (due is not None or every and self.steps % every == 0 and (
                time.monotonic() - self._checkpointed_at >= CHECKPOINT_SECONDS)):
            self._checkpoint_due = None
            self.checkpoint(bool(due), requested=due is not None)

    def request_checkpoint(self, replay: bool = False) -> None:
        """Checkpoint after the next train step (the driver's ``checkpoint_every`` frames),
        ``replay``: with the replay buffer's transitions (``checkpoint_replay``)."""
        self._checkpoint_due = replay

    def checkpoint(self, replay: bool = False, requested: bool = True) -> None:
        """Hand the trainer (policy, optimizer, counters; ``replay``: its replay buffer) to the
        ``ParameterServer`` (``requested``: the driver's, not a periodic one for restarts)."""
        from looprl.experiments.checkpoint import warn_large_replay  # (not in actors)
        self._checkpointed_at = time.monotonic()
        saved = io.BytesIO()
        with self._lock, replay_contents_saved(replay) as kept:  # (puts wait: one snapshot)
            torch.save({"core": self.core.state_dict(replay), "steps": self.steps}, saved,
                       pickle_module=cloudpickle)  # user classes in scripts pickle too
        warn_large_replay(kept)
        ray.get(self.publisher.server.keep.remote(self.steps, saved.getvalue(), requested))

    def policy_checkpoint(self) -> dict[str, Any]:
        """The policy's ``get_checkpoint()``, its tensors on the CPU."""
        return on_cpu(self.core.policy.get_checkpoint())

    def _publish(self) -> None:
        self._published_at = time.monotonic()
        policy = self.core.policy
        if self.rank == 0:
            cores = getattr(self.core, "cores", None)  # (independent learners': one each)
            values = [hyperparameter_values(core) for core in cores or [self.core]]
            self.publisher.send(policy.version, publication(
                on_cpu(policy_parameters(policy)), on_cpu(self.core.shared_state()), values,
                [hub.published_writes() if hub is not None else {}
                 for hub in self._writes.hubs],
                values[0] if cores is None else hyperparameter_values(self.core)))
        self._published = policy.version  # trainers step together: rank 0 published it too


def kept_lag(runtime: RuntimeConfig) -> int | None:
    """The trainer buffer's ``max_lag``: ``runtime.max_lag``, one more with ``sync``."""
    lag = runtime.max_lag
    return lag + 1 if lag is not None and runtime.sync else lag


def trained_rows(batch: Any) -> int:
    """The env steps a trainer's batch holds: ``T * B`` of ``[T + 1, B]`` segments, ``B``
    replayed transitions (0 for a batch of another shape)."""
    if isinstance(batch, tuple) and len(batch) == 2 and isinstance(batch[0], int):
        batch = batch[1]  # (an independent learner's ``(agent, batch)``)
    try:
        sample, indices = batch
        return int(np.shape(sample.reward)[1]) if indices is not None else transitions(sample)
    except (TypeError, ValueError, AttributeError):
        return 0


def on_cpu(value: Any) -> Any:
    """``value`` (tensors, in dicts, lists and tuples) with every tensor detached on the CPU."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return type(value)((key, on_cpu(item)) for key, item in value.items())
    if type(value) in (list, tuple):
        return type(value)(on_cpu(item) for item in value)
    return value
