"""``WorkerPool``: the Ray workers of one run, from placement to shutdown; ``Supervisor``
brings them back after Ray restarted them (with several trainers, one that dies, or a failed
collective, restarts them all from trainer 0's latest checkpoint)."""

from __future__ import annotations

import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any

from looprl.collector.recovery import hung
from looprl.core.files import save_atomically
from looprl.core.suggest import log_worker_warnings
from looprl.distributed.cluster import (
    answer_timeout,
    answers,
    error_line,
    no_answer,
    not_placed,
    warn_cluster_too_small,
)
from looprl.distributed.config import AlgorithmSpec, RuntimeConfig
from looprl.distributed.pipeline import load_parameters
from looprl.distributed.run_state import TRAINER_CHECKPOINT, DistributedResult, SampleCounts
from looprl.environments.wrappers import most_counted, save_normalization

__all__ = ["Supervisor", "WorkerPool"]

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
        #: each training actor's env steps polled so far (this process's run)
        self.acted = {f"actor{i}": 0 for i in range(runtime.actors)}
        self.trainers = ["trainer"] + [f"trainer{rank}" for rank in range(1, runtime.trainers)]
        self._rendezvous: list[str] = []  # rendezvous files of the trainer groups
        self._prefix = f"looprl-{uuid.uuid4().hex[:12]}-"

    def start(self, run_dir: str | None, seed: int, frames: int | None = None,
              meta_state: dict[int, Any] | None = None, schedules: dict[str, list[int]] | None
              = None, checkpoint_steps: int = 0, hold_every: int | None = None) -> None:
        """Create the workers (sharing ``frames``; a resumed run's ``meta_state`` and
        ``schedules``; trainer 0 from ``run_dir``'s checkpoint; actor 0 stopping every
        ``hold_every`` env steps), wait until placed, form the trainer group, start the loops;
        ``RuntimeError`` if one is not placed within ``runtime.placement_timeout`` s or failed."""
        import ray
        self.meta_state = dict(meta_state or {})
        self.schedules.update(schedules or {})
        warn_cluster_too_small(ray, self.runtime)
        self._create(run_dir, seed, frames, self.meta_state, checkpoint_steps, hold_every or 0)
        self._wait_placed(ray)
        self.form_trainer_group()
        for name in self.workers:
            if name != "server" and not name.startswith("policy"):
                self.start_loop(name)

    def _create(self, run_dir: str | None, seed: int, frames: int | None,
                meta_state: dict[int, Any], checkpoint_steps: int, hold: int = 0) -> None:
        """Create the workers, named Ray actors that find each other by name."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from looprl.distributed import policy_worker, trainer_worker
        from looprl.distributed.workers import ActorWorker, ParameterServer
        rt, start = self.runtime, self._start
        restart = {"max_restarts": rt.max_restarts, "max_task_retries": 0}
        grouped = {**restart, "max_restarts": -1} if rt.trainers > 1 else restart  # we count
        path = Path(os.path.abspath(run_dir or "."), TRAINER_CHECKPOINT)  # (named by errors)
        saved = (checkpoint_steps, path.read_bytes()) if run_dir and path.is_file() else None
        # the server, never restarted, runs on the driver's node: it lives as long as the
        # controller it hands the checkpoints to, whichever other node is lost
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(),
                                              soft=False)
        server = start("server", ParameterServer,
                       (ray.cloudpickle.dumps(self.spec), saved, meta_state),
                       scheduling_strategy=here)
        trainers = [start(name, trainer_worker.TrainerWorker, (rt, server, seed, rank, str(path)),
                          num_cpus=rt.cpus_per_trainer, num_gpus=rt.gpus_per_trainer, **grouped)
                    for rank, name in enumerate(self.trainers)]
        policies = [start(f"policy{i}", policy_worker.PolicyWorker,
                          (rt, server, len(range(i, rt.actors, rt.policy_workers))),
                          num_cpus=rt.cpus_per_policy, num_gpus=rt.gpus_per_policy, **restart)
                    for i in range(rt.policy_workers)]
        share = None if frames is None else -(-frames // rt.actors)
        actors = [start(f"actor{i}", ActorWorker,  # (evaluation loads their statistics)
                        (i, rt, server, trainers[i % rt.trainers],
                         policies[i % len(policies)] if policies else None, seed, False, share,
                         (), hold if i == 0 else None),
                        num_cpus=rt.cpus_per_actor, scheduling_strategy="SPREAD", **restart)
                  for i in range(rt.actors)]
        for i in range(rt.eval_workers):
            start(f"eval{i}", ActorWorker, (rt.actors + i, rt, server, None, None, seed, True,
                                            None, actors),
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
                not_placed(ray, self.runtime, list(names.values()))
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
            logger.warning("trainer resumed from its checkpoint at step %d", answer["resumed_from"])

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
        """Start (or start again) worker ``name``'s loop; an actor Ray restarted goes on with
        what is left of its share (was: its whole share again, a run past its budget)."""
        acted = (self.acted[name],) if name in self.acted else ()
        self.runs[name] = self.workers[name].run.remote(*acted)

    def stats(self) -> dict[str, dict[str, Any]]:
        """Each live worker's ``stats()`` answer (``died``: those found dead)."""
        self.died = set()
        stats = answers({n: worker.stats.remote() for n, worker in self.workers.items()
                          if n != "server"}, answer_timeout(self.runtime), self.died)
        for name, s in stats.items():
            if name in self.acted:
                self.acted[name] += s.get("frames", 0)
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
        _, running = ray.wait(list(self.runs.values()), num_returns=len(self.runs), timeout=timeout)
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

    def save_policy(self, run_dir: str, final: bool = False) -> bool:
        """Write the policy as ``policy.pt`` and the normalizers' ``statistics`` in ``run_dir``:
        the trainer's (``final``: its loop stopped), else the latest it published (``False``:
        none yet)."""
        if final:
            checkpoint = self.ask("trainer", "policy_checkpoint")
        elif (published := self.ask("server", "get", -1)) is None:
            return False
        else:  # (a consistent copy: the trainer's own parameters change as it trains)
            checkpoint = _published_checkpoint(self.spec, published)
        save_atomically(checkpoint, Path(run_dir) / "policy.pt")
        save_normalization(self.normalization(), run_dir)
        return True

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
            hint = _start_hint(error, timeout)
            raise RuntimeError(f"{name} worker failed to start: {error_line(error)}{hint}"
                               ) from None

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



def _published_checkpoint(spec: AlgorithmSpec, published: tuple[int, int, bytes]) -> Any:
    """The checkpoint of a policy of ``spec`` holding what the server ``published``."""
    from looprl.distributed.server import unpack  # (imports Ray)
    policy = spec.make_policy()
    load_parameters(policy, unpack(published[2])[0])
    policy.version = published[1]
    return policy.get_checkpoint()


def _start_hint(error: Exception, timeout: float) -> str:
    """For a worker that failed to start: what to do about it (else "")."""
    if "No module named" in error_line(error):
        return (" (code your workers import must reach them: install it on every node or "
                "pass runtime.runtime_env={'py_modules': [...]} / {'working_dir': ...})")
    return _raise_placement_timeout(error, timeout)


def _raise_placement_timeout(error: Exception, timeout: float) -> str:
    """For a worker's answer that timed out: which option to raise (else "")."""
    import ray
    return f" ({no_answer(timeout)})" if isinstance(error, ray.exceptions.GetTimeoutError) else ""


class Supervisor:
    """Restarts the ``pool``'s workers that died (at most ``runtime.max_restarts`` times)."""

    def __init__(self, pool: WorkerPool) -> None:
        self.pool, self.runtime, self.result = pool, pool.runtime, pool.result
        self._hung: dict[str, str] = {}  # why a worker was killed (its env call that hung)

    def check_workers(self, stats: dict[str, dict[str, Any]]) -> None:
        """Record one poll's policy worker restarts and env faults; kill hung actors; wait for
        a dead policy worker to come back (``RuntimeError`` if Ray does not restart it)."""
        import ray
        for name in sorted(self.pool.died):
            if name.startswith("policy"):  # (actors and trainers: ``check_loops``)
                self._wait_restarted(ray, name)  # (the pid it answers: recorded below)
        pids = self.pool.pids
        for name, s in stats.items():
            if name.startswith("policy") and s["id"] != pids.setdefault(name, s["id"]):
                logger.warning("%s worker died and Ray restarted it (frame %d); actors ask it "
                               "again and the run goes on", name, self.result.frames)
                self.result.restarts.append((name, self.result.frames))
                pids[name] = s["id"]
                self.pool.explore_on(name)
            for fault in s.get("env_faults", ()):  # (``EnvFault`` s, as a local run's)
                logger.warning("%s", fault.recovered(fault.frame, name))
                self.result.restarts.append(fault.restart(name))
            self._kill_if_hung(name, s.get("env_call"))

    def _kill_if_hung(self, name: str, call: Any) -> None:
        """Kill worker ``name`` if its env call has run past ``runtime.env_timeout``."""
        import ray
        timeout = self.runtime.env_timeout
        if call is None or timeout is None or call[0] <= timeout:
            return
        self._hung[name] = hung(call, "runtime.env_timeout", timeout)
        logger.warning("%s: %s: killing %s (Ray restarts it)", name, self._hung[name], name)
        ray.kill(self.pool.workers[name], no_restart=False)

    def check_loops(self) -> None:
        """Restart the loop of every worker whose ``run`` ended; ``RuntimeError`` if one failed,
        stopped on its own, could not be restarted or died too often."""
        import ray
        runs = self.pool.runs
        finished, _ = ray.wait(list(runs.values()), num_returns=len(runs), timeout=0)
        broken: list[tuple[str, Exception]] = []  # trainers of the group
        for name, ref in list(runs.items()):
            if ref in finished:
                self._ended(ray, name, ref, broken)
        if broken:
            self._restart_trainers(ray, broken)

    def _ended(self, ray: Any, name: str, ref: Any, broken: list[tuple[str, Exception]]) -> None:
        """Restart worker ``name`` whose loop ended, or add it to the ``broken`` trainers."""
        from looprl.distributed.trainer_worker import TrainerGroupError
        grouped = self.runtime.trainers > 1 and name in self.pool.trainers
        try:
            ray.get(ref)
        except ray.exceptions.RayActorError as error:
            if grouped:
                broken.append((name, error))
            else:
                self._restart(ray, name, error)
            return
        except ray.exceptions.RayTaskError as error:
            cause = error.as_instanceof_cause()
            if grouped and isinstance(cause, TrainerGroupError):
                broken.append((name, cause))
                return
            self.pool.failed.add(name)  # (not asked for its state again: the error names it)
            raised = error.cause if isinstance(error.cause, Exception) else cause  # (its own)
            if isinstance(raised, FloatingPointError):  # (a diverged loss: as a local run's)
                raise FloatingPointError(error_line(raised)) from None
            raise RuntimeError(f"{name} worker failed: {type(raised).__name__}: "
                               f"{error_line(raised)}") from None
        raise RuntimeError(f"{name} worker stopped on its own")

    def _check_restarts_left(self, names: list[str], what: str, last: str) -> None:
        """Raise once ``names`` together have been restarted ``runtime.max_restarts`` times."""
        restarts = sum(1 for worker, _ in self.result.restarts if worker in names)
        if restarts >= self.runtime.max_restarts:
            raise RuntimeError(f"{what} {restarts + 1} times (runtime.max_restarts="
                               f"{self.runtime.max_restarts}); last: {last}")

    def _restart(self, ray: Any, name: str, error: Exception) -> None:
        """Start the loop of worker ``name`` again once Ray has restarted it."""
        why = self._hung.pop(name, None) or error_line(error)  # (killed: the call that hung)
        self._check_restarts_left([name], f"{name} worker died", why)
        logger.warning("%s worker died at frame %d (%s); Ray restarts it and the run goes on",
                       name, self.result.frames, why)
        self.pool.placed(name, self._wait_restarted(ray, name))
        self.result.restarts.append((name, self.result.frames))
        self.pool.start_loop(name)

    def _restart_trainers(self, ray: Any, broken: list[tuple[str, Exception]]) -> None:
        """One trainer of several died or failed in a collective: restart them all."""
        trainers = self.pool.trainers
        dead = [name for name, error in broken if isinstance(error, ray.exceptions.RayActorError)]
        name, error = next((b for b in broken if b[0] in dead), broken[0])
        self._check_restarts_left(trainers, "the trainers failed", f"{name}: {error_line(error)}")
        logger.warning("%s worker failed at frame %d (%s); restarting all %d trainers",
                       name, self.result.frames, error_line(error), len(trainers))
        for other in trainers:
            if other not in dead:
                ray.kill(self.pool.workers[other], no_restart=False)
        for other in trainers:
            self.pool.placed(other, self._wait_restarted(ray, other,
                                                         former=self.pool.pids.get(other)))
        self.result.restarts.append((name, self.result.frames))
        self.pool.form_trainer_group()
        for other in trainers:
            self.pool.start_loop(other)

    def _wait_restarted(self, ray: Any, name: str, former: int | None = None) -> Any:
        """The ``ready()`` answer of ``name`` restarted (in a process other than ``former``)."""
        timeout = answer_timeout(self.runtime)
        deadline = time.monotonic() + timeout
        while True:
            try:
                answer = ray.get(self.pool.workers[name].ready.remote(), timeout=timeout)
                if former is None or answer["id"] != former:
                    return answer
            except ray.exceptions.RayError as error:
                self.pool.log_failed_start(name, error)  # (a constructor that raised)
                init_failed = getattr(error, "actor_init_failed", False)  # (not restarted)
                restarting = isinstance(error, ray.exceptions.RayActorError) and (
                    former is not None or isinstance(error, ray.exceptions.ActorUnavailableError)
                ) and not init_failed
                if not restarting and not init_failed and isinstance(
                        error, ray.exceptions.ActorDiedError):  # (dead for good; Ray's own
                    raise RuntimeError(  # text is paragraphs on the exit's possible causes)
                        f"{name} worker died and Ray did not restart it: its runtime."
                        f"max_restarts={self.runtime.max_restarts} restarts are spent") from None
                if not restarting:
                    raise RuntimeError(f"{name} worker could not be restarted: "
                                       f"{error_line(error)}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} worker did not come back within {timeout:.0f}s "
                                   "after it died: raise runtime.placement_timeout (the "
                                   "wait is it, at least 120 s)")
            time.sleep(0.2)
