"""The actor, evaluation (``ActorWorker(evaluation=True)``) and policy workers; ``stats`` and
``stop`` run beside a worker's loop, ``run``. Importing this module imports Ray."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import ray
import torch
from ray.exceptions import RayActorError, RayTaskError

from looprl.agents.actor import Actor
from looprl.agents.shell import seed_units
from looprl.collector import EnvRunner
from looprl.collector.recovery import EnvRestarts, env_call
from looprl.collector.runner import restart_episodes
from looprl.core.suggest import WorkerWarnings
from looprl.distributed.cluster import answer_timeout, answers
from looprl.distributed.config import AlgorithmSpec, RuntimeConfig
from looprl.distributed.pipeline import act, meta_states
from looprl.distributed.sender import PolicyCopy, SegmentSender
from looprl.distributed.server import ParameterServer
from looprl.environments.base import wrapped_seed
from looprl.environments.wrappers import (
    load_normalization,
    most_counted,
    normalizers_of,
    read_normalization,
)
from looprl.meta.hyperparameters import acting_schedules, acting_values

__all__ = ["ActorWorker", "ParameterServer", "Worker", "cuda_device",
           "hands_over_warnings", "named", "normalize_as_training", "run_spec",
           "training_normalization"]

logger = logging.getLogger(__name__)

#: Actor ``i`` numbers its segments' streams from ``i * _STREAMS_PER_ACTOR``.
_STREAMS_PER_ACTOR = 1 << 20


class _Stopped(Exception):
    """An actor's loop was stopped while it waited for its policy worker."""


class Worker:
    """What every worker has: ``ready``, ``stop``, exploration ``schedules`` and ``warned``."""

    def __init__(self, torch_threads: int, server: str) -> None:
        self.warned, self.server_name = WorkerWarnings().start(), server
        torch.set_num_threads(torch_threads)
        self._stop = threading.Event()
        self.schedules: list[Any] = []

    def schedule_steps(self) -> list[int]:
        """Its exploration schedules' steps (``stats()`` answers them)."""
        return [schedule.step for schedule in self.schedules]

    def explore_from(self, steps: list[int]) -> None:
        """Move its exploration schedules to ``steps`` (a resumed or restarted run's)."""
        for schedule, step in zip(self.schedules, steps, strict=True):
            schedule.step = step

    def ready(self) -> dict[str, Any]:
        """The worker's Ray node and process id."""
        return {"node": ray.get_runtime_context().get_node_id(), "id": os.getpid()}

    def stop(self) -> None:
        """End ``run`` after the current step."""
        self._stop.set()


def hands_over_warnings(init: Callable[..., None]) -> Callable[..., None]:
    """A worker's ``__init__`` that, if it raises, first hands the warnings it logged (often
    why) to the run's ``ParameterServer``, whence the driver logs them with its error."""

    @functools.wraps(init)
    def start(self: Worker, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except Exception:
            lines = self.warned.take() if hasattr(self, "warned") else []
            if lines:
                try:
                    ray.get(named(self.server_name).keep_warnings.remote(
                        ray.get_runtime_context().get_actor_name(), lines), timeout=10)
                except (ray.exceptions.RayError, ValueError):  # (the server is gone)
                    pass
            raise

    return start


def run_spec(server: str) -> AlgorithmSpec:
    """The run's spec, which the ``ParameterServer`` named ``server`` keeps."""
    handle = named(server)  # (held: before Ray 2.48 a call on an unheld handle lost the actor)
    return ray.cloudpickle.loads(ray.get(handle.spec.remote()))


def named(name: str | None) -> Any:
    """The run's worker of Ray name ``name`` (``None``: none)."""
    return None if name is None else ray.get_actor(name)


def cuda_device(role: str, gpus: float) -> str:
    """``"cuda"`` for a worker that reserved GPUs (``RuntimeError`` if torch sees none)."""
    if not torch.cuda.is_available():
        raise RuntimeError(
            f"the {role} worker reserved runtime.gpus_per_{role}={gpus:g} GPU(s), but torch "
            f"{torch.__version__} in its process sees no CUDA device (CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES')!r}): install a CUDA build of torch on "
            f"the GPU nodes, or set runtime.gpus_per_{role}=0")
    return "cuda"


def training_normalization(actors: Sequence[Any], timeout: float) -> list[Any] | None:
    """The most counted of the training ``actors``' ``normalization()`` within ``timeout``."""
    refs = {index: actor.normalization.remote() for index, actor in enumerate(actors)}
    return most_counted(list(answers(refs, timeout, any_error=True).values()))


def normalize_as_training(runner: Any, actors: Sequence[Any], timeout: float) -> bool:
    """Load ``training_normalization`` into ``runner``'s normalizers, frozen; whether any."""
    statistics = training_normalization(actors, timeout) if normalizers_of(runner.envs) else None
    load_normalization(runner.envs, statistics, runner.env_name)
    return statistics is not None


@ray.remote(max_concurrency=2)
class ActorWorker(Worker):
    """Steps ``runtime.envs_per_actor`` env copies and sends ``[T + 1, B]`` segments to the
    ``trainer`` (a Ray name; ``None``: none sent), acting with a ``policy_worker`` (``None``: its
    own policy copy; with meta components, a copy beside it that never acts), until it has taken
    ``frames`` env steps (``None``: no limit); ``normalizers``: the training actors an evaluation
    worker normalizes as; ``hold_every``: see ``held``."""

    @hands_over_warnings
    def __init__(self, index: int, runtime: RuntimeConfig, server: str, trainer: str | None,
                 policy_worker: str | None, seed: int, evaluation: bool = False,
                 frames: int | None = None, normalizers: Sequence[str] = (),
                 hold_every: int | None = None):
        super().__init__(runtime.torch_threads, server)
        spec = run_spec(server)
        self.index, self.budget, self.evaluation = index, frames, evaluation
        self.normalizers = [named(name) for name in normalizers]
        self.trainer, self.policy_worker = named(trainer), named(policy_worker)
        self.sync, self.timeout = runtime.sync, answer_timeout(runtime)
        meta = [] if evaluation else spec.make_meta()
        meta_state = ray.get(named(server).actor_meta.remote(index)) if meta else None
        acts = policy_worker is None  # (else its copy, if any, loads what the hooks read)
        self.local = None if not (acts or meta) else PolicyCopy(
            spec, named(server), runtime.pull_interval)
        policy = self.local.policy if self.local else spec.make_policy(acting=True)
        explorations = spec.explorations or [None]
        own_seed = _actor_seed(seed, index)
        torch.manual_seed(own_seed)
        self.actor = Actor(policy)
        seed_units(own_seed, self.actor)
        build, process = spec.collector_env(runtime.envs_per_actor,
                                            self.local is not None or bool(spec.process))
        self.runner = EnvRunner(
            build, None, runtime.envs_per_actor,
            None if self.trainer is None else runtime.segment_length,  # (no rows: none sent)
            policy.default_policy_state, groups=1 if self.local else runtime.groups,
            seed=own_seed, exploration=explorations[index % len(explorations)],
            is_evaluation=evaluation, meta=meta, meta_state=meta_states(
                meta, len(spec.agent_names(policy)) or 1, meta_state, index),
            policy=self.local.policy if self.local else None, process=process,
            whole_episodes=spec.whole_episodes, first_stream=_STREAMS_PER_ACTOR * index,
            agent_names=spec.agent_names(policy),
            restarts=EnvRestarts(runtime.max_restarts, "runtime.max_restarts"))
        if self.local is not None and self.runner.hooks is not None:
            self.local.components = self.runner.hooks.components
            self.local.hubs = self.runner.hooks.hubs
            for hub in self.local.hubs if not acts else ():
                hub.acts_elsewhere()
        self.schedules = acting_schedules(self.local.policy) if acts else []
        self._lock = threading.Condition()
        self._stats = _fresh_stats()
        self._finished = self._failed = False  # its budget spent and last rows sent; it raised
        self._cuts = 0  # the runner's ``cuts`` at the last ``stats``
        self._meta_state: list[Any] | None = None  # (``components_state``: asked, then taken)
        self._hold_every, self._hold_at, self._held = hold_every, hold_every, False
        self.sender = None if self.trainer is None else SegmentSender(
            self.trainer, self.sync, index, functools.partial(self._count, key="put_seconds"),
            self.runner.hooks.hubs if self.runner.hooks is not None else ())

    def stats(self) -> dict[str, Any]:
        """Since the last call: frames, episodes, timings, meta values, env faults and cut
        episodes; the env call in progress and whether it finished."""
        with self._lock:
            stats, self._stats = self._stats, _fresh_stats()
        seconds, self.runner.env_seconds = self.runner.env_seconds, 0.0
        cuts, self._cuts = self.runner.cuts - self._cuts, self.runner.cuts  # (since the last)
        return {**stats, "env_seconds": seconds, "env_faults": self.runner.restarts.pop(),
                "cuts": (cuts, self.runner.env_name, self.runner.max_episode_steps),
                "env_call": env_call(self.runner), "finished": self._finished,
                "hp": acting_values(self.local.policy) if self.policy_worker is None else {},
                "schedules": self.schedule_steps(), "warnings": self.warned.take()}

    def components_state(self, timeout: float) -> list[tuple[str, Any]] | None:
        """Each step hooks' component's ``(class name, state_dict())``, taken between two steps
        (``None``: no step ended within ``timeout`` seconds, or its loop failed)."""
        if self.runner.hooks is None:
            return self._take_state()
        with self._lock:
            self._meta_state = []
            self._lock.wait_for(lambda: self._finished or self._failed or self._meta_state, timeout)
            state = self._meta_state or (self._take_state() if self._finished else None)
            self._meta_state = None
            return state

    def normalization(self) -> list[Any]:
        """Its env copies' normalizers' statistics (``read_normalization``)."""
        return read_normalization(self.runner.envs)

    def load_normalization(self, statistics: list[Any] | None) -> None:
        """Its normalizers go on from training's ``statistics``; its copies then reset."""
        load_normalization(self.runner.envs, statistics, self.runner.env_name, freeze=False)
        if statistics is not None and normalizers_of(self.runner.envs):
            restart_episodes(self.runner)

    def _take_state(self) -> list[tuple[str, Any]]:
        components = self.runner.hooks.components if self.runner.hooks is not None else []
        return [(type(c).__name__, c.state_dict()) for c in components]

    def run(self, acted: int = 0) -> None:
        """Step envs until ``stop`` (or, its budget spent, send the last rows and wait for it);
        ``acted``: the env steps of its share a former process of it took (Ray restarted it)."""
        if acted and self.budget is not None:
            self.budget = max(self.budget - acted, 0)
        pending = None
        try:
            if self.local is not None:
                self.local.maybe_pull(wait=True)
            if self.policy_worker is None:
                self._normalize_as_training(first=True)
                while not self._stop.is_set() and self._within_budget():
                    self._local_step()
                    if self._hold_every and self.runner.total_frames >= self._hold_at:
                        self._hold()
            else:
                groups = range(len(self.runner.groups))
                pending = [self._ask(g) for g in groups]
                while not self._stop.is_set() and self._within_budget():
                    for g in groups:
                        if self.local is not None:  # (what the meta components load)
                            self.local.maybe_pull()
                        self.runner.record(g, *self._answer(pending[g]))
                        self._send_completed()
                        self.runner.advance(g)
                        pending[g] = self._ask(g)
                        self._after_step()
            if not self._stop.is_set():
                self._record_last(pending)
        except _Stopped:
            return
        except BaseException:
            with self._lock:  # (``components_state`` answers at once: no step will end)
                self._failed = True
                self._lock.notify_all()
            _collect(pending)
            raise
        with self._lock:
            self._finished = True
            self._lock.notify_all()
        self._stop.wait()

    def _record_last(self, pending: list[tuple[Any, Any]] | None) -> None:
        """Record the answers to the latest observations and send all held."""
        answers = ([(act(self.runner, self.actor), self.local.policy.version)]
                   if pending is None else [self._answer(asked) for asked in pending])
        for group, answer in enumerate(answers):
            self.runner.record(group, *answer)
        self._send_completed()
        if self.sender is not None:
            self.sender.flush()

    def held(self) -> bool:
        """Whether it stopped after ``hold_every`` env steps since the last stop (but at the
        budget's end), the trainer done with them (``runtime.sync``), until ``resume``: the
        driver evaluates there (``runner.eval_every``) as a local run stops to."""
        return self._held

    def resume(self) -> None:
        """Go on after a stop."""
        with self._lock:
            self._held = False
            self._lock.notify_all()

    def _hold(self) -> None:
        if not self._within_budget():
            return
        with self._lock:
            self._held = True
            while self._held and not self._stop.is_set():
                self._answer_state()  # (a checkpoint meanwhile: its components' state)
                self._lock.wait(0.05)
        self._hold_at = self.runner.total_frames + self._hold_every

    def _within_budget(self) -> bool:
        return self.budget is None or self.runner.total_frames < self.budget

    def _local_step(self) -> None:
        start = time.perf_counter()
        self.local.maybe_pull()
        result = act(self.runner, self.actor)
        self._count(time.perf_counter() - start)
        self.runner.record(0, result, self.local.policy.version)
        self._send_completed()  # (trained before the step, as a local run trains them)
        self.runner.advance(0)
        ended = bool(self.runner.episodes)
        self._after_step()
        serial = self.local.serial  # evaluation plays each parameter version once:
        while ended and self.evaluation and self.local.serial == serial and (
                not self._stop.is_set()):
            time.sleep(self.local.interval)
            self.local.maybe_pull()
        if ended and self.evaluation:
            self._normalize_as_training()

    def _normalize_as_training(self, first: bool = False) -> None:
        """An evaluation worker's normalizers: the training actors' (``first``: episodes anew)."""
        if self.normalizers and not self._stop.is_set():
            if normalize_as_training(self.runner, self.normalizers, self.timeout) and first:
                restart_episodes(self.runner)

    def _ask(self, group: int) -> tuple[Any, Any]:
        request = self.runner.request(group)
        return request, None if request is None else self.policy_worker.rollout.remote(request)

    def _answer(self, pending: tuple[Any, Any]) -> tuple[Any, int]:
        request, ref = pending
        if ref is None:
            return None, 0
        start = time.perf_counter()
        while True:
            try:
                result, version = ray.get(ref)
                break
            except RayActorError:  # the policy worker died: Ray restarts it, ask again
                if self._stop.wait(0.5):  # (the run ends: the driver found it dead for good)
                    raise _Stopped from None
                logger.warning("actor %d: policy worker unreachable, asking again", self.index)
                ref = self.policy_worker.rollout.remote(request)
            except RayTaskError as error:  # the policy itself failed: stop with its message
                raise error.as_instanceof_cause() from None
        self._count(time.perf_counter() - start)
        return result, version

    def _count(self, seconds: float, key: str = "inference_seconds") -> None:
        with self._lock:
            self._stats[key] += seconds

    def _after_step(self) -> None:
        episodes = self.runner.pop_episodes()
        frames, self.runner.frames = self.runner.frames, 0
        values = self.runner.meta_scalars() if episodes and self.runner.hooks is not None else None
        hp = self._hp_row() if episodes else None
        with self._lock:
            self._stats["frames"] += frames
            self._stats["episodes"] += [(e.ret, e.length, self._stats["frames"], e.returns, hp)
                                        for e in episodes]
            if values:
                self._stats["meta"].append((self._stats["frames"], values))
            self._answer_state()

    def _hp_row(self) -> dict[str, Any] | None:
        """The ``hp/*`` values a local run logs where an episode ends: the trainer's, published
        with the parameters this actor acts with, its own exploration's, and what its hooks
        wrote since (``None``: an evaluation's episodes, which have none; an actor acting through
        a policy worker: the driver logs the values it read last)."""
        if self.evaluation or self.policy_worker is not None or self.local is None:
            return None
        row = dict(self.local.trainer_values)
        row.update((key, value) for key, value in acting_values(self.local.policy).items()
                   if key in row)
        for hub in self.local.hubs:  # (as they read them: an agent's keys end in /<agent>)
            suffix = f"/{hub.metrics['agent']}" if "agent" in hub.metrics else ""
            row.update((key + suffix, h.get()) for key, h in hub.hyperparameters.items()
                       if key + suffix in row)
        return row

    def _answer_state(self) -> None:
        """(Holding the lock.) Take the components' state if ``components_state`` asks."""
        if self._meta_state == []:
            self._meta_state = self._take_state()
            self._lock.notify_all()

    def _send_completed(self) -> None:
        """Hand the trainer the segments just completed (sync: load what trained on them)."""
        segments = self.runner.segments()
        version = None if self.sender is None else self.sender.send(
            segments, self.runner.total_frames)
        if self.sync and version is not None:
            self.local.pull_until(version, self.timeout)


def _actor_seed(seed: int, index: int) -> int:
    """Actor ``index``'s seed, wrapped as every seed looprl derives (actor 0's first is the
    run's, if in range); another in a process Ray restarted."""
    with warnings.catch_warnings():  # Ray's property uses one of its deprecated APIs
        warnings.simplefilter("ignore", DeprecationWarning)
        restarted = ray.get_runtime_context().was_current_actor_reconstructed
    return wrapped_seed(seed + 10_000 * index + (1_000_000 if restarted else 0))


def _fresh_stats() -> dict[str, Any]:
    return {"frames": 0, "episodes": [], "inference_seconds": 0.0, "put_seconds": 0.0, "meta": []}


def _collect(pending: list[tuple[Any, Any]] | None) -> None:
    """Take the answers still owed to a failing actor (an error Ray would otherwise print as
    unhandled when the request is dropped: the other groups' of the same failure)."""
    for _, ref in pending or ():
        if ref is not None:
            with contextlib.suppress(Exception):  # (the actor's own error is the one raised)
                ray.get(ref, timeout=5)
