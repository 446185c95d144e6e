"""``Supervisor``: brings a run's workers back after Ray restarted them. With several trainers,
one that dies (or a failed collective) restarts them all from trainer 0's latest checkpoint."""

from __future__ import annotations

import logging
import time
from typing import Any

from looprl.distributed.cluster import answer_timeout, error_line
from looprl.distributed.placement import WorkerPool
from looprl.environments.faults import place

__all__ = ["Supervisor"]

logger = logging.getLogger(__name__)


class Supervisor:
    """Restarts the ``pool``'s workers that died (at most ``runtime.max_restarts`` times)."""

    def __init__(self, pool: WorkerPool) -> None:
        self.pool, self.runtime, self.result = pool, pool.runtime, pool.result

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
            self._env_faults(name, s.get("env_faults", ()))
            self._kill_if_hung(name, s.get("env_call"))

    def _env_faults(self, name: str, faults: Any) -> None:
        """Log and record worker ``name``'s ``EnvFault`` s (as ``"actor0/copy1"``)."""
        for fault in faults:
            copy = "/env" if fault.copy is None else f"/copy{fault.copy}"
            logger.warning("%s: %s; rebuilt it, dropped its episode in progress and went on "
                           "(frame %d)", name, fault.line(), self.result.frames)
            self.result.restarts.append((f"{name}{copy}", self.result.frames))

    def _kill_if_hung(self, name: str, call: Any) -> None:
        """Kill worker ``name`` if its env call has run past ``runtime.env_timeout``."""
        import ray
        timeout = self.runtime.env_timeout
        if call is None or timeout is None or call[0] <= timeout:
            return
        seconds, env, copy, method, episode, step = call
        where = place(episode, step)
        logger.warning("%s: %s%s has been in %s for %.0f s%s, longer than "
                       "runtime.env_timeout=%g s: killing %s (Ray restarts it)", name, env,
                       "" if copy is None else f" copy {copy}", method, seconds,
                       f" ({where})" if where else "", timeout, name)
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
        from looprl.distributed.ddp import TrainerGroupError
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
        self._check_restarts_left([name], f"{name} worker died", error_line(error))
        logger.warning("%s worker died at frame %d (%s); Ray restarts it and the run goes on",
                       name, self.result.frames, error_line(error))
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
