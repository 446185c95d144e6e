"""``run_experiment``: train each agent on each environment, evaluate, and log; and
``SlurmExperiment``, the same runs as one Slurm job array (or any submitit executor's)."""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import numbers
import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from looprl.core import ParallelPreset, Preset
from looprl.core.files import check_path
from looprl.core.imports import import_extra
from looprl.core.suggest import check_seed, is_number, is_whole
from looprl.environments import SRLEnvironment
from looprl.environments.gym import refuse_gymnasium
from looprl.environments.multiagent import MultiagentEnvironment
from looprl.experiments.episodes import run_scope
from looprl.experiments.experiment import (
    Experiment,
    ParallelEnvExperiment,
    SingleEnvExperiment,
    logger_object,
    seed_everything,
)
from looprl.experiments.multiagent import MultiagentEnvExperiment
from looprl.meta.component import MetaStack
from looprl.presets.catalog import env_for

__all__ = ["ExperimentResult", "SlurmExperiment", "TrainingInterrupted", "build_preset",
           "make_experiment", "run_experiment"]

log = logging.getLogger(__name__)


@dataclass
class ExperimentResult:
    """What one (agent, environment) run produced (a multi-agent run's: the team's returns)."""

    agent: str
    env: str
    log_dir: str
    frames: int
    episodes: int
    test_returns: list[float]
    agent_test_returns: dict[str, list[float]] = field(default_factory=dict)

    @property
    def test_mean(self) -> float:
        return float(np.mean(self.test_returns)) if self.test_returns else math.nan

    @property
    def test_std(self) -> float:
        return float(np.std(self.test_returns)) if self.test_returns else math.nan

    def summary(self) -> str:
        """The lines ``run_experiment`` logs: frames, episodes and evaluation's mean return."""
        n = len(self.test_returns)
        return f"{self.agent} on {self.env}: {self.frames:,} frames, {self.episodes:,} episodes" + (
            f"\nevaluation: mean return {self.test_mean:.1f} +/- {self.test_std:.1f} over {n} "
            f"episode{'s' * (n > 1)}" if n else "")


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during ``run_experiment``: the logs in ``log_dir`` closed, the preset saved there."""

    def __init__(self, log_dir: str | None, frame: int, results: Sequence[Any] = (),
                 no_logs: str = "no logs (logdir=None)"):
        super().__init__(f"Training interrupted at frame {frame:,}; " + (
            no_logs if log_dir is None else f"logs in {log_dir}"))
        self.log_dir, self.frame, self.results = log_dir, frame, list(results)


def as_list(x: Any) -> list:
    """``x`` as a list: a list or tuple's items, else ``[x]``."""
    return list(x) if isinstance(x, (list, tuple)) else [x]


def check_frames(frames: Any, owner: str) -> None:
    """A one-line ``ValueError`` unless ``owner``'s ``frames`` is a finite positive number."""
    if not is_number(frames) or not 0 < frames < math.inf:
        infinite = is_number(frames) and frames == math.inf
        finite = ", a finite one (math.inf is no budget)" if infinite else ""
        raise ValueError(f"{owner}'s frames must be a positive number of environment "
                         f"steps{finite}, got {frames!r}")


def build_preset(agent: Any, env: Any) -> Preset:
    """A built preset from a ``PresetBuilder`` (configured with ``env``) or a ``Preset``."""
    if isinstance(agent, Preset):
        return agent
    if hasattr(agent, "env") and hasattr(agent, "build"):
        return agent.env(env).build()
    raise TypeError(f"Expected a preset builder or a Preset, got {type(agent).__name__}")


def make_experiment(preset: Preset, env: Any, **kwargs: Any) -> Any:
    """The experiment for ``preset`` and ``env``: multi-agent, parallel or single."""
    if isinstance(env, MultiagentEnvironment):
        return MultiagentEnvExperiment(preset, env, **kwargs)
    if isinstance(preset, ParallelPreset):
        return ParallelEnvExperiment(preset, env, **kwargs)
    return SingleEnvExperiment(preset, env, **kwargs)


def run_experiment(agents: Any, envs: Any, frames: float, logdir: str = "runs",
                   quiet: bool = False, render: bool = False, save_freq: float = math.inf,
                   test_episodes: int = 100, verbose: bool = True, seed: int | None = None,
                   meta: Sequence[Any] = (), logger: str = "tensorboard"
                   ) -> list[ExperimentResult]:
    """Train every agent on every environment for ``frames`` frames, then evaluate; one
    ``ExperimentResult`` per run (``FloatingPointError``: one diverged; ``TrainingInterrupted``).

    Args:
        agents: preset builders (``classic_control.ppo``) or built presets, one or a list.
        envs: environments, or ids (``"CartPole-v1"``: made for each agent's family), one or a list.
        test_episodes: evaluation episodes after training (0 to skip).
        logdir, quiet, render, save_freq, verbose, seed, meta: ``Experiment``'s, for every run
            (later runs: fresh copies of the components); a ``seed`` keeps the global generators.
        logger: ALL's argument: ``"tensorboard"``, the only one.
    """
    check_frames(frames, "run_experiment")
    if not isinstance(logger, str):  # (each run makes its own logger: one cannot be shared)
        raise TypeError(f"run_experiment's logger is ALL's name 'tensorboard', got "
                        f"{type(logger).__name__}; pass a logger object to an Experiment "
                        "(SingleEnvExperiment(preset, env, logger=...))")
    logger_object(logger)  # (one line for another name, before anything is built)
    meta = list(meta) if isinstance(meta, list | tuple) else [meta]  # (meta=RND(), as runners)
    MetaStack(meta)  # (and for anything that is no MetaComponent: meta=["rnd"])
    check_path(logdir, "run_experiment's logdir")
    if not is_whole(test_episodes) or test_episodes < 0:
        error = ValueError if is_whole(test_episodes) else TypeError
        raise error(f"run_experiment's test_episodes is a whole number >= 0 (0 skips the "
                    f"evaluation), got {test_episodes!r:.40}")
    check_seed("run_experiment", seed)
    for name, value in {"quiet": quiet, "render": render, "verbose": verbose}.items():
        if not isinstance(value, numbers.Integral | np.bool_):  # (True, False, 0 or 1)
            raise TypeError(f"run_experiment's {name} is True or False, got {value!r:.40}")
    results: list[ExperimentResult] = []
    agents, envs = as_list(agents), as_list(envs)
    if not agents or not envs:
        raise ValueError(f"run_experiment got no {'agents' if not agents else 'envs'} (an "
                         "empty list): give one, or a list of them")
    fresh = ([fresh_components(agent, meta) for agent in agents]
             if len(agents) * len(envs) > 1 else None)
    for env_or_id in envs:
        for index, agent in enumerate(agents):  # (each run says its warnings; seeded, the
            with run_scope(seed is not None):  # caller's random numbers go on after it)
                env = env_for(agent, env_or_id) if isinstance(env_or_id, str) else _env(env_or_id)
                if seed is not None:
                    seed_everything(seed)
                preset = build_preset(agent, env)
                components = meta
                if results and fresh is not None:  # (a later run: fresh copies of them)
                    preset.meta, components = copy.deepcopy(fresh[index])
                experiment = make_experiment(preset, env, train_steps=frames, logdir=logdir,
                                             quiet=quiet, render=render, save_freq=save_freq,
                                             verbose=verbose, seed=seed, meta=components)
                if not (results or isinstance(experiment, MultiagentEnvExperiment)):
                    note_trained(agent, meta)  # (it trains the given ones; per agent: copies)
                try:
                    results.append(_run(experiment, frames, test_episodes))
                except TrainingInterrupted as stop:  # (the runs done stand)
                    raise TrainingInterrupted(stop.log_dir, stop.frame, results) from None
    return results


#: the meta components the first run of a ``run_experiment`` call trained (by ``id``)
_TRAINED: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def note_trained(agent: Any, meta: Sequence[Any]) -> None:
    """Note the components a call's first run trains; warn of those an earlier call trained."""
    given = [*meta, *getattr(agent, "components", ())]  # (a built preset's go on with it)
    trained = [repr(component) for component in given if _TRAINED.get(id(component)) is component]
    if trained and not isinstance(agent, Preset):
        log.warning("run_experiment: the meta components %s trained in an earlier run and go on "
                    "from there with a new agent, so this run differs from that one: give new "
                    "ones, or copy.deepcopy them before their first run, to start afresh",
                    ", ".join(trained))
    for component in given:
        with contextlib.suppress(TypeError):  # (one that takes no weak reference: not noted)
            _TRAINED[id(component)] = component


def fresh_components(agent: Any, meta: Sequence[Any]) -> tuple[tuple[Any, ...], list[Any]]:
    """Copies of ``agent``'s own components and of ``meta``, before a run trains them."""
    own = tuple(getattr(agent, "components", getattr(agent, "meta", ())))
    try:
        fresh = copy.deepcopy((own, list(meta)))
    except Exception as error:  # noqa: BLE001 - (copying fails in many ways)
        raise TypeError(f"a new agent's runs start from copies of the meta components, and one "
                        f"of {[*own, *meta]!r:.80} cannot be copied ({type(error).__name__}: "
                        f"{error}): make it picklable (create what it holds in a hook), as a "
                        "checkpoint and a run on Ray need too") from None
    MetaStack([*fresh[0], *fresh[1]])
    return fresh


def _env(env: Any) -> Any:
    """``env`` if it is an environment (it has action spaces), else a one-line ``TypeError``."""
    refuse_gymnasium(env, "run_experiment")
    if not (hasattr(env, "action_space") or hasattr(env, "action_spaces")):
        raise TypeError(f"run_experiment's envs are environments or Gymnasium ids "
                        f"('CartPole-v1'), got {type(env).__name__} {env!r:.40}")
    if isinstance(env, SRLEnvironment):
        raise TypeError(f"run_experiment takes an SRL environment by its registered name or "
                        f"its import path ('{type(env).__module__}:{type(env).__name__}'), "
                        f"not a built {type(env).__name__}: each env copy is made from it")
    return env


def _save(experiment: Experiment) -> None:
    """``{log_dir}/preset.pt`` of the trained preset (ALL's), else a warning."""
    if not callable(getattr(experiment.preset, "save", None)):
        return
    try:
        experiment.save()
    except Exception as error:  # noqa: BLE001 - (pickling fails in many ways)
        log.warning("%s: the preset was not saved to %s/preset.pt (%s: %s)", experiment.name,
                    experiment.logger.log_dir, type(error).__name__, error)


def _run(experiment: Experiment, frames: float, test_episodes: int) -> ExperimentResult:
    """Train and test ``experiment``; its logs are closed even if training fails."""
    saved = False
    try:
        experiment.train(frames=frames)
        _save(experiment)
        saved = True
        returns = experiment.test(episodes=test_episodes) if test_episodes > 0 else []
    except KeyboardInterrupt:
        if not saved:  # (the preset as trained so far, and its normalizers' statistics)
            _save(experiment)
        raise TrainingInterrupted(str(experiment.logger.log_dir), experiment.frame) from None
    finally:
        experiment.close_loggers()
    each = returns if isinstance(returns, dict) else {}  # multi-agent: a list per agent
    returns = [sum(r) for r in zip(*each.values())] if each else returns
    result = ExperimentResult(experiment.name, experiment.env.name,
                              str(experiment.logger.log_dir), experiment.frame,
                              experiment.episode, returns, each)
    if not experiment.quiet:  # (logging.basicConfig(level=logging.INFO) shows it)
        log.info("%s", result.summary())
    return result


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
