"""``PBTRunner``: population-based training (Jaderberg et al., 2017) on Ray Tune: every
``perturbation_interval`` steps each member evaluates and saves a checkpoint, and Tune exploits
and explores (perturbed ``hp/*`` values). A member logs in ``member002_gen000``, after an exploit
in a new directory (``member002_gen003``)."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

from looprl.collector.recovery import when_stuck
from looprl.core.imports import import_extra
from looprl.core.reaper import start_local_ray
from looprl.core.suggest import (
    WorkerWarnings,
    check_count,
    is_number,
    log_worker_warnings,
    warn_once,
)
from looprl.environments.faults import EnvironmentTimeout
from looprl.environments.gym import gym_registrations, install_gym_registrations
from looprl.experiments.checkpoint import load_checkpoint, save_checkpoint
from looprl.experiments.episodes import run_scope
from looprl.meta.hyperparameters import unknown_hyperparameter
from looprl.runners.base import Runner, one_run
from looprl.runners.space import numeric_range, search_mapping

__all__ = ["PBTRunner", "tune_name"]

MEMBER_FILE = "member.json"  # beside a member's checkpoint: its member and step

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _tune_quiet() -> Iterator[None]:
    """Tune's own log lines off: a failed member's traceback (its error is raised after, as
    the run's one line) and its storage notes; ``LOOPRL_DEBUG=1`` keeps them."""
    tune_log = logging.getLogger("ray.tune")
    level = tune_log.level
    if not os.environ.get("LOOPRL_DEBUG"):
        tune_log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        tune_log.setLevel(level)


def tune_name(key: str) -> str:
    """A Tune config name for ``hp/*`` key ``key`` (Tune puts them in directory names)."""
    return key.replace("/", "_")


def import_tune() -> Any:
    """``ray.tune``, or a one-line error naming the ``distributed`` extra."""
    return import_extra("ray.tune", "PBTRunner needs Ray Tune", "distributed")


def within_ranges(config: dict[str, Any], ranges: dict[str, tuple[float, float]]
                  ) -> dict[str, Any]:
    """``config`` with each perturbed value clipped into its mutation's ``(low, high)`` (Tune's
    explore scales by 0.8 or 1.2 regardless: ``hp/epsilon`` 0.9 would become 1.08)."""
    for name, (low, high) in ranges.items():
        if name in config:
            config[name] = min(max(config[name], low), high)
    return config


@run_scope(keep=False)
def _member(config: dict[str, Any], spec: dict[str, Any]) -> None:
    """One member, a Ray Tune function trainable (seeded ``seed + i``); its warnings go with
    its reports, for the driver to log."""
    with WorkerWarnings() as warned:
        tune = import_tune()
        checkpoint = tune.get_checkpoint()
        index = _index(tune.get_context().get_trial_id())
        values = {key: config[tune_name(key)] for key in spec["keys"]}
        options = dict(spec["runner"])  # (the runner's replica: meta, logging, checkpoints)
        options["seed"] += index
        options["run_info"] = {**(options["run_info"] or {}), "runner": "pbt"}
        install_gym_registrations(spec["registry"])  # (``gymnasium.register`` here)
        member = Runner(**options)
        if checkpoint is not None:  # exploit: continue from that checkpoint
            with checkpoint.as_directory() as directory:
                donor = json.loads((Path(directory) / MEMBER_FILE).read_text())
                if donor["member"] == index:  # (its own: Tune paused it for a waiting member, and
                    member.resume(directory)  # never exploits itself; its run directory goes on)
                else:
                    member.resume(directory, *_member_run(index, donor["step"] // spec["interval"],
                                                          values, donor["step"], donor["member"]))
        else:
            name, info = _member_run(index, 0, values, step=0, exploited=None)
            member.label_next_run(name, **info)
            member.new_agent(train_steps=spec["num_steps"])
        member.set_hyperparameters(values)  # explore: the (perturbed) values of this trial's config
        with when_stuck(functools.partial(_end_stuck, spec["stuck"], index)):
            _train_member(member, index, spec, tune, warned)


def _train_member(member: Runner, index: int, spec: dict[str, Any], tune: Any,
                  warned: WorkerWarnings) -> None:
    """Train member ``index`` to ``num_steps``, reporting an evaluation and a checkpoint to
    Tune every ``interval`` steps."""
    experiment = member.experiment
    while experiment.frame < spec["num_steps"]:
        step = min(experiment.frame + spec["interval"], spec["num_steps"])
        try:
            experiment.train(frames=step)
            score = member.evaluate()["mean_eval_reward"]  # (seeded, in a copy: goes on)
        except FloatingPointError as error:  # the worst score of this round's evaluation:
            experiment.logger.close()  # exploit replaces it if a member has a checkpoint,
            tune.report({"mean_eval_reward": -math.inf, "step": step,  # else it ends here
                         "diverged": str(error), "warnings": warned.take()})
            return
        with tempfile.TemporaryDirectory() as directory:
            save_checkpoint(experiment, Path(directory) / "checkpoint.pt",
                            replay=member.checkpoint_replay)
            (Path(directory) / MEMBER_FILE).write_text(
                json.dumps({"member": index, "step": experiment.frame}))
            tune.report({"mean_eval_reward": score, "step": experiment.frame,
                         "warnings": warned.take()},
                        checkpoint=tune.Checkpoint.from_directory(directory))
    experiment.logger.close()  # its last rows


def _end_stuck(folder: str, index: int, line: str) -> None:
    """End a member's process at an env call past ``env_timeout`` (Tune trains it in a thread,
    which no signal interrupts; the call may never return), leaving ``line`` for the driver."""
    import ray
    os.makedirs(folder, exist_ok=True)
    Path(folder, f"member{index:03d}.txt").write_text(f"PBT member {index}: {line}")
    ray.kill(ray.get_runtime_context().current_actor)  # (Ray's own end: none of its lines)


def _stuck_member(folder: str) -> EnvironmentTimeout | None:
    """The error of a member ``_end_stuck`` ended (the first, if several), or ``None``."""
    ended = sorted(Path(folder).glob("member*.txt"))
    if not ended:
        return None
    return EnvironmentTimeout(f"{ended[0].read_text()}: its process was stopped (a Tune "
                              "trial's thread cannot be interrupted)")


def _index(trial_id: str) -> int:
    """A member's index: its Tune trial's number (``..._00002`` -> 2)."""
    return int(trial_id.rsplit("_", 1)[-1])


def _progress(tune: Any, num_steps: int, names: dict[str, str]) -> Any:
    """A Tune callback that logs a line per member's evaluation (from Ray workers' reports)."""

    class Progress(tune.Callback):
        best = float("-inf")
        diverged: dict[int, list[str]] = {}  # member -> its divergences' messages (a class a call)

        def on_trial_result(self, iteration: int, trials: list, trial: Any,
                            result: dict[str, Any], **info: Any) -> None:
            log_worker_warnings(result.get("warnings", ()))
            member = _index(trial.trial_id)
            if "diverged" in result:
                self.diverged.setdefault(member, []).append(result["diverged"])
                log.warning("PBT member %d diverged (its score -inf): %s", member,
                            result["diverged"])
                return
            score = result["mean_eval_reward"]
            self.best = max(self.best, score)
            values = ", ".join(f"{key} {trial.config[name]:.4g}" for name, key in names.items())
            log.info("PBT member %d, step %s/%s: eval %.4g (%s); best so far %.4g", member,
                     f"{result['step']:,}", f"{num_steps:,}", score, values, self.best)

    return Progress()


def _member_run(index: int, generation: int, values: dict[str, float], step: int,
                exploited: int | None) -> tuple[str, dict[str, Any]]:
    """The run directory (``member002_gen003``) and ``run.json`` entries of a member's round."""
    return f"member{index:03d}_gen{generation:03d}", {
        "member": index, "generation": generation, "step": step, "exploited": exploited,
        "values": values}


class PBTRunner(Runner):
    """Population-based training of ``population`` agents on Ray Tune.

    Args:
        agent, env, **kwargs: ``Runner``'s.
        mutations: ``hp/*`` key -> ``(low, high[, "log"])``, where values are drawn and explored.
        perturbation_interval: steps between evaluations, checkpoints and exploit/explore.
        quantile_fraction: the bottom and top fractions of the population for exploit.
        resample_probability: the chance that explore resamples a value instead of scaling it.
        num_cpus: CPUs of the local Ray instance if the runner starts one.
        gpus_per_member: Ray GPUs each member reserves (``device`` must agree).
        initial: the members' starting ``hp/*`` values, one dict each, instead of draws.
        exploit: ``False`` trains the population without exploit and explore (a baseline).
        trials: the ``RayTrials`` the members run on (``None``: this process's Ray, or its own).
    """

    name = "pbt"
    scores = "member"

    def __init__(self, agent: Any, env: Any, mutations: Mapping[str, Any], population: int = 4,
                 num_steps: int = 100_000, perturbation_interval: int = 10_000,
                 quantile_fraction: float = 0.25, resample_probability: float = 0.25,
                 num_cpus: int | None = None, initial: list[dict[str, float]] | None = None,
                 exploit: bool = True, gpus_per_member: float = 0.0, trials: Any = None,
                 **kwargs: Any):
        check_count(population=population, num_steps=num_steps,
                    perturbation_interval=perturbation_interval)
        for name, value, high in (("quantile_fraction", quantile_fraction, 0.5),
                                  ("resample_probability", resample_probability, 1.0)):
            if not (is_number(value) and 0 <= value <= high):  # (Tune's bounds)
                raise ValueError(f"{name} must be a number in [0, {high:g}], got {value!r}")
        if not (is_number(gpus_per_member) and 0 <= gpus_per_member < math.inf):
            raise ValueError(f"gpus_per_member is the GPUs each member reserves, a number >= 0 "
                             f"(0: the CPU), got {gpus_per_member!r:.40}")
        if perturbation_interval >= num_steps:
            log.warning("PBT: perturbation_interval=%s is not below num_steps=%s, so the members "
                        "are never compared: give a shorter interval", perturbation_interval,
                        num_steps)
        device = kwargs.get("device")
        if device is not None and (str(device).startswith("cuda")) != (gpus_per_member > 0):
            raise ValueError(f"device={device!r} with gpus_per_member={gpus_per_member:g}: PBT "
                             "members train on the GPUs Ray reserves for them; set "
                             "gpus_per_member > 0 for CUDA, or leave device unset")
        kwargs["device"] = "cpu"  # here: the checks below; the members: see _member
        super().__init__(agent, env, **kwargs)
        self._scratch: tempfile.TemporaryDirectory[str] | None = None  # (see ``folder``)
        self.gpus_per_member = float(gpus_per_member)
        if trials is not None and trials.in_process:
            raise ValueError("PBT trains its population on Ray Tune: its trials are RayTrials "
                             "(runtime=ray), or leave them to the runner")
        self.trials = trials
        self.tune = import_tune()
        mutations = search_mapping(mutations, "mutations", "hp/lr")
        if not mutations:
            raise ValueError("PBT needs hp/* mutations, e.g. {'hp/lr': (1e-5, 1e-2, 'log')}")
        self.new_agent(logged=False)  # (read, not trained: no run directory)
        found = self.hyperparameters()
        #: key -> (low, high, log), ints for an int key (Tune then samples and perturbs ints)
        self.mutations: dict[str, tuple[float, float, bool]] = {}
        for key, value in mutations.items():
            if key not in found:
                raise unknown_hyperparameter(key, found)
            bounds = numeric_range(key, value, found[key].get())
            number = int if bounds.kind == "int" else float
            self.mutations[key] = (number(bounds.low), number(bounds.high), bounds.log)
        if initial is not None:
            if not (isinstance(initial, list | tuple) and initial and all(
                    isinstance(values, Mapping) and set(values) == set(mutations)
                    for values in initial)):
                raise ValueError(f"initial needs one dict per member, each with exactly the "
                                 f"keys {sorted(mutations)}, got {initial!r}")
            for values in initial:  # (checked as each member sets them)
                self.set_hyperparameters(values)
        self.close()
        self.num_steps = int(num_steps)
        self.interval = int(perturbation_interval)
        self.quantile_fraction, self.resample_probability = quantile_fraction, resample_probability
        self.num_cpus = num_cpus
        self.initial, self.exploit = initial, exploit
        self.population = int(population) if initial is None else len(initial)
        if exploit and self.population < 2:  # (Tune's quantiles of one member are empty)
            raise ValueError(f"PBT exploits between members: population must be >= 2 (or "
                             f"exploit=False), got {self.population}")

    def member_arguments(self) -> dict[str, Any]:
        """The ``Runner`` arguments of member 0: the replica's, quiet, logging in ``folder()``."""
        return {**self.replica_arguments(), "quiet": True, "logdir": self.folder(),
                "device": "cuda" if self.gpus_per_member else "cpu"}

    def member_spec(self) -> dict[str, Any]:
        """What ``_member`` trains from: member 0's ``Runner`` arguments, the steps, the
        ``hp/*`` keys, the Gymnasium registrations to make, and where a stuck member's line
        goes."""
        return {"runner": self.member_arguments(), "num_steps": self.num_steps,
                "interval": self.interval, "keys": list(self.mutations),
                "registry": gym_registrations(self.env, self.test_env),
                "stuck": str(Path(self.folder()).resolve() / "pbt" / "stuck")}

    def folder(self) -> str:
        """Where the members log and Tune keeps checkpoints (on each member's node): ``logdir``,
        else a temporary folder that ``close`` (or the runner's end) removes."""
        if self.logdir is not None:
            return os.path.abspath(self.logdir)
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="looprl-pbt-")
        return self._scratch.name

    def close(self) -> None:
        """Close the current agent's experiment, and remove the temporary ``folder()``."""
        super().close()
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            scratch.cleanup()

    def _space(self, key: str) -> Any:
        low, high, log = self.mutations[key]
        if isinstance(low, int):  # (Tune's int domains exclude their upper bound)
            return (self.tune.lograndint if log else self.tune.randint)(low, high + 1)
        return self.tune.loguniform(low, high) if log else self.tune.uniform(low, high)

    @one_run
    def run(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Train the population: ``({"step", "best", "members"}, eval_results of the best)``;
        ``best`` ``None`` and no evaluation (``{}``) if every member diverged."""
        self._own_ray = False
        try:
            members = self._train_population()
            best: dict[str, Any] | None = max(members, key=lambda m: m["mean_eval_reward"])
            if not math.isfinite(best["mean_eval_reward"]):  # (as ES's, Optuna's search)
                log.warning("No PBT member scored a finite evaluation (all diverged): nothing "
                            "to evaluate")
                best = None
            else:
                log.info("PBT: best member %d (%s): eval %.4g", best["member"], ", ".join(
                    f"{key} {value:.4g}" for key, value in best["hp"].items()),
                    best["mean_eval_reward"])
                with best["checkpoint"].as_directory() as directory:
                    self.experiment = load_checkpoint(directory)
                self.preset = self.experiment.preset
        finally:
            if self.trials is not None:
                self.trials.close()
            elif self._own_ray:  # (the instance it started; a user's Ray stays up)
                import ray
                ray.shutdown()
        for member in members:
            member.pop("checkpoint")
        return ({"step": self.num_steps, "best": best, "members": members},
                {} if best is None else self.evaluate())

    def _train_population(self) -> list[dict[str, Any]]:
        """The population trained on Tune, with each member's last checkpoint."""
        import ray
        from ray.tune.schedulers import PopulationBasedTraining

        if self.trials is not None:
            self.trials.start()
        elif not ray.is_initialized():  # a local instance of its own, never another's Ray
            start_local_ray(self.num_cpus)  # (its processes end with this one, however it ends)
            self._own_ray = True
        resources = ray.cluster_resources()
        gpus = resources.get("GPU", 0)
        if self.gpus_per_member > gpus:
            raise ValueError(f"gpus_per_member={self.gpus_per_member:g} but the Ray cluster has "
                             f"{gpus:g} GPUs: lower it (0 trains on the CPU)")
        nodes = sum(1 for key in resources  # (Ray's ``node:<ip>`` resource: one a live node)
                    if key.startswith("node:") and key != "node:__internal_head__")
        if nodes > 1:  # (Tune's storage_path too: it hard-fails on another node's own disk)
            warn_once(log, "PBT members write their run directories and Tune's checkpoints in "
                      "%s on the node that runs each, and the driver reads the best member's "
                      "there: on a cluster of %d nodes give a logdir every node shares (NFS)",
                      self.folder(), nodes)
        tune = self.tune
        names = {tune_name(key): key for key in self.mutations}
        space = {name: self._space(key) for name, key in names.items()}
        scheduler = PopulationBasedTraining(
            time_attr="step", perturbation_interval=self.interval, hyperparam_mutations=space,
            quantile_fraction=self.quantile_fraction,
            resample_probability=self.resample_probability,
            custom_explore_fn=functools.partial(within_ranges, ranges={
                name: self.mutations[key][:2] for name, key in names.items()}))
        spec = self.member_spec()
        shutil.rmtree(spec["stuck"], ignore_errors=True)  # (a run's before, in this logdir)
        storage = Path(self.folder()).resolve() / "pbt"
        trainable = tune.with_resources(tune.with_parameters(_member, spec=spec),
                                        {"cpu": 1, "gpu": self.gpus_per_member})
        if self.initial is not None:  # one trial per given start, in this order
            starts = list(self.initial)
            space = {"start": tune.grid_search(list(range(len(starts)))),
                     **{name: tune.sample_from(lambda config, k=key: starts[config["start"]][k])
                        for name, key in names.items()}}
        samples = self.population if self.initial is None else 1
        # reuse_actors: a trial runs in a worker another one left, not a new one importing
        # torch and looprl again (benchmarks/pbt_cartpole.py on 2 CPUs: 71 s -> 33 s)
        config = tune.TuneConfig(scheduler=scheduler if self.exploit else None, reuse_actors=True,
                                 num_samples=samples, metric="mean_eval_reward", mode="max",
                                 max_concurrent_trials=None if self.trials is None
                                 else self.trials.parallel)
        progress = _progress(tune, self.num_steps, names)
        run_config = tune.RunConfig(storage_path=str(storage), name="population", verbose=0,
                                    stop={"step": self.num_steps}, callbacks=[progress])
        # Tune's console off (verbose=0 silences only its older reporter: RAY_AIR_NEW_OUTPUT=0);
        # Ctrl-C stops the run (Tune's handler would end the population and call it finished)
        with mock.patch.dict(os.environ, {"RAY_AIR_NEW_OUTPUT": "0",
                                          "TUNE_DISABLE_SIGINT_HANDLER": "1"}), _tune_quiet():
            results = tune.Tuner(trainable, param_space=space, tune_config=config,
                                 run_config=run_config).fit()
        members = []
        for result in results:
            if result.error is not None:  # a member failed: its error, not a missing metric
                if stuck := _stuck_member(spec["stuck"]):  # (its process ended: no error)
                    raise stuck
                cause = getattr(result.error, "cause", None)
                raise cause if isinstance(cause, Exception) else result.error
            hp = {names[name]: result.config[name] for name in names}
            index = _index(result.metrics["trial_id"])
            members.append({"member": index, "hp": hp,
                            "mean_eval_reward": result.metrics["mean_eval_reward"],
                            "diverged": progress.diverged.get(index, []),
                            "checkpoint": result.checkpoint})
        return members
