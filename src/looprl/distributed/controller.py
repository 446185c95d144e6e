"""``DistributedRun``: starts, monitors and stops the Ray workers of one training run, polling
a ``WorkerPool``, a ``Supervisor``, a ``RunMonitor`` and a ``ControllerCheckpoint``."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from looprl.collector.runner import log_cuts
from looprl.core import Preset
from looprl.core.files import check_path, load_file
from looprl.core.imports import object_path
from looprl.core.preset import check_built
from looprl.core.suggest import check_seed
from looprl.distributed import pipeline
from looprl.distributed.cluster import (
    answer_timeout,
    error_line,
    local_instance_settings,
    start_ray,
)
from looprl.distributed.config import AlgorithmSpec, RuntimeConfig
from looprl.distributed.placement import Supervisor, WorkerPool
from looprl.distributed.run_state import (
    ControllerCheckpoint,
    ControllerState,
    DistributedResult,
    RunMonitor,
    SampleCounts,
    find_controller_checkpoint,
    open_run_log,
    trainer_checkpoint_steps,
)
from looprl.environments.base import VectorEnvironment
from looprl.environments.contextual import contextual_envs
from looprl.environments.wrappers import (
    Wrappers,
    normalizers_of,
    saved_normalization,
)
from looprl.experiments.budget import warn_budget_extended, warn_never_trained
from looprl.experiments.checkpoint import (
    check_checkpointing,
    check_same_config,
    check_unfinished,
    load_checkpoint,
)
from looprl.experiments.diagnose import diverged
from looprl.experiments.episodes import check_test, run_scope
from looprl.experiments.experiment import evaluation_seed
from looprl.experiments.logger import check_wandb
from looprl.experiments.progress import TrainingProgress, evaluation_progress
from looprl.experiments.run import TrainingInterrupted, check_frames
from looprl.experiments.run_files import json_text
from looprl.meta.component import MetaComponent, MetaStack
from looprl.policies.greedy import check_explorations

__all__ = ["DistributedResult", "DistributedRun", "local_instance_settings", "start_ray"]

logger = logging.getLogger(__name__)


class DistributedRun:
    """One training run on Ray: actor, policy, trainer and evaluation workers.

    Args:
        spec: an ``AlgorithmSpec``, or a built ``Preset`` (``AlgorithmSpec.of_preset``).
        frames: the budget in env steps over all actors (a ``run`` callback may lower it).
        logdir: root of run directories, ``{logdir}/{name}/{env}`` (``None``: write nothing).
        resume_from: a run directory (or a folder above it) of a run to continue;
            ``frames`` is the whole run's budget.
        verbose: log the losses and ``hp/*`` too (a local run's ``verbose``).
        wandb: ``wandb.init`` arguments, to log the run's scalars to W&B too (as a local run).
        checkpoint_every: write the run's checkpoint (``controller_checkpoint.pt`` and
            ``trainer_checkpoint.pt``), whence ``resume_from`` continues, at the first poll
            past every this many env steps (``None``: none, as a local run; resumed: the run's);
            ``keep_checkpoints``: also keep the latest this many, numbered by frame;
            ``checkpoint_replay``: with the replay buffer's transitions (as a local run's).
    """

    def __init__(self, spec: AlgorithmSpec | Preset, runtime: RuntimeConfig | None = None,
                 frames: int = 100_000, logdir: str | None = "runs", seed: int = 0,
                 name: str | None = None, quiet: bool = False, resume_from: str | None = None,
                 meta: Sequence[MetaComponent] = (), verbose: bool = True,
                 wandb: dict[str, Any] | None = None, checkpoint_every: int | None = None,
                 keep_checkpoints: int | None = None, checkpoint_replay: bool = True):
        check_frames(frames, "DistributedRun")
        check_built(spec, "DistributedRun", also=(AlgorithmSpec,))
        self.runtime = RuntimeConfig.given(runtime)
        check_path(logdir, "DistributedRun's logdir", optional=True)
        self.wandb = check_wandb(wandb, logdir)
        self.checkpoint_every, self.checkpoint_replay = checkpoint_every, checkpoint_replay
        self.keep_checkpoints = check_checkpointing(checkpoint_every, keep_checkpoints,
                                                    checkpoint_replay, logdir=logdir)
        self.hyperparameters = dict(spec.hyperparameters) if isinstance(spec, Preset) else {}
        if isinstance(spec, Preset):
            name = name or spec.name
            spec, self.runtime = _of_preset(spec, frames, self.runtime)
        if meta:
            spec = replace(spec, meta=[*spec.meta, *meta])
        MetaStack(spec.meta)  # (a TypeError for what is no MetaComponent)
        check_explorations(spec.explorations, self.runtime.actors)
        self.spec = replace(spec, verbose=verbose).portable()
        self.frames = int(frames)
        self.seed = check_seed("DistributedRun", seed, optional=False)
        self.test_seed = evaluation_seed(seed)  # (the evaluation's, as a local run's)
        self.quiet, self.verbose = quiet, verbose
        self.name, self.logdir = name or f"{spec.algorithm}-ray", logdir
        if logdir is None:  # nowhere to checkpoint
            self.runtime = replace(self.runtime, checkpoint_every=None)
        self.resume_from = resume_from
        #: a resumed run whose checkpoint reached ``frames`` goes on to its evaluation (``looprl
        #: run --resume`` of a run stopped in it), where ``False`` refuses it in one line
        self.evaluate_at_budget = False
        self.result, self._started_ray = DistributedResult(), False
        self._log: Any = None  # the run's ExperimentLogger
        self._agent_logs: dict[str, Any] = {}  # its agents' (multi-agent envs; resumed ones)
        self._actors_meta: dict[int, Any] = {}  # its actors' step hooks' state (resumed runs)
        self._schedules: dict[str, list[int]] = {}  # its exploration schedules' (resumed runs)
        self._checkpoint_steps = 0  # (the train step of a resumed run's trainer checkpoint)
        self._pool: WorkerPool | None = None
        self._supervisor: Supervisor | None = None
        self._monitor: RunMonitor | None = None
        self._checkpoint: ControllerCheckpoint | None = None
        self._reached: float | None = None  # (when the budget was reached: ``_budget_spent``)
        self._started_frames = self.frames  # (the budget the actors were given)
        self._planned = self.frames  # (the budget its schedules span: a resumed run's first)

    @property
    def workers(self) -> dict[str, Any]:
        """The run's Ray actors by name (empty before and after ``run``)."""
        return self._pool.workers if self._pool is not None else {}

    @run_scope(keep=False)  # (a sweep's runs each say what they met)
    def run(self, callback: Callable[[DistributedRun], None] | None = None) -> DistributedResult:
        """Train for ``frames`` env steps, calling ``callback(self)`` after every poll (one with
        ``hold_every(runtime)``, ``EvaluateEvery``: actor 0 stops every so many env steps, see
        ``ActorWorker.held``); ``RuntimeError`` if the workers cannot be placed in time, or a
        worker failed; ``FloatingPointError`` if training diverged; ``TrainingInterrupted`` at
        Ctrl-C (naming the run directory); ``RuntimeError`` if it ran already."""
        if self._pool is not None:  # (its workers are gone: a second call would start over)
            raise _ran_already(self)
        agents = _check_spec(self.spec, self.runtime)
        # (before Ray: no run there, another's or a finished one is one line)
        resumed = _resumed_state(self) if self.resume_from is not None else None
        try:
            self._started_ray = start_ray(self.runtime)
        except KeyboardInterrupt:  # (Ctrl-C as Ray starts: the same line; nothing written)
            raise TrainingInterrupted(
                None if resumed is None else resumed.logger.log_dir,
                0 if resumed is None else resumed.result.frames,
                no_logs="nothing written yet (Ray was starting)") from None
        try:  # (applied once Ray started: a run() again after its failure resumes the same)
            counts = self._open_logs() if resumed is None else self._resume(resumed)
            self._pool = WorkerPool(self.spec, self.runtime, self.result, counts,
                                    _resumed_normalization(resumed, self.spec))
            self._supervisor = Supervisor(self._pool)
            self._monitor = RunMonitor(self.result, counts, self._log, self._pool.trainers,
                                       self.frames, agents, self._agent_logs)
            self._checkpoint = _controller_checkpoint(self, counts)
            self._started_frames = self.frames
            if self.result.frames < self.frames:  # (else resumed to evaluate: nothing to train)
                self._pool.start(self.result.log_dir, self.seed, self.frames - self.result.frames,
                                 self._actors_meta, self._schedules, self._checkpoint_steps,
                                 getattr(callback, "hold_every", lambda runtime: None)(
                                     self.runtime))
                self._loop(callback)
        except KeyboardInterrupt:  # (Ctrl-C: the workers stop; the logs until then are kept)
            raise TrainingInterrupted(self.result.log_dir, self.result.frames) from None
        except FloatingPointError as error:  # (a diverged loss: one line, as a local run's)
            raise diverged(self.name, str(error), self.result.log_dir) from None
        finally:
            self._shutdown()
        if self._monitor.cuts[0] > 1:  # (one: its actor's warning named it)
            log_cuts(*self._monitor.cuts)
        if max(self.result.trainer_steps, default=self.result.train_steps) == 0:  # (final)
            warn_never_trained(self.name, self.spec.env_label, self.result.frames)
        return self.result

    @property
    def logger(self) -> Any:
        """The run directory's ``ExperimentLogger`` (``None``: ``logdir=None``, or not run)."""
        return self._log

    def test(self, episodes: int = 100, env: Any = None) -> list[float]:
        """Returns of ``episodes`` evaluation episodes of the final policy (``policy.pt``) in the
        run's environment, seeded and normalized as a local run's and logged where it logs them; in
        ``env`` (a looprl environment): not logged. Call it after ``run``, then ``close``."""
        check_test(episodes, env, "DistributedRun.test")
        policy = Path(self.result.log_dir or "") / "policy.pt"
        if self.result.log_dir is None or not policy.is_file():
            raise FileNotFoundError(f"DistributedRun.test evaluates the final policy, and the run "
                                    f"saved none ({policy}): run it first, with a logdir")
        spec = pipeline.evaluation_spec(self.spec, env)
        saved = load_file(policy, "trained policy", "train the run again", map_location="cpu")
        statistics = saved_normalization(policy.parent)  # (training's: ``normalization.pt``)
        with evaluation_progress(f"{self.name} on {self.spec.env_label}", episodes,
                                 self.quiet) as progress:
            played = pipeline.evaluation_episodes(spec, saved, episodes, seed=self.test_seed,
                                                  progress=progress, normalization=statistics,
                                                  timeout=self.runtime.env_timeout)
        returns = [episode.ret for episode in played]
        if env is None and self._log is not None:  # (then the monitor's ``agent_logs`` too)
            each = {agent: [episode.returns[i] for episode in played]
                    for i, agent in enumerate(self.result.agent_returns)}
            self._monitor.agent_logs.add_test_returns(returns, each, self.result.frames)
        return returns

    def save_policy(self) -> bool:
        """Write the policy the trainer published last as ``policy.pt`` (what ``test`` plays),
        from a ``run`` callback that evaluates on the way (``run`` writes the final one as it
        ends); whether there was one."""
        return self._pool is not None and self.result.log_dir is not None and \
            self._pool.save_policy(self.result.log_dir)

    def close(self) -> None:
        """Close the run directory's loggers (``run`` does; call it again after ``test``)."""
        for loggers in (x for x in (self._log, self._monitor) if x is not None):
            loggers.close()  # (the run's; its agents')

    def _open_logs(self) -> SampleCounts:
        """Open a new run directory (or none); return the sample counts, none yet."""
        if self.logdir is not None:
            self._log = open_run_log(self.name, self.spec, self.logdir, self.verbose, {
                "hyperparameters": self.hyperparameters, "runner": "online",
                "seed": self.seed, "meta": [repr(component) for component in self.spec.meta],
                "runtime": "ray", "env_wrappers": _env_wrappers(self.spec)}, self.wandb)
            self.result.log_dir = self._log.log_dir
        return SampleCounts()

    def _resume(self, state: ControllerState) -> SampleCounts:
        """Continue the logs and counters of a ``_resumed_state``."""
        self._log, self.result = state.logger, state.result
        self.result.log_dir = self._log.log_dir  # (where the run directory is now: moved too)
        self.result.resumed_at = self.result.frames
        self._agent_logs = getattr(state, "agent_loggers", {})  # (older checkpoints: none)
        self._actors_meta, self._schedules = _meta_and_schedules(state)
        self._checkpoint_steps = trainer_checkpoint_steps(state)
        self.seed += self.result.frames  # new env seeds: no replay of the first run's episodes
        logger.warning("resuming %s at frame %d (%d episodes)", self._log.log_dir,
                       self.result.frames, len(self.result.returns))
        self._planned = getattr(state, "budget", 0) or self._planned  # (older: unknown)
        warn_budget_extended(self.frames, self._planned)
        return SampleCounts(state.trainer_counts)  # the trainers rebase on them when placed

    def _loop(self, callback: Callable[[DistributedRun], None] | None) -> None:
        """Poll the workers twice a second until ``_budget_spent``."""
        start = last = time.perf_counter()
        description = f"{self.name} on {self.spec.env_label} ({self.runtime.actors} actors)"
        with TrainingProgress(self.frames, description, quiet=self.quiet,
                              status=self._monitor.status) as progress:
            progress.update(self.result.frames, len(self.result.returns))  # (frames/s from here)
            while not self._budget_spent():
                time.sleep(0.5 if self.result.frames < self.frames else 0.05)
                now = time.perf_counter()
                stats = self._pool.stats()
                self._supervisor.check_workers(stats)
                self._monitor.record(stats, now - last)
                self._supervisor.check_loops()
                self._checkpoint.save()
                last = now
                progress.update(self.result.frames, len(self.result.returns),
                                self.result.mean_return())
                if callback is not None:
                    callback(self)
        self.result.seconds = time.perf_counter() - start

    def _budget_spent(self) -> bool:
        """Whether the run has taken ``frames`` env steps and its actors sent their last rows."""
        if self.result.frames < self.frames:
            self._reached = None
            return False
        restarted = {name for name, _ in self.result.restarts}
        late = sorted(name for name, done in self._monitor.actors_finished.items()
                      if not done and name not in restarted)
        if self.frames < self._started_frames or not late:
            return True  # (a callback that lowered ``frames`` ends the run after this poll)
        self._reached = self._reached or time.monotonic()
        if time.monotonic() - self._reached < (timeout := answer_timeout(self.runtime)):
            return False
        logger.warning("stopping without the last rows of %s: not sent %gs after the budget was "
                       "reached (the machine may be overloaded; raise runtime.placement_timeout)",
                       ", ".join(late), timeout)
        return True

    def _shutdown(self) -> None:
        """Save what was started, kill the workers, close the logs, stop Ray."""
        import ray
        try:
            if self._pool is not None and self._pool.runs:
                self._finish()
        finally:
            if self._pool is not None:
                self._pool.kill()
            self.close()
            if self._started_ray:
                ray.shutdown()

    def _finish(self) -> None:
        """Stop the loops, save ``policy.pt``, ``normalization.pt`` and a last checkpoint."""
        import ray
        stopped = self._pool.stop()
        try:
            if self.result.log_dir is not None:
                self._pool.save_policy(self.result.log_dir, final=True)
                if self.checkpoint_every:
                    self._pool.ask("trainer", "checkpoint", self.checkpoint_replay)
                    self._checkpoint.save(final=True, statistics=self._pool.statistics)
        except (ray.exceptions.RayError, OSError) as error:
            logger.warning("could not save the final policy: %s", error_line(error))
        if stopped:
            self._monitor.record_warnings(self._pool.stats())


def _controller_checkpoint(run: DistributedRun, counts: SampleCounts) -> ControllerCheckpoint:
    """The ``ControllerCheckpoint`` of ``run``, its workers created."""
    pool = run._pool
    return ControllerCheckpoint(
        run.checkpoint_every, run.logger, run.result, counts, run._agent_logs,
        pool.actors_meta_state, run._planned, pool.schedules,
        lambda steps: pool.ask("server", "trainer_checkpoint", steps, True), pool.normalization,
        run.keep_checkpoints,
        lambda: pool.workers["trainer"].request_checkpoint.remote(run.checkpoint_replay))


def _of_preset(preset: Preset, frames: int, runtime: RuntimeConfig
               ) -> tuple[AlgorithmSpec, RuntimeConfig]:
    """``AlgorithmSpec.of_preset`` and ``runtime`` with the options it implies (a
    ``segment_length`` of another's: ``ValueError``)."""
    spec, implied = AlgorithmSpec.of_preset(preset, frames, runtime.actors, runtime.trainers)
    given, own = runtime.segment_length, implied["segment_length"]
    if given not in (RuntimeConfig.segment_length, own):
        raise ValueError(f"a preset's segments are its own ({own} steps: its n_steps or its "
                         f"update schedule), got RuntimeConfig(segment_length={given}): drop "
                         "segment_length, or change the preset's hyperparameters")
    return spec, replace(runtime, **implied)


def _check_spec(spec: AlgorithmSpec, runtime: RuntimeConfig) -> list[str]:
    """Build the env, policy, trainer and buffer here first, find the curricula's contextual
    envs, check the meta components' ``hp/*`` keys as a local run does; return
    ``spec.agent_names``."""
    device = spec.policy_args.get("device")
    if device is not None and torch.device(device).type != "cpu":
        raise ValueError(f"policy_args device={device!r}: on Ray, each worker computes on "
                         "the GPUs it reserves; drop the device and set "
                         "runtime.gpus_per_trainer (and runtime.gpus_per_policy) instead; "
                         "actors run on the CPU")
    spec.make_env().close()
    if any(component.needs_contexts for component in spec.meta):  # (PLR, SPaCE)
        with closing(spec.collector_env(1)[0]()) as envs:  # (what an actor's components find)
            contextual_envs(envs if isinstance(envs, VectorEnvironment) else [envs])
    core = pipeline.trainer_core(spec, max_lag=runtime.max_lag)
    pipeline.check_meta_writes(spec, core)
    return spec.agent_names(core.policy)


def _resumed_state(run: DistributedRun) -> ControllerState:
    """``run.resume_from``'s controller checkpoint, checked against ``run``."""
    state = load_checkpoint(find_controller_checkpoint(run.resume_from))
    trainer_checkpoint_steps(state)  # (one line where it is missing)
    policy = Path(state.logger.log_dir) / "policy.pt"  # (the final one: budget reached)
    if not (run.evaluate_at_budget and policy.is_file()):
        check_unfinished(run.resume_from, run.frames, state.result.frames)
    ran = (state.logger.agent_name, state.logger.env_name)
    if ran != (run.name, run.spec.env_label):  # (its trainer checkpoint would not load)
        raise ValueError(f"resume_from={run.resume_from} holds a run of {ran[0]} on {ran[1]}, "
                         f"not of {run.name} on {run.spec.env_label}: resume it with the "
                         "preset (or spec) and name it was run with, or start a new run")
    _check_same_config(run.resume_from, Path(state.logger.log_dir), run.hyperparameters,
                       _env_wrappers(run.spec))
    saved = getattr(state, "checkpoint_every", None)  # (older: unknown)
    if None not in (saved, run.checkpoint_every) and saved != run.checkpoint_every:
        check_same_config(run.resume_from, [f"checkpoint_every: {saved} -> {run.checkpoint_every}"])
    run.checkpoint_every = run.checkpoint_every or saved  # (not given: the run's own)
    return state


def _meta_and_schedules(state: Any) -> tuple[dict[int, Any], dict[str, list[int]]]:
    """A controller checkpoint's actors' meta state and exploration steps (older layouts too)."""
    saved = {index: entries or [] for index, entries in getattr(state, "actors_meta", {}).items()}
    meta = {index: [entry for entry in entries if entry[0] != "exploration"]
            for index, entries in saved.items()}
    older = {f"actor{index}": steps for index, entries in saved.items()
             for name, steps in entries if name == "exploration"}
    return meta, getattr(state, "schedules", None) or older


def _resumed_normalization(state: Any, spec: AlgorithmSpec) -> list[Any] | None:
    """A controller checkpoint's normalizers' statistics (an older one's: none, warned)."""
    if state is None or "normalization" in vars(state):
        return getattr(state, "normalization", None)
    with closing(spec.make_env()) as env:
        normalizes = bool(normalizers_of(env))
    if normalizes:
        logger.warning("%s: its controller checkpoint, of a looprl before it held the "
                       "normalizers' statistics, has none: the resumed actors' start anew (the "
                       "policy sees observations scaled otherwise until they settle); start a "
                       "new run to train with them from the start", state.logger.log_dir)
    return None


#: an object's address in its ``repr`` (a function's, a network's): not the same on resume
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def _env_wrappers(spec: AlgorithmSpec) -> list[str]:
    """The import paths of ``spec``'s env wrappers, as ``looprl run``'s ``env_wrappers``."""
    wrap = spec.env_args.get("wrap_env")
    return [] if wrap is None else list(wrap.paths) if isinstance(wrap, Wrappers) else [
        object_path(wrap)]


def _check_same_config(resumed: Any, run_dir: Path, hyperparameters: dict[str, Any],
                       wrappers: list[str]) -> None:
    """``check_same_config`` of the hyperparameters and env wrappers in ``run_dir/run.json``."""
    try:
        saved = json.loads((run_dir / "run.json").read_text())
        saved = {**saved["hyperparameters"], "env_wrappers": saved.get("env_wrappers", wrappers)}
    except (OSError, ValueError, KeyError, TypeError):  # (an older or a foreign run)
        return
    new = json.loads(json_text({**hyperparameters, "env_wrappers": wrappers}, indent=0))
    check_same_config(f"resume_from={resumed}", [
        f"{key}: {saved.get(key)!r} -> {new.get(key)!r}"
        for key in sorted(set(saved) | set(new)) if saved.get(key) != new.get(key)
        and not _ADDRESS.search(f"{saved.get(key)}{new.get(key)}")])


def _ran_already(run: DistributedRun) -> RuntimeError:
    """The error of a ``DistributedRun`` run a second time."""
    frames, log_dir = run.result.frames, run.result.log_dir
    larger = " and a larger frames" if frames >= run.frames else ""
    return RuntimeError(
        f"this DistributedRun ran already ({frames:,} frames): make a new DistributedRun to "
        "train again" + ("" if log_dir is None else
                         f", or go on with DistributedRun(..., resume_from={log_dir!r}){larger}"))
