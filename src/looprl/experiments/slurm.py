"""``SlurmExperiment``: ``run_experiment`` over a Slurm cluster (or any submitit executor), one
array task per (agent, environment)::

    SlurmExperiment(agents, envs, 10e6, sbatch_args={"partition": "gpu", "gpus-per-node": 1})
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from looprl.core.imports import import_extra
from looprl.core.suggest import check_seed
from looprl.experiments.run import ExperimentResult, as_list, check_frames, run_experiment

log = logging.getLogger(__name__)

#: sbatch options of every job unless ``sbatch_args`` says otherwise (ALL's)
DEFAULT_SBATCH_ARGS = {"ntasks": 1, "cpus-per-task": 4, "mem-per-cpu": 4000, "time": "7-0"}


def _run_one(agent: Any, env: Any, frames: float, options: dict[str, Any]) -> ExperimentResult:
    return run_experiment(agent, env, frames, **options)[0]  # (a module's function: it pickles)


class SlurmExperiment:
    """Submits one job array (``jobs``) training every agent on every environment, with
    ``executor`` (default: a ``SlurmExecutor`` in ``outdir``, ``sbatch_args`` its options)."""

    def __init__(self, agents: Any, envs: Any, frames: float, test_episodes: int = 100,
                 verbose: bool = False, job_name: str = "looprl",
                 script_name: str = "experiment.sh", outdir: str = "out", logdir: str = "runs",
                 sbatch_args: dict[str, Any] | None = None, executor: Any = None,
                 seed: int | None = None):
        self.agents, self.envs = as_list(agents), as_list(envs)
        if not self.agents or not self.envs:
            raise ValueError("SlurmExperiment needs at least one agent and one environment")
        check_frames(frames, "SlurmExperiment")
        self.frames, self.job_name, self.script_name = frames, job_name, script_name
        self.outdir, self.logdir = outdir, os.path.abspath(logdir)
        self.options = {"test_episodes": test_episodes, "verbose": verbose,
                        "logdir": self.logdir, "seed": check_seed("SlurmExperiment", seed)}
        self.sbatch_args = {**DEFAULT_SBATCH_ARGS, **(sbatch_args or {})}
        if executor is None:
            submitit = import_extra("submitit", "SlurmExperiment needs submitit", "config")
            try:
                executor = submitit.SlurmExecutor(folder=outdir)
            except RuntimeError:  # no srun here
                raise RuntimeError("SlurmExperiment found no Slurm here (no srun): run it on "
                                   "the cluster, or pass executor=submitit.LocalExecutor(folder) "
                                   "to run the jobs on this machine") from None
        self.executor = executor
        self.jobs = self.queue_jobs()

    def runs(self) -> list[tuple[Any, Any]]:
        """The ``(agent, env)`` pair of each array task, in order."""
        return [(agent, env) for env in self.envs for agent in self.agents]

    def queue_jobs(self) -> list[Any]:
        """Submit the array (one task per run) and return its jobs."""
        submitit = import_extra("submitit", "SlurmExperiment needs submitit", "config")
        Path(self.outdir).mkdir(parents=True, exist_ok=True)
        if isinstance(self.executor, submitit.SlurmExecutor):
            self.executor.update_parameters(job_name=self.job_name, additional_parameters={
                key.replace("-", "_"): value for key, value in self.sbatch_args.items()})
        agents, envs = zip(*self.runs(), strict=True)
        jobs = self.executor.map_array(_run_one, agents, envs, [self.frames] * len(agents),
                                       [self.options] * len(agents))
        log.info("Submitted %d runs as job(s) %s", len(jobs),
                 ", ".join(sorted({str(job.job_id).split("_")[0] for job in jobs})))
        return jobs

    def results(self) -> list[ExperimentResult]:
        """Wait for the runs' ``ExperimentResult`` s (a failed one raises ``FailedJobError``)."""
        return [job.result() for job in self.jobs]
