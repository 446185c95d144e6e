"""``OptunaRunner``: hyperparameter search with Optuna (TPE, pruning, resumable studies). A trial
trains a fresh seeded agent in ``n_evaluations`` chunks, each evaluation reported to the pruner
(on Ray: once its batch ends); its value is the last."""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from looprl.core.imports import import_extra
from looprl.core.suggest import check_count, one_line
from looprl.experiments.diagnose import DataDivergence
from looprl.runners.base import Runner, one_run
from looprl.runners.space import Dimension, parse_search_space, search_mapping
from looprl.runners.trials import LocalTrials

log = logging.getLogger(__name__)

#: the samplers and pruners by name: their class in ``optuna.samplers`` / ``optuna.pruners``
SAMPLERS = {"random": "RandomSampler", "tpe": "TPESampler"}
PRUNERS = {"hyperband": "HyperbandPruner", "median": "MedianPruner", "none": "NopPruner",
           "successive_halving": "SuccessiveHalvingPruner"}


class OptunaRunner(Runner):
    """Hyperparameter search on Optuna.

    Args:
        agent, env, **kwargs: ``Runner``'s.
        search_space: name (preset hyperparameter, ``hp/*`` key) -> spec (``space``).
        n_trials: trials each ``run()`` adds to the study (a stored one goes on, its sampler
            seeded by ``seed`` plus the trials already there).
        storage: ``None`` (in memory), a database URL (``"sqlite:///search.db"``), a journal
            file path (any other string or path), or an Optuna storage.
        sampler: a name of ``SAMPLERS``, or an Optuna sampler.
        pruner: a name of ``PRUNERS``, or an Optuna pruner.
        trials: ``LocalTrials()`` (default) or ``RayTrials(...)`` (batches at once).
    """

    name = "optuna"
    scores = "trial"

    def __init__(self, agent: Any, env: Any, search_space: Mapping[str, Any],
                 n_trials: int = 20, num_steps: int = 50_000, n_evaluations: int = 4,
                 storage: Any = None, study_name: str = "looprl", sampler: Any = "tpe",
                 pruner: Any = "median", trials: Any = None, **kwargs: Any):
        kwargs.setdefault("quiet", True)
        super().__init__(agent, env, **kwargs)
        self.optuna = import_extra("optuna", "OptunaRunner needs Optuna", "hpo")
        check_count(n_trials=n_trials, num_steps=num_steps, n_evaluations=n_evaluations)
        if int(n_evaluations) > int(num_steps):
            raise ValueError(f"n_evaluations must be in [1, num_steps={num_steps}], "
                             f"got {n_evaluations!r}")
        self.n_trials, self.num_steps = int(n_trials), int(num_steps)
        self.n_evaluations = int(n_evaluations)
        self.storage, self.study_name = storage, study_name
        self.sampler = _check_name("sampler", sampler, SAMPLERS, self.optuna.samplers.BaseSampler)
        self.pruner = _check_name("pruner", pruner, PRUNERS, self.optuna.pruners.BasePruner)
        self.trials = LocalTrials() if trials is None else trials
        search_space = search_mapping(search_space, "search_space")
        searchable = dict(self.builder.hyperparameter_defaults)
        if any(str(name).startswith("hp/") for name in search_space):
            self.new_agent(logged=False)  # (read, not trained: no run directory)
            searchable.update({key: h.get() for key, h in self.hyperparameters().items()})
            self.close()
        self.dimensions = parse_search_space(search_space, searchable, self.builder.default_name)
        for d in self.dimensions:  # a choice the preset cannot take (a part it has not) fails
            if d.kind == "categorical" and not d.name.startswith("hp/"):  # now, not in a trial
                for choice in d.choices:
                    self.builder.hyperparameters(**{d.name: choice}).env(self.env).build()

    def study(self) -> Any:
        """The study, created in the storage or loaded from it."""
        try:
            storage = self._storage()
            studies = [] if storage is None else self.optuna.get_all_study_summaries(storage)
        except Exception as error:  # (SQLAlchemy's and the journal's: they name no storage)
            raise ValueError(f"OptunaRunner cannot open its storage {self.storage!r} "
                             f"({one_line(error)}): give a database URL it can open "
                             "(sqlite:///search.db), a journal file path, or None (in memory)"
                             ) from None
        existing = next((s.n_trials for s in studies if s.study_name == self.study_name), 0)
        verbosity = self.optuna.logging.get_verbosity()  # (its "A new study created" line off:
        self.optuna.logging.set_verbosity(self.optuna.logging.WARNING)  # the runner logs its own)
        try:
            study = self.optuna.create_study(
                storage=storage, study_name=self.study_name, direction="maximize",
                sampler=self._named(self.sampler, "samplers", SAMPLERS, seed=self.seed + existing),
                pruner=self._named(self.pruner, "pruners", PRUNERS), load_if_exists=True)
        finally:
            self.optuna.logging.set_verbosity(verbosity)
        self._check_search(study)
        return study

    def _check_search(self, study: Any) -> None:
        """Note what the study searches (preset, environment, space) in a new study; a stored
        one that searched something else is a one-line ``ValueError`` (its trials would mix)."""
        search = {"preset": self.builder.default_name, "env": self.env.name,
                  "search_space": [repr(d) for d in self.dimensions]}
        stored = study.user_attrs.get("looprl_search")
        if stored is None:
            study.set_user_attr("looprl_search", search)
        elif stored != search:
            names = ", ".join(d.name for d in self.dimensions)
            raise ValueError(f"OptunaRunner's study {self.study_name!r} in {self.storage!r} "
                             f"searched {stored['preset']} on {stored['env']} over another "
                             f"space; this search is {search['preset']} on {search['env']} over "
                             f"{names}: give it a study of its own (study_name=NAME, "
                             "runner.study_name=NAME) or another storage")

    def _storage(self) -> Any:
        storage = self.storage
        if not isinstance(storage, (str, os.PathLike)):  # (None, or an Optuna storage)
            return storage
        if "://" in str(storage):
            return str(storage)
        storages = self.optuna.storages  # (the file backend is JournalFileStorage before Optuna 4)
        backend = getattr(getattr(storages, "journal", None), "JournalFileBackend", None)
        return storages.JournalStorage((backend or storages.JournalFileStorage)(os.fspath(storage)))

    def _named(self, value: Any, module: str, names: dict[str, str], **kwargs: Any) -> Any:
        """``value`` (a sampler or pruner), or the one of ``optuna.{module}`` it names."""
        named = isinstance(value, str)
        return getattr(getattr(self.optuna, module), names[value])(**kwargs) if named else value

    def _trial_task(self, number: int, values: dict[str, Any],
                    report: Callable[[int, float], bool] | None = None,
                    label: str | None = None) -> TrialTask:
        total, n = self.num_steps, self.n_evaluations  # (n chunks that add up to total)
        chunks = [total // n + int(i < total % n) for i in range(n)]
        return TrialTask(number, values, total, chunks, label or f"trial{number:03d}", report)

    def _tell(self, study: Any, trial: Any, task: TrialTask,
              outcome: tuple[list[tuple[int, float]], str | None]) -> None:
        """Report the trial's evaluations and tell the study how it ended."""
        evaluations, error = outcome
        reporter = _Reporter(trial) if task.report is None else task.report
        pruned = reporter.replay(evaluations)
        state = self.optuna.trial.TrialState
        if pruned:  # (on Ray it trained on; what came after the pruning point is dropped)
            frozen = study.tell(trial, state=state.PRUNED)
        elif error is not None:
            log.warning("Optuna trial %d failed: %s", trial.number, error)
            frozen = study.tell(trial, state=state.FAIL)
        else:
            frozen = study.tell(trial, evaluations[-1][1] if evaluations else math.nan)
        log.info("Optuna %s trial %d %s: value %s, %s", study.study_name, frozen.number,
                 frozen.state.name, frozen.value, frozen.params)

    def _optimize(self, study: Any) -> None:
        """Add ``n_trials`` trials, ``trials.parallel`` at a time."""
        remaining = self.n_trials
        while remaining > 0:
            batch = [study.ask() for _ in range(min(self.trials.parallel, remaining))]
            told = 0
            try:
                tasks = [self._trial_task(  # (run here: with a reporter to the pruner)
                    trial.number, {d.name: _suggest(trial, d) for d in self.dimensions},
                    _Reporter(trial) if self.trials.in_process else None) for trial in batch]
                for trial, task, (outcome, _) in zip(
                        batch, tasks, self.trials.map(self, train_trial, tasks)):
                    self._tell(study, trial, task, outcome)
                    told += 1
            finally:  # (an error, Ctrl-C) the trials not told failed, as study.optimize does
                for trial in batch[told:]:
                    with contextlib.suppress(ValueError, RuntimeError):  # (told already)
                        study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
            remaining -= len(batch)

    @one_run
    def run(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Add ``n_trials`` trials, then retrain and evaluate the best values: ``({"step",
        "best", "history", "study_name"}, eval_results)`` (``{}``: no trial completed)."""
        study = self.study()
        try:
            self._optimize(study)
        finally:
            self.trials.close()
        self.close()
        history = [{"number": t.number, "state": t.state.name, "value": t.value,
                    "values": dict(t.params), "step": t.user_attrs.get("step")}
                   for t in study.trials]
        best, eval_results = None, {}
        if any(t.state.name == "COMPLETE" for t in study.trials):
            trial = study.best_trial
            best = {"value": trial.value, "values": dict(trial.params), "trial": trial.number}
            # in the trial's chunks, with its evaluations (best/ logs the trial's curve): each
            # chunk overshoots to the end of an update, so one of num_steps could stop short
            _, error = train_trial(self, self._trial_task(trial.number, dict(trial.params),
                                                          label="best"), last=False)
            if error is not None:
                raise FloatingPointError(error)
            eval_results = self.evaluate()  # (its last chunk's evaluation)
        else:
            log.warning("No trial of study %r completed: nothing to evaluate", self.study_name)
        return ({"step": len(study.trials), "best": best, "history": history,
                 "study_name": self.study_name}, eval_results)


@dataclass
class TrialTask:
    """One Optuna trial, as ``train_trial`` runs it."""

    number: int
    values: dict[str, Any]
    num_steps: int  # what the agent's schedules anneal over
    chunks: list[int]  # training steps before each evaluation
    label: str  # its run directory
    report: Callable[[int, float], bool] | None = None  # (step, value) -> prune? (run here)


def train_trial(runner: Runner, task: TrialTask, last: bool = True
                ) -> tuple[list[tuple[int, float]], str | None]:
    """Train a fresh agent with the trial's values, evaluating after each chunk (until
    ``task.report`` prunes it; ``last=False``: but the last, which the caller evaluates);
    the ``(step, mean_eval_reward)`` pairs, and any error."""
    runner.label_next_run(task.label, trial=task.number, values=task.values)
    runner.configure(task.values, task.num_steps)
    evaluations: list[tuple[int, float]] = []
    try:
        for i, chunk in enumerate(task.chunks, 1):
            step = runner.train(chunk)["step"]
            if i == len(task.chunks) and not last:
                break
            evaluations.append((step, runner.evaluate()["mean_eval_reward"]))
            if task.report is not None and task.report(*evaluations[-1]):
                break
    except DataDivergence:  # (the environment's NaNs: every trial's, whatever its values)
        raise
    except FloatingPointError as error:  # a diverging trial fails
        return evaluations, str(error)
    return evaluations, None


class _Reporter:
    """Reports a trial's evaluations to Optuna (``trial.report``) and asks its pruner."""

    def __init__(self, trial: Any):
        self.trial, self.reported, self.pruned = trial, 0, False

    def __call__(self, step: int, value: float) -> bool:
        """Report one evaluation; whether the pruner stops the trial."""
        self.trial.report(value, step=step)
        self.trial.set_user_attr("step", step)
        self.reported += 1
        self.pruned = self.trial.should_prune()
        return self.pruned

    def replay(self, evaluations: list[tuple[int, float]]) -> bool:
        """Report the evaluations not reported yet; whether the pruner stopped the trial."""
        for step, value in evaluations[self.reported:]:
            if self.pruned or self(step, value):
                break
        return self.pruned


def _check_name(kind: str, value: Any, valid: dict[str, str], base: type) -> Any:
    """``value``: a name of ``valid`` or an Optuna ``base`` (a sampler, a pruner)."""
    if not isinstance(value, str | base):  # (runner.pruner=5 was an AttributeError at trial 1)
        raise TypeError(f"{kind} is a name ({', '.join(valid)}) or an Optuna {kind} object, "
                        f"got {value!r:.40}")
    if isinstance(value, str) and value not in valid:
        raise ValueError(f"Unknown {kind} {value!r}; valid: {', '.join(valid)} "
                         f"(or an Optuna {kind} object)")
    return value


def _suggest(trial: Any, d: Dimension) -> Any:
    if d.kind == "categorical":
        return trial.suggest_categorical(d.name, list(d.choices))
    if d.kind == "int":
        return trial.suggest_int(d.name, int(d.low), int(d.high), log=d.log,
                                 step=int(d.step or 1))
    return trial.suggest_float(d.name, float(d.low), float(d.high), log=d.log, step=d.step)
