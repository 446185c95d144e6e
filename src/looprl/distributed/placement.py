"""``WorkerPool``: the Ray workers of one run, from placement to shutdown."""

from __future__ import annotations

import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any

from looprl.core.suggest import log_worker_warnings
from looprl.distributed.cluster import answer_timeout, answers, error_line, no_answer
from looprl.distributed.config import AlgorithmSpec, RuntimeConfig
from looprl.distributed.run_state import TRAINER_CHECKPOINT, DistributedResult, SampleCounts
from looprl.environments.wrappers import most_counted

__all__ = ["WorkerPool"]

logger = logging.getLogger(__name__)


class WorkerPool:
    """Places the workers of one run and runs their loops; ``workers``: the Ray actors by
    name (``server``, ``trainer``, ``trainer1``, ``policy0``, ``actor0``, ``eval0``, ...);
    ``runs``: each loop's ``run()`` call; ``statistics``: the normalizers' most counted."""

    def __init__(self, spec: AlgorithmSpec, runtime: RuntimeConfig, result: DistributedResult,
                 counts: SampleCounts, statistics: list[Any] | None = None) -> None:
        self.spec, self.runtime, self.result, self.counts = spec, runtime, result, counts
        self.statistics = statistics
        self.workers: dict[str, Any] = {}
        self.runs: dict[str, Any] = {}
        self.failed: set[str] = set()  # the workers whose loop raised
        self.pids: dict[str, int] = {}
        self.died: set[str] = set()  # the workers whose last ``stats`` call found them dead
        self.meta_state: dict[int, Any] = {}  # each actor's latest (``actors_meta_state``)
        #: each actor's and policy worker's exploration schedules' steps, the furthest polled
        self.schedules: dict[str, list[int]] = {}
        self.trainers = ["trainer"] + [f"trainer{rank}" for rank in range(1, runtime.trainers)]
        self._rendezvous: list[str] = []  # rendezvous files of the trainer groups
        self._prefix = f"looprl-{uuid.uuid4().hex[:12]}-"

    def start(self, run_dir: str | None, seed: int, frames: int | None = None,
              meta_state: dict[int, Any] | None = None,
              schedules: dict[str, list[int]] | None = None, checkpoint_steps: int = 0) -> None:
        """Create the workers (sharing ``frames``, from a resumed run's ``meta_state`` and
        ``schedules``, trainer 0 from ``run_dir``'s checkpoint), wait until they are placed, form
        the trainer group and start the loops; ``RuntimeError`` if one is not placed within
        ``runtime.placement_timeout`` seconds or failed to start."""
        import ray
        self.meta_state = dict(meta_state or {})
        self.schedules.update(schedules or {})
        _warn_cluster_too_small(ray, self.runtime)
        self._create(run_dir, seed, frames, self.meta_state, checkpoint_steps)
        self._wait_placed(ray)
        self.form_trainer_group()
        for name in self.workers:
            if name != "server" and not name.startswith("policy"):
                self.start_loop(name)

    def _create(self, run_dir: str | None, seed: int, frames: int | None,
                meta_state: dict[int, Any], checkpoint_steps: int) -> None:
        """Create the workers, named Ray actors that find each other by name."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from looprl.distributed.trainer_worker import TrainerWorker
        from looprl.distributed.workers import ActorWorker, ParameterServer, PolicyWorker
        rt, start = self.runtime, self._start
        restart = {"max_restarts": rt.max_restarts, "max_task_retries": 0}
        grouped = {**restart, "max_restarts": -1} if rt.trainers > 1 else restart  # we count
        path = Path(os.path.abspath(run_dir or "."), TRAINER_CHECKPOINT)  # (named by errors)
        saved = (checkpoint_steps, path.read_bytes()) if run_dir and path.is_file() else None
        # the server, never restarted, runs on the driver's node: it lives as long as the
        # controller it hands the checkpoints to, whichever other node is lost
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(),
                                              soft=False)
        server = start("server", ParameterServer, (ray.cloudpickle.dumps(self.spec), saved),
                       scheduling_strategy=here)
        trainers = [start(name, TrainerWorker, (rt, server, seed, rank, str(path)),
                          num_cpus=rt.cpus_per_trainer, num_gpus=rt.gpus_per_trainer, **grouped)
                    for rank, name in enumerate(self.trainers)]
        policies = [start(f"policy{i}", PolicyWorker,
                          (rt, server, len(range(i, rt.actors, rt.policy_workers))),
                          num_cpus=rt.cpus_per_policy, num_gpus=rt.gpus_per_policy, **restart)
                    for i in range(rt.policy_workers)]
        share = None if frames is None else -(-frames // rt.actors)
        actors = [start(f"actor{i}", ActorWorker,  # (evaluation loads their statistics)
                        (i, rt, server, trainers[i % rt.trainers],
                         policies[i % len(policies)] if policies else None, seed, False, share,
                         meta_state.get(i)),
                        num_cpus=rt.cpus_per_actor, scheduling_strategy="SPREAD", **restart)
                  for i in range(rt.actors)]
        for i in range(rt.eval_workers):
            start(f"eval{i}", ActorWorker, (rt.actors + i, rt, server, None, None, seed, True,
                                            None, None, actors),
                  num_cpus=rt.cpus_per_actor, **restart)

    def _start(self, name: str, cls: Any, args: tuple[Any, ...], **options: Any) -> str:
        """Create worker ``name`` as a Ray actor named uniquely for this run; its Ray name."""
        ray_name = f"{self._prefix}{name}"
        self.workers[name] = cls.options(name=ray_name, **options).remote(*args)
        return ray_name

    def _wait_placed(self, ray: Any) -> None:
        """Wait for every worker's ``ready()`` (one whose constructor failed raises at once)."""
        names = {self.workers[n].ready.remote(): n for n in self.workers if n != "server"}
        deadline = time.monotonic() + self.runtime.placement_timeout
        while names:
            done, _ = ray.wait(list(names), timeout=max(0.0, deadline - time.monotonic()))
            if not done:
                _not_placed(ray, self.runtime, list(names.values()))
            name = names.pop(done[0])
            self.placed(name, self._get(done[0], name))

    def placed(self, name: str, answer: dict[str, Any]) -> None:
        """Record worker ``name``'s ``ready()`` and bring it to the run's counts and statistics."""
        restarted = name in self.pids
        self.result.nodes[name], self.pids[name] = answer["node"], answer["id"]
        if name in self.trainers:
            self.counts.started(name, answer["counts"])
            self._get(self.workers[name].count_frames_from.remote(
                self.result.frames // self.runtime.trainers), name)
        self.explore_on(name)
        if name.startswith("actor") and (restarted or self.statistics is not None):
            statistics = self.normalization() if restarted else self.statistics
            self._get(self.workers[name].load_normalization.remote(statistics), name)
        if name == "trainer" and answer["resumed_from"] is not None:
            logger.warning("trainer resumed from its checkpoint at step %d",
                           answer["resumed_from"])

    def explore_on(self, name: str) -> None:
        """Move worker ``name``'s exploration schedules to the furthest steps polled, if any."""
        if self.schedules.get(name):
            self._get(self.workers[name].explore_from.remote(self.schedules[name]), name)

    def form_trainer_group(self) -> None:
        """Several trainers: all join one torch.distributed group at rank 0's rendezvous."""
        if self.runtime.trainers == 1:
            return
        init_method = self._get(self.workers["trainer"].rendezvous.remote(), "trainer")
        if init_method.startswith("file://"):
            self._rendezvous.append(init_method.removeprefix("file://"))
        refs = [self.workers[name].join_group.remote(init_method) for name in self.trainers]
        for name, ref in zip(self.trainers, refs, strict=True):
            self._get(ref, name, extra=self.runtime.trainer_timeout)

    def start_loop(self, name: str) -> None:
        """Start (or start again) worker ``name``'s loop."""
        self.runs[name] = self.workers[name].run.remote()

    def stats(self) -> dict[str, dict[str, Any]]:
        """Each live worker's ``stats()`` answer (``died``: those found dead)."""
        self.died = set()
        stats = answers({n: worker.stats.remote() for n, worker in self.workers.items()
                          if n != "server"}, answer_timeout(self.runtime), self.died)
        for name, s in stats.items():
            steps, known = s.get("schedules"), self.schedules.get(name)
            if steps:  # (a worker Ray restarted answers its first steps until ``explore_on``)
                self.schedules[name] = [max(pair) for pair in zip(known, steps, strict=True)
                                        ] if known else steps
        return stats

    def stop(self) -> bool:
        """Stop the loops and compare the trainers; whether all stopped and answered."""
        import ray
        for name in self.runs:
            self.workers[name].stop.remote()
        timeout = answer_timeout(self.runtime)
        _, running = ray.wait(list(self.runs.values()), num_returns=len(self.runs),
                              timeout=timeout)
        if running:  # (their last rows and statistics are lost: they are killed)
            logger.warning("%s did not stop (%s)", ", ".join(
                n for n, ref in self.runs.items() if ref in running), no_answer(timeout))
        try:
            answers = ray.get([self.workers[n].digest.remote() for n in self.trainers],
                              timeout=timeout)
        except ray.exceptions.RayError as error:
            logger.warning("could not compare the trainers: %s%s", error_line(error),
                           _raise_placement_timeout(error, timeout))
            return False
        self.result.trainer_steps = [answer["steps"] for answer in answers]
        self.result.train_steps = self.result.trainer_steps[0]
        self.result.trainers_in_sync = len({answer["digest"] for answer in answers}) == 1
        if not self.result.trainers_in_sync:
            logger.warning("the trainers ended with different parameters (steps %s)",
                           self.result.trainer_steps)
        return not running

    def actors_meta_state(self) -> dict[int, Any]:
        """Each training actor's ``components_state()`` (a silent one's: its latest)."""
        actors = {int(n.removeprefix("actor")): worker for n, worker in self.workers.items()
                  if n.startswith("actor") and n not in self.failed}
        timeout = answer_timeout(self.runtime)  # (the actors' wait: half, to answer within it)
        states = answers({i: actor.components_state.remote(timeout / 2)
                           for i, actor in actors.items()}, timeout)
        for index in actors:
            if states.get(index) is None:
                logger.warning("actor %d did not hand over its meta components' and "
                               "exploration's state (its loop failed, or %s): the checkpoint "
                               "keeps its earlier one", index, no_answer(timeout))
            else:
                self.meta_state[index] = states[index]
        return dict(self.meta_state)

    def normalization(self) -> list[Any] | None:
        """The most counted of the training actors' statistics and ``statistics``, kept there."""
        from looprl.distributed.workers import training_normalization
        self.statistics = most_counted([training_normalization(
            [self.workers[f"actor{i}"] for i in range(self.runtime.actors)],
            answer_timeout(self.runtime)), self.statistics])
        if self.statistics is None:
            logger.warning("no actor handed over its normalizers' statistics in time: what "
                           "loads them (evaluation, a restarted actor) normalizes anew")
        return self.statistics

    def ask(self, name: str, method: str, *args: Any) -> Any:
        """Worker ``name``'s answer to ``method(*args)`` within ``answer_timeout(runtime)``."""
        import ray
        return ray.get(getattr(self.workers[name], method).remote(*args),
                       timeout=answer_timeout(self.runtime))

    def _get(self, ref: Any, name: str, extra: float = 0.0) -> Any:
        """``ray.get(ref)`` of worker ``name`` starting; its failure as a ``RuntimeError``."""
        import ray
        timeout = answer_timeout(self.runtime) + extra
        try:
            return ray.get(ref, timeout=timeout)
        except ray.exceptions.RayError as error:
            self.log_failed_start(name, error)
            raise RuntimeError(f"{name} worker failed to start: {error_line(error)}"
                               f"{_start_hint(error, timeout)}") from None

    def log_failed_start(self, name: str, error: Exception) -> None:
        """If worker ``name``'s constructor raised: log the warnings it handed to the server."""
        import ray
        if getattr(error, "actor_init_failed", False):
            try:
                log_worker_warnings(ray.get(self.workers["server"].take_warnings.remote(
                    f"{self._prefix}{name}"), timeout=answer_timeout(self.runtime)))
            except ray.exceptions.RayError:
                pass  # (the server is gone: the error is the run's news)

    def kill(self) -> None:
        """Kill every worker (no restarts) and remove the rendezvous files."""
        import ray
        for worker in self.workers.values():
            ray.kill(worker, no_restart=True)
        self.workers.clear()
        for path in self._rendezvous:
            Path(path).unlink(missing_ok=True)


def _start_hint(error: Exception, timeout: float) -> str:
    """What to do about a worker that failed to start with ``error`` (Ray's)."""
    if "No module named" in error_line(error):
        return (" (code your workers import must reach them: install it on every node or pass "
                "runtime.runtime_env={'py_modules': [...]} / {'working_dir': ...})")
    return _raise_placement_timeout(error, timeout)


def _not_placed(ray: Any, rt: RuntimeConfig, missing: list[str]) -> None:
    """``RuntimeError`` for the ``missing`` workers, not placed in time: why (one line)."""
    free, total = ray.available_resources(), ray.cluster_resources()
    _check_node_fits(ray, rt, missing)
    if _holds(total, rt):
        actors = any(name.startswith(("actor", "eval")) for name in missing)
        raise RuntimeError(
            f"worker(s) {missing} did not start within {rt.placement_timeout:g}s, although "
            f"the cluster holds what the run reserves ({rt.reserved_cpus():g} CPUs, "
            f"{rt.reserved_gpus():g} GPUs): its processes start slowly, so the machine may "
            "be overloaded" + (", or an actor's environment hangs in its first reset (an "
            "actor makes and resets its env copies as it starts: try the environment with "
            "looprl.distributed.test_environment)" if actors else "") +
            "; raise runtime.placement_timeout or run when it is quieter")
    raise RuntimeError(
        f"the cluster did not place worker(s) {missing} within "
        f"{rt.placement_timeout:g}s: the run reserves {rt.reserved_cpus():g} CPUs and "
        f"{rt.reserved_gpus():g} GPUs and the cluster has {free.get('CPU', 0):g} CPUs and "
        f"{free.get('GPU', 0):g} GPUs free; lower runtime.actors or the "
        "runtime.cpus_per_*/gpus_per_* options, or add nodes")


def _holds(resources: dict[str, float], rt: RuntimeConfig) -> bool:
    """Whether ``resources`` (Ray's) hold the CPUs and GPUs the run reserves."""
    return (rt.reserved_cpus() <= resources.get("CPU", 0)
            and rt.reserved_gpus() <= resources.get("GPU", 0))


def _warn_cluster_too_small(ray: Any, rt: RuntimeConfig) -> None:
    """Warn if the cluster cannot hold the run's workers (an autoscaler may add nodes)."""
    total = ray.cluster_resources()
    try:
        _check_node_fits(ray, rt, ["actor", "trainer"] + ["policy"] * (rt.policy_workers > 0))
    except RuntimeError as error:
        logger.warning("%s; the workers wait up to runtime.placement_timeout=%gs for an "
                       "autoscaler to add one", error, rt.placement_timeout)
    if not _holds(total, rt):
        logger.warning(
            "the run reserves %g CPUs and %g GPUs and the Ray cluster has %g CPUs and %g GPUs "
            "in all: its workers wait up to runtime.placement_timeout=%gs for an autoscaler to "
            "add nodes; lower runtime.actors or the runtime.cpus_per_*/gpus_per_* options, or "
            "give Ray more (ray.init(num_cpus=...))", rt.reserved_cpus(), rt.reserved_gpus(),
            total.get("CPU", 0), total.get("GPU", 0), rt.placement_timeout)


def _check_node_fits(ray: Any, rt: RuntimeConfig, missing: list[str]) -> None:
    """``RuntimeError`` if no node is large enough for one of the ``missing`` workers."""
    nodes = [node["Resources"] for node in ray.nodes() if node["Alive"]]
    for role in ("actor", "policy", "trainer"):
        cpus = getattr(rt, f"cpus_per_{role}")
        gpus = getattr(rt, f"gpus_per_{role}", 0.0)
        if not any(name.startswith(role) or role == "actor" and name.startswith("eval")
                   for name in missing):
            continue
        if not any(node.get("CPU", 0) >= cpus and node.get("GPU", 0) >= gpus for node in nodes):
            largest = max(nodes, key=lambda node: (node.get("CPU", 0), node.get("GPU", 0)),
                          default={})
            raise RuntimeError(
                f"no node of the cluster can place {role} workers: each reserves {cpus:g} "
                f"CPUs and {gpus:g} GPUs (runtime.cpus_per_{role}"
                + (f", runtime.gpus_per_{role}" if role != "actor" else "")
                + f") and the largest node has {largest.get('CPU', 0):g} CPUs and "
                f"{largest.get('GPU', 0):g} GPUs; lower them, or add a larger node")


def _raise_placement_timeout(error: Exception, timeout: float) -> str:
    """For a worker's answer that timed out: which option to raise (else "")."""
    import ray
    return f" ({no_answer(timeout)})" if isinstance(error, ray.exceptions.GetTimeoutError) else ""
