"""``DistributedRun``: starts, monitors and stops the Ray workers of one training run.

    from looprl.distributed import AlgorithmSpec, DistributedRun, RuntimeConfig

    spec = AlgorithmSpec(env="CartPole-v1", policy="actor-critic-separate",
                         policy_args=dict(obs_dim={"obs": 4}, action_dim=2),
                         trainer="ppo", trainer_args=dict(epochs=4))
    result = DistributedRun(spec, RuntimeConfig(actors=2), frames=100_000).run()

The controller polls every worker twice a second: it logs the finished episodes (the same
``results.csv``, ``returns100.csv`` and TensorBoard events as a local run), the trainer's
statistics (``losses.csv``) and each worker's throughput (``throughput.csv``). A worker that
dies is restarted by Ray and its loop started again; a trainer resumes from its latest
checkpoint. Episodes are reported to the controller, not to the trainer, so a trainer's
death loses none of them.

With ``runtime.trainers = N > 1`` the controller starts trainers ``trainer`` (rank 0),
``trainer1``, ..., gives actor ``i`` trainer ``i % N``, and forms their torch.distributed group
(rank 0 names the rendezvous, all join, DDP averages gradients). Statistics and losses are
trainer 0's (sample counts summed over trainers). When one trainer dies, or a collective
fails, the others cannot go on alone: the controller kills them all, Ray restarts them, they
form a new group and resume from trainer 0's latest checkpoint.

Whenever the trainer has checkpointed (every ``runtime.checkpoint_every`` steps), the
controller saves its own state beside it (``controller_checkpoint.pt``: the logger's
counters and the result so far). A run whose controller died (Ctrl-C, SIGKILL, a lost
machine) continues with ``DistributedRun(..., resume_from=RUN_DIR)`` (``looprl run --resume
RUN_DIR``): the trainer from its latest checkpoint, the logs and counters from the
controller's, the CSV rows written after it dropped. Samples in flight and episodes in
progress are lost; the run is asynchronous anyway, so it does not repeat an uninterrupted
one step for step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from looprl.distributed.cluster import error_line as _message
from looprl.distributed.cluster import is_local, loopback_only, start_ray
from looprl.distributed.config import AlgorithmSpec, RuntimeConfig
from looprl.distributed.run_state import (
    CONTROLLER_CHECKPOINT,
    ControllerState,
    DistributedResult,
    find_controller_checkpoint,
)
from looprl.distributed.watch import save_spec

__all__ = ["DistributedResult", "DistributedRun", "loopback_only", "start_ray"]

logger = logging.getLogger(__name__)

THROUGHPUT_HEADER = "time,worker,frames_per_s,env_share,inference_share,batch_rows,lag,dropped"


class DistributedRun:
    """One training run on Ray: actor, policy, trainer and evaluation workers.

    Args:
        spec: the environment, policy and trainer.
        runtime: worker counts, resources, and where Ray runs.
        frames: the training budget in env steps (summed over actors).
        logdir: root of run directories (``None``: write nothing; the trainer then cannot
            checkpoint).
        seed: seeds the trainer, the policies and (offset per actor) the envs.
        name: the run's name in its directory, ``{logdir}/{name}/{env}``.
        quiet: no progress display.
        resume_from: a run directory (or a folder above it) holding the
            ``controller_checkpoint.pt`` of a run to continue (see the module docstring);
            ``frames`` is the whole run's budget, as it was or extended.
    """

    def __init__(self, spec: AlgorithmSpec, runtime: RuntimeConfig | None = None,
                 frames: int = 100_000, logdir: str | None = "runs", seed: int = 0,
                 name: str | None = None, quiet: bool = False, resume_from: str | None = None):
        self.spec = spec.portable()
        self.runtime = runtime or RuntimeConfig()
        self.frames = int(frames)
        self.seed = seed
        self.quiet = quiet
        self.name = name or f"{spec.trainer}-ray"
        self.logdir = logdir
        if logdir is None and self.runtime.checkpoint_every:
            self.runtime.checkpoint_every = None
        self.workers: dict[str, Any] = {}
        self.result = DistributedResult()
        self._runs: dict[str, Any] = {}
        self._log: Any = None
        self._throughput: Path | None = None
        self._started_ray = False
        self.resume_from = resume_from
        self._snapshots = 0  # controller checkpoints taken
        self._pids: dict[str, int] = {}  # worker processes, to tell restarted ones apart
        self._counts: dict[str, np.ndarray] = {}  # each trainer's (received, dropped) polled
        self._counted: dict[str, np.ndarray] = {}  # ... and those of its earlier processes
        self._rendezvous: list[str] = []  # rendezvous files of the trainer groups

    # -- life cycle ------------------------------------------------------------------------
    def run(self, callback: Callable[[DistributedRun], None] | None = None) -> DistributedResult:
        """Train for ``frames`` env steps; return what happened.

        Args:
            callback: called after every poll with this run (e.g. to kill a worker in a test).

        Raises:
            ConnectionError: ``runtime.address`` cannot be reached.
            RuntimeError: the cluster cannot place the workers within
                ``runtime.placement_timeout`` seconds, or a worker failed (its error inside).
        """
        self._check_spec()
        self._started_ray = start_ray(self.runtime)
        try:
            if self._started_ray and is_local(self.runtime):
                self._check_local_resources()
            self._open_logs()
            self._start_workers()
            self._loop(callback)
        finally:
            self._shutdown()
        return self.result

    def _check_spec(self) -> None:
        """Build the env, policy and trainer here first: a bad name fails in one line, now.

        Raises:
            ValueError: the spec puts the policy on a GPU (workers compute where they reserved
                GPUs: ``runtime.gpus_per_trainer``, ``runtime.gpus_per_policy``).
        """
        device = self.spec.policy_args.get("device")
        if device is not None and torch.device(device).type != "cpu":
            raise ValueError(f"policy_args device={device!r}: on Ray, each worker computes on "
                             "the GPUs it reserves; drop the device and set "
                             "runtime.gpus_per_trainer (and runtime.gpus_per_policy) instead; "
                             "actors run on the CPU")
        self.spec.make_env().close()
        self.spec.make_trainer(self.spec.make_policy())

    def _check_local_resources(self) -> None:
        """A local instance never grows: a run that reserves more than it has fails now."""
        import ray

        have = ray.cluster_resources()
        for kind, wanted, options in (
                ("CPU", self.runtime.reserved_cpus(), "runtime.num_cpus, runtime.actors or the "
                 "runtime.cpus_per_* options"),
                ("GPU", self.runtime.reserved_gpus(), "runtime.gpus_per_trainer and "
                 "runtime.gpus_per_policy")):
            if wanted > have.get(kind, 0):
                raise RuntimeError(f"the run reserves {wanted:g} {kind}s and the local Ray "
                                   f"instance has {have.get(kind, 0):g}: lower {options}, or "
                                   "join a cluster that has them (runtime.address=...)")

    def _open_logs(self) -> None:
        if self.resume_from is not None:
            self._resume()
            return
        if self.logdir is None:
            return
        from looprl.experiments.logger import ExperimentLogger

        self._log = ExperimentLogger(self.name, self.spec.env_label, self.logdir, verbose=True)
        self.result.log_dir = self._log.log_dir
        save_spec(self.spec, self._log.log_dir)  # for looprl watch
        self._throughput = Path(self._log.log_dir) / "throughput.csv"
        self._throughput.write_text(THROUGHPUT_HEADER + "\n")

    def _resume(self) -> None:
        """Continue the logs and counters of ``resume_from``'s controller checkpoint; the
        trainer finds its own checkpoint in the same directory."""
        from looprl.experiments.checkpoint import load_checkpoint

        state = load_checkpoint(find_controller_checkpoint(self.resume_from))
        self._log, self.result = state.logger, state.result
        self._counts = dict(state.trainer_counts)  # the trainers rebase on them when placed
        self._throughput = Path(self._log.log_dir) / "throughput.csv"
        self._snapshots = self.result.train_steps // (self.runtime.checkpoint_every or 1)
        self.seed += self.result.frames  # new env seeds: no replay of the first run's episodes
        logger.warning("resuming %s at frame %d (%d episodes)", self._log.log_dir,
                       self.result.frames, len(self.result.returns))

    def _snapshot(self, final: bool = False) -> None:
        """Save the controller's state whenever the trainer has checkpointed since the last
        (``final``: now, beside the trainer's last checkpoint)."""
        every = self.runtime.checkpoint_every
        if not every or self._log is None:
            return
        if not final and self.result.train_steps // every <= self._snapshots:
            return
        from looprl.experiments.checkpoint import save_checkpoint

        self._snapshots = self.result.train_steps // every
        counts = {name: self._counted.get(name, 0) + count
                  for name, count in self._counts.items()}
        save_checkpoint(ControllerState(self._log, self.result, counts),
                        Path(self._log.log_dir) / CONTROLLER_CHECKPOINT)

    def _start_workers(self) -> None:
        import ray

        from looprl.distributed.trainer_worker import TrainerWorker
        from looprl.distributed.workers import ActorWorker, ParameterServer, PolicyWorker

        rt, spec = self.runtime, self.spec
        restart = {"max_restarts": rt.max_restarts, "max_task_retries": 0}
        server = ParameterServer.remote()
        run_dir = self.result.log_dir or str(Path.cwd())
        grouped = {**restart, "max_restarts": -1} if rt.trainers > 1 else restart  # we count
        trainers = [TrainerWorker.options(
            num_cpus=rt.cpus_per_trainer, num_gpus=rt.gpus_per_trainer, **grouped,
        ).remote(spec, rt, server, run_dir, self.seed, rank) for rank in range(rt.trainers)]
        for name, worker in zip(self._trainer_names(), trainers, strict=True):
            self.workers[name] = worker
        policies = [
            PolicyWorker.options(num_cpus=rt.cpus_per_policy, num_gpus=rt.gpus_per_policy,
                                 **restart).remote(spec, rt, server, _served(rt, i))
            for i in range(rt.policy_workers)
        ]
        for i, worker in enumerate(policies):
            self.workers[f"policy{i}"] = worker
        for i in range(rt.actors):
            self.workers[f"actor{i}"] = ActorWorker.options(
                num_cpus=rt.cpus_per_actor, scheduling_strategy="SPREAD", **restart,
            ).remote(i, spec, rt, server, trainers[i % rt.trainers],
                     policies[i % len(policies)] if policies else None, self.seed)
        for i in range(rt.eval_workers):
            self.workers[f"eval{i}"] = ActorWorker.options(
                num_cpus=rt.cpus_per_actor, **restart,
            ).remote(rt.actors + i, spec, rt, server, None, None, self.seed, True)
        self.workers["server"] = server
        self._wait_placed(ray)
        self._form_trainer_group(ray)
        for name, worker in self.workers.items():
            if name not in ("server",) and not name.startswith("policy"):
                self._runs[name] = worker.run.remote()

    def _wait_placed(self, ray: Any) -> None:
        names = [n for n in self.workers if n != "server"]
        refs = [self.workers[n].ready.remote() for n in names]
        timeout = self.runtime.placement_timeout
        _, waiting = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        if waiting:
            missing = [n for n, r in zip(names, refs, strict=True) if r in waiting]
            free = ray.available_resources()
            raise RuntimeError(
                f"the cluster did not place worker(s) {missing} within "
                f"{self.runtime.placement_timeout:.0f}s: the run reserves "
                f"{self.runtime.reserved_cpus():g} CPUs and {self.runtime.reserved_gpus():g} "
                f"GPUs and the cluster has {free.get('CPU', 0):g} CPUs and "
                f"{free.get('GPU', 0):g} GPUs free; lower runtime.actors or the "
                "runtime.cpus_per_*/gpus_per_* options, or add nodes")
        for name, ref in zip(names, refs, strict=True):
            answer = _get(ray, ref, name)
            self.result.nodes[name], self._pids[name] = answer["node"], answer["id"]
            if name in self._trainer_names():
                self._trainer_started(name, answer)  # a resumed run: its counts go on
            if name == "trainer" and answer["resumed_from"] is not None:
                logger.warning("trainer resumed from its checkpoint at step %d",
                               answer["resumed_from"])

    def _trainer_names(self) -> list[str]:
        return ["trainer"] + [f"trainer{rank}" for rank in range(1, self.runtime.trainers)]

    def _form_trainer_group(self, ray: Any) -> None:
        """Several trainers: rank 0 names a rendezvous, all join one torch.distributed group."""
        if self.runtime.trainers == 1:
            return
        names = self._trainer_names()
        init_method = _get(ray, self.workers["trainer"].rendezvous.remote(), "trainer")
        if init_method.startswith("file://"):
            self._rendezvous.append(init_method.removeprefix("file://"))
        refs = [self.workers[name].join_group.remote(init_method) for name in names]
        for name, ref in zip(names, refs, strict=True):
            _get(ray, ref, name, timeout=self.runtime.trainer_timeout + 60)

    def _loop(self, callback: Callable[[DistributedRun], None] | None) -> None:
        from looprl.experiments.progress import TrainingProgress

        start = last = time.perf_counter()
        description = f"{self.name} on {self.spec.env_label} ({self.runtime.actors} actors)"
        with TrainingProgress(self.frames, description, quiet=self.quiet) as progress:
            while self.result.frames < self.frames:
                time.sleep(0.5)
                now = time.perf_counter()
                self._poll(now - last)
                last = now
                self._check_workers()
                self._snapshot()
                progress.update(self.result.frames, len(self.result.returns),
                                self.result.mean_return())
                if callback is not None:
                    callback(self)
        self.result.seconds = time.perf_counter() - start

    # -- monitoring ------------------------------------------------------------------------
    def _poll(self, seconds: float) -> None:
        import ray

        names = [n for n in self.workers if n != "server"]
        refs = {n: self.workers[n].stats.remote() for n in names}
        stats = {}
        for name, ref in refs.items():
            try:
                stats[name] = ray.get(ref, timeout=30)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                continue  # dead or restarting: _check_workers handles it
        batch_rows = [n for name, s in stats.items() if name.startswith("policy")
                      for n in s["batch_rows"]]
        self._check_policy_workers(stats)
        trainer = self._trainer_stats(stats)
        self._record_episodes([s for name, s in stats.items() if name.startswith("actor")])
        for name, s in stats.items():
            if name.startswith(("actor", "eval")):
                self._record_actor(name, s, seconds, batch_rows, trainer)
        if trainer is not None:
            self._record_trainer(trainer)

    def _check_policy_workers(self, stats: dict[str, Any]) -> None:
        """Log and count the policy workers Ray restarted since the last poll (they have no
        loop to end: a new process id tells; actors ask a restarted one again)."""
        for name, s in stats.items():
            if not name.startswith("policy"):
                continue
            if s["id"] != self._pids.get(name, s["id"]):
                logger.warning("%s worker died and Ray restarted it (frame %d); actors ask it "
                               "again and the run goes on", name, self.result.frames)
                self.result.restarts.append((name, self.result.frames))
            self._pids[name] = s["id"]

    def _record_episodes(self, actors: list[dict[str, Any]]) -> None:
        """Log the training episodes of one poll in the order they ended, each at an estimate
        of the run's frame then: actors step at about the same rate, so an episode that ended
        after a share of its worker's frames of this poll ended after that share of all."""
        base = self.result.frames
        total = sum(s["frames"] for s in actors)
        ended = sorted((base + total * at / max(s["frames"], 1), ret)
                       for s in actors for ret, _, at in s["episodes"])
        self.result.frames = base + total
        for frame, ret in ended:
            self.result.returns.append(ret)
            if self._log is not None:
                self._log.frame = round(frame)
                self._log.episode += 1
                self._log.add_episode_return(ret)
        if self._log is not None:
            self._log.frame = self.result.frames

    def _trainer_stats(self, stats: dict[str, Any]) -> dict[str, Any] | None:
        """Trainer 0's statistics, with the sample lags of every trainer and the sample
        counts of the whole run (every trainer, restarted ones with their earlier counts)."""
        for name in self._trainer_names():
            if name in stats:
                self._counts[name] = np.array([stats[name]["received"], stats[name]["dropped"]])
        trainer = stats.get("trainer")
        if trainer is None:
            return None
        for name in self._trainer_names()[1:]:
            trainer["lags"] = trainer["lags"] + stats.get(name, {}).get("lags", [])
        total = sum(self._counted.get(n, 0) + self._counts.get(n, 0)
                    for n in self._trainer_names())
        trainer["received"], trainer["dropped"] = (int(count) for count in total)
        return trainer

    def _trainer_started(self, name: str, answer: dict[str, Any]) -> None:
        """Keep the counts of trainer ``name``'s earlier process (one that died, or that of
        the run this one resumes); its new one starts from its checkpoint's (``answer``: its
        ``ready()``)."""
        start = np.array(answer["counts"])
        self._counted[name] = self._counted.get(name, 0) + self._counts.get(name, start) - start
        self._counts[name] = start

    def _record_actor(self, name: str, stats: dict[str, Any], seconds: float,
                      batch_rows: list[int], trainer: dict[str, Any] | None) -> None:
        """Evaluation returns and a ``throughput.csv`` row of an actor or evaluation worker."""
        if name.startswith("eval") and stats["episodes"]:
            returns = [ret for ret, *_ in stats["episodes"]]
            self.result.eval_returns += returns
            if self._log is not None:
                self._log.add_eval("returns/mean", float(np.mean(returns)))
        if self._throughput is None or seconds <= 0:
            return
        lags = trainer["lags"] if trainer else []
        row = [f"{time.time():.1f}", name, f"{stats['frames'] / seconds:.1f}",
               f"{stats['env_seconds'] / seconds:.3f}",
               f"{stats['inference_seconds'] / seconds:.3f}",
               f"{np.mean(batch_rows):.1f}" if batch_rows else "",
               f"{np.mean(lags):.2f}" if lags else "",
               str(trainer["dropped"]) if trainer else ""]
        with open(self._throughput, "a", encoding="utf-8") as file:
            file.write(",".join(row) + "\n")

    def _record_trainer(self, stats: dict[str, Any]) -> None:
        self.result.train_steps = stats["steps"]
        if self._log is None or not stats["stats"]:
            return
        self._log.frame = self.result.frames
        for key in stats["stats"][-1]:
            values = [s[key] for s in stats["stats"] if key in s]
            self._log.add_loss(key, float(np.mean(values)))

    def _check_workers(self) -> None:
        """Restart the loop of every worker whose ``run`` ended (it died; Ray restarted it)."""
        import ray

        from looprl.distributed.ddp import TrainerGroupError

        finished, _ = ray.wait(list(self._runs.values()), num_returns=len(self._runs), timeout=0)
        grouped = set(self._trainer_names()) if self.runtime.trainers > 1 else set()
        broken: list[tuple[str, Exception]] = []  # trainers of the group that died or failed
        for name, ref in list(self._runs.items()):
            if ref not in finished:
                continue
            try:
                ray.get(ref)
            except ray.exceptions.RayActorError as error:
                if name in grouped:
                    broken.append((name, error))
                    continue
                self._restart(ray, name, error)
                continue
            except ray.exceptions.RayTaskError as error:
                cause = error.as_instanceof_cause()
                if name in grouped and isinstance(cause, TrainerGroupError):
                    broken.append((name, cause))
                    continue
                raise RuntimeError(f"{name} worker failed: {type(cause).__name__}: "
                                   f"{_message(cause)}") from None
            raise RuntimeError(f"{name} worker stopped on its own")
        if broken:
            self._restart_trainers(ray, broken)

    def _check_restarts_left(self, names: list[str], what: str, last: str) -> None:
        """Raise once ``names`` together have been restarted ``runtime.max_restarts`` times."""
        restarts = sum(1 for worker, _ in self.result.restarts if worker in names)
        if restarts >= self.runtime.max_restarts:
            raise RuntimeError(f"{what} {restarts + 1} times (runtime.max_restarts="
                               f"{self.runtime.max_restarts}); last: {last}")

    def _restart(self, ray: Any, name: str, error: Exception) -> None:
        self._check_restarts_left([name], f"{name} worker died", _message(error))
        logger.warning("%s worker died at frame %d (%s); Ray restarts it and the run goes on",
                       name, self.result.frames, _message(error))
        answer = self._wait_restarted(ray, name)
        if name == "trainer":
            logger.warning("trainer resumed from its checkpoint at step %s",
                           answer["resumed_from"])
            self._trainer_started(name, answer)
        self.result.restarts.append((name, self.result.frames))
        self._runs[name] = self.workers[name].run.remote()

    def _restart_trainers(self, ray: Any, broken: list[tuple[str, Exception]]) -> None:
        """One trainer of several died or failed in a collective: restart them all, form a new
        group; they resume from trainer 0's latest checkpoint."""
        dead = [name for name, error in broken if isinstance(error, ray.exceptions.RayActorError)]
        name, error = next((b for b in broken if b[0] in dead), broken[0])
        self._check_restarts_left(self._trainer_names(), "the trainers failed",
                                  f"{name}: {_message(error)}")
        logger.warning("%s worker failed at frame %d (%s); restarting all %d trainers",
                       name, self.result.frames, _message(error), self.runtime.trainers)
        for other in self._trainer_names():
            if other not in dead:
                ray.kill(self.workers[other], no_restart=False)
        answers = {other: self._wait_restarted(ray, other, former=self._pids.get(other))
                   for other in self._trainer_names()}
        for other, answer in answers.items():
            self._pids[other] = answer["id"]
            self._trainer_started(other, answer)
        logger.warning("trainers resumed from trainer 0's checkpoint at step %s",
                       answers["trainer"]["resumed_from"])
        self.result.restarts.append((name, self.result.frames))
        self._form_trainer_group(ray)
        for other in self._trainer_names():
            self._runs[other] = self.workers[other].run.remote()

    def _wait_restarted(self, ray: Any, name: str, timeout: float = 120,
                        former: int | None = None) -> Any:
        """The worker's ``ready()`` answer once Ray has restarted it (in a process other than
        ``former``, when given: it was just killed)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                answer = ray.get(self.workers[name].ready.remote(), timeout=timeout)
                if former is None or answer["id"] != former:
                    return answer
            except ray.exceptions.RayActorError as error:
                if former is None and not isinstance(error, ray.exceptions.ActorUnavailableError):
                    raise RuntimeError(f"{name} worker could not be restarted: "
                                       f"{_message(error)}") from None
            except ray.exceptions.RayError as error:
                raise RuntimeError(f"{name} worker could not be restarted: "
                                   f"{_message(error)}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} worker did not come back within {timeout:.0f}s "
                                   "after it died")
            time.sleep(0.2)

    def _shutdown(self) -> None:
        import ray

        try:
            if self._runs:
                self._finish(ray)
        finally:
            for worker in self.workers.values():
                ray.kill(worker, no_restart=True)
            self.workers.clear()
            for path in self._rendezvous:
                Path(path).unlink(missing_ok=True)
            if self._log is not None:
                self._log.close()
            if self._started_ray:
                ray.shutdown()

    def _finish(self, ray: Any) -> None:
        """Stop the loops, save the trained policy (``policy.pt``) and a last checkpoint."""
        for name in self._runs:
            self.workers[name].stop.remote()
        ray.wait(list(self._runs.values()), num_returns=len(self._runs), timeout=30)
        self._compare_trainers(ray)
        if self.result.log_dir is None:
            return
        trainer = self.workers["trainer"]
        try:
            checkpoint = ray.get(trainer.policy_checkpoint.remote(), timeout=60)
            torch.save(checkpoint, Path(self.result.log_dir) / "policy.pt")
            if self.runtime.checkpoint_every:
                ray.get(trainer.checkpoint.remote(), timeout=60)
                self._snapshot(final=True)
        except (ray.exceptions.RayError, OSError) as error:
            logger.warning("could not save the final policy: %s", _message(error))

    def _compare_trainers(self, ray: Any) -> None:
        """Record each trainer's steps and whether they ended with the same parameters."""
        names = self._trainer_names()
        try:
            answers = ray.get([self.workers[n].digest.remote() for n in names], timeout=60)
        except ray.exceptions.RayError as error:
            logger.warning("could not compare the trainers: %s", _message(error))
            return
        self.result.trainer_steps = [answer["steps"] for answer in answers]
        self.result.trainers_in_sync = len({answer["digest"] for answer in answers}) == 1
        if not self.result.trainers_in_sync:
            logger.warning("the trainers ended with different parameters (steps %s)",
                           self.result.trainer_steps)


def _served(runtime: RuntimeConfig, index: int) -> int:
    """Requests policy worker ``index`` batches together: one per actor it serves."""
    return len(range(index, runtime.actors, runtime.policy_workers))


def _get(ray: Any, ref: Any, name: str, timeout: float = 120) -> Any:
    try:
        return ray.get(ref, timeout=timeout)
    except ray.exceptions.RayError as error:
        reason = _message(error)
        hint = (" (code your workers import must reach them: install it on every node or "
                "pass runtime.runtime_env={'py_modules': [...]} / {'working_dir': ...})"
                if "No module named" in reason else "")
        raise RuntimeError(f"{name} worker failed to start: {reason}{hint}") from None

