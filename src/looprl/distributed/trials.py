"""``RayTrials``: a runner's trials at once, each a Ray task on a replica of the runner
(``runner=es|optuna|pbt runtime=ray``), which returns its files for the driver to write."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from looprl.core.suggest import WorkerWarnings, is_whole, log_worker_warnings
from looprl.distributed.cluster import import_ray, start_ray
from looprl.distributed.config import RuntimeConfig, starts_local
from looprl.environments.gym import gym_registrations, install_gym_registrations
from looprl.experiments.episodes import run_scope
from looprl.runners.trials import KEPT, KeptAgent, Trial

__all__ = ["RayTrials", "check_trial_gpus", "run_replica", "unpack_runs"]

SAFE = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # (Python >= 3.10.12)


class RayTrials:
    """Trials at once, ``parallel`` at a time (``None``: the Ray instance's CPUs), each one
    Ray task on a replica of the runner, training on the CPU, or with ``gpus`` (a fraction
    shares one: 0.25, four trials a GPU) on the GPU Ray gives it; ``address``: a cluster to
    join (``None``: a local instance of ``num_cpus`` started when first needed, stopped by
    ``close``)."""

    in_process = False

    def __init__(self, parallel: int | None = None, address: str | None = None,
                 num_cpus: int | None = None, runtime_env: dict[str, Any] | None = None,
                 gpus: float = 0.0):
        for name, value in (("trials_in_parallel", parallel), ("num_cpus", num_cpus)):
            if value is not None and (not is_whole(value) or value < 1):
                raise ValueError(f"runtime.{name} must be an integer >= 1 (or null), got {value!r}")
        self.address, self.num_cpus, self.runtime_env = address, num_cpus, runtime_env
        self.gpus = check_trial_gpus(gpus)
        self._parallel = parallel
        self._started = False

    @property
    def parallel(self) -> int:
        """Trials that run at once."""
        if self._parallel is None:
            ray = self.start()
            self._parallel = max(1, int(ray.cluster_resources().get("CPU", 1)))
        return self._parallel

    def start(self) -> Any:
        """Ray, joined or started unless it already runs in this process."""
        ray = import_ray()
        if not ray.is_initialized():
            cpus = self.num_cpus or self._parallel or os.cpu_count() or 1
            # the trials reserve their CPUs as tasks; the run's own workers reserve none
            runtime = RuntimeConfig(address=self.address,  # (a cluster has its own CPUs)
                                    num_cpus=cpus if starts_local(self.address) else None,
                                    actors=1, cpus_per_actor=0.0, cpus_per_trainer=0.0,
                                    runtime_env=self.runtime_env)
            self._started = start_ray(runtime) or self._started
        return ray

    def map(self, runner: Any, trial: Trial, tasks: Sequence[Any], keep: bool = False
            ) -> Iterator[tuple[Any, KeptAgent | None]]:
        """Run ``trial(replica, task)`` for every task, each on a fresh replica of ``runner``;
        yield the results in order once all ended (a trial's error is raised here)."""
        ray = self.start()
        held = ray.cluster_resources().get("GPU", 0)
        if self.gpus > held:
            raise ValueError(f"each trial reserves {self.gpus:g} GPU (device=cuda, "
                             f"runtime.gpus_per_trial) and the Ray cluster has {held:g}: lower "
                             "runtime.gpus_per_trial, or train on the CPU (device=cpu)")
        remote = ray.remote(num_cpus=1, num_gpus=self.gpus)(run_replica)
        arguments = ray.put(runner.replica_arguments())
        device = "cuda" if self.gpus else "cpu"  # (Ray shows a task only the GPUs it reserved)
        registry = gym_registrations(runner.env, runner.test_env)
        pending: dict[Any, int] = {}
        results: list[Any] = [None] * len(tasks)
        queue = list(enumerate(tasks))
        try:
            while queue or pending:
                while queue and len(pending) < self.parallel:
                    index, task = queue.pop(0)
                    pending[remote.remote(arguments, trial, task, keep, registry, device)] = index
                done, _ = ray.wait(list(pending), num_returns=1)
                index = pending.pop(done[0])
                # its files, here, where a sequential run writes (not held until the last ends;
                # a failed trial's too, as a sequential run leaves them)
                result, saved, files, run = _result(ray, done[0], runner.logdir)
                claimed = {} if files is None else unpack_runs(files, runner.logdir)
                results[index] = result, saved, claimed.get(run)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
        for result, saved, run_dir in results:
            yield result, KeptAgent(saved=saved, run_dir=run_dir) if keep else None

    def close(self) -> None:
        """Stop the local Ray instance if ``start`` started it."""
        if self._started:
            import ray
            ray.shutdown()
            self._started = False


def check_trial_gpus(gpus: Any) -> float:
    """``gpus`` (``runtime.gpus_per_trial``) as a float, or one line unless it is a fraction
    of a GPU or a whole number of them."""
    if not isinstance(gpus, int | float) or isinstance(gpus, bool) or not (
            gpus >= 0 and (gpus <= 1 or is_whole(gpus))):
        raise ValueError("runtime.gpus_per_trial must be a fraction of a GPU (0.25: four "
                         f"trials share one) or a whole number of GPUs, got {gpus!r}")
    return float(gpus)


@run_scope(keep=False)  # (its warnings: each trial's, which the driver says once a search)
def run_replica(arguments: dict[str, Any], trial: Trial, task: Any, keep: bool,
                registry: dict[str, Any], device: str = "cpu"
                ) -> tuple[Any, bytes | None, bytes | None, str | None, list[tuple[str, str]]]:
    """In a Ray worker: ``trial``'s result on a fresh runner training on ``device``, with
    ``keep`` its agent's checkpoint (no replay buffer), a tar of the files it wrote (``None``:
    no ``logdir``), with ``keep`` its run directory relative to the ``logdir``, and the
    warnings it logged (its error carries them and the tar as ``worker_warnings`` and
    ``worker_files``)."""
    import torch

    from looprl.experiments.checkpoint import save_checkpoint
    from looprl.runners.base import Runner
    torch.set_num_threads(1)
    install_gym_registrations(registry)
    with WorkerWarnings() as warned, tempfile.TemporaryDirectory() as directory:
        logged = arguments["logdir"] is not None
        runner = Runner(**{**arguments, "logdir": directory if logged else None,
                           "device": device})
        try:
            result = trial(runner, task)
            saved = run = None
            if keep and runner.experiment is not None:  # (in its run directory: loggers' paths)
                run_dir = getattr(runner.experiment.logger, "log_dir", None) or directory
                path = Path(run_dir) / KEPT
                saved = save_checkpoint(runner.experiment, path, replay=False).read_bytes()
                path.unlink()
                run = os.path.relpath(run_dir, directory)
        except Exception as error:  # (its warnings and files go with it: see ``_result``)
            runner.close()
            error.worker_warnings = warned.take()  # type: ignore[attr-defined]
            error.worker_files = _tar(directory) if logged else None  # type: ignore[attr-defined]
            raise
        runner.close()
        return result, saved, _tar(directory) if logged else None, run, warned.take()


def _tar(directory: str) -> bytes:
    """The files in ``directory``, as a tar."""
    files = io.BytesIO()
    with tarfile.open(fileobj=files, mode="w") as tar:
        for name in os.listdir(directory):  # (not ".": the logdir keeps its mode)
            tar.add(Path(directory) / name, arcname=name)
    return files.getvalue()


def unpack_runs(archive: bytes, logdir: str) -> dict[str, str]:
    """Write a trial's tar in ``logdir`` (``claim_run_dir``); each run's directory by tar path."""
    from looprl.experiments.run_files import claim_run_dir
    os.makedirs(logdir, exist_ok=True)
    claimed = {}
    with tempfile.TemporaryDirectory(dir=logdir) as unpacked:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(unpacked, **SAFE)
        for run in Path(unpacked).glob("*/*/*"):
            if run.is_dir():
                relative = run.relative_to(unpacked)
                target = claim_run_dir(Path(logdir, *relative.parts[:2]), run.name)
                for item in run.iterdir():  # (into the claimed directory: never left empty)
                    item.replace(target / item.name)  # (the run's run.json over the claim's)
                run.rmdir()
                claimed[str(relative)] = str(target)
        shutil.copytree(unpacked, logdir, dirs_exist_ok=True)  # (whatever else it wrote)
    return claimed


def _result(ray: Any, ref: Any, logdir: str | None = None) -> Any:
    """``run_replica``'s answer at ``ref`` but its warnings, which are logged here; a failed
    trial's error, once its warnings are logged and its files written in ``logdir``."""
    try:
        *answer, warned = ray.get(ref)
    except ray.exceptions.RayTaskError as error:
        cause = getattr(error, "cause", None)
        if isinstance(cause, Exception):
            log_worker_warnings(getattr(cause, "worker_warnings", ()))
            if logdir is not None and getattr(cause, "worker_files", None) is not None:
                unpack_runs(cause.worker_files, logdir)
            raise cause from None
        raise
    log_worker_warnings(warned)
    return answer
