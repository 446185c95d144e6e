"""``OnlineRunner``: train one agent, then evaluate it (Mighty's basic runner)."""

from __future__ import annotations

import copy
import logging
import math
import time
from pathlib import Path
from typing import Any

from looprl.core.suggest import check_count
from looprl.experiments.budget import warn_budget_extended
from looprl.experiments.checkpoint import check_unfinished
from looprl.experiments.episodes import run_scope
from looprl.experiments.logger import mean_return
from looprl.experiments.run_files import append_lines, keep_until, save_preset
from looprl.runners.base import Runner
from looprl.runners.evaluation import SETS

log = logging.getLogger(__name__)


class OnlineRunner(Runner):
    """Trains a fresh agent for ``num_steps`` steps, then evaluates it.

    Args:
        agent, env, **kwargs: ``Runner``'s.
        resume_from: a checkpoint (or its run directory) to continue up to ``num_steps``.
        eval_every: also evaluate every this many steps (``eval_results.csv``) and keep the
            best agent so far (``best_preset``, ``best_preset.pt``); the train results then
            hold ``evaluations`` (``[step, mean_eval_reward]``) and ``best``.
    """

    name = "online"

    def __init__(self, agent: Any, env: Any, num_steps: int = 100_000,
                 resume_from: str | None = None, eval_every: int | None = None, **kwargs: Any):
        if eval_every is not None:  # (Runner's check: it needs evaluation episodes)
            self.scores = "agent that eval_every compares (best_preset)"
        super().__init__(agent, env, **kwargs)
        check_count(num_steps=num_steps)
        check_count(optional=True, eval_every=eval_every)
        self.num_steps = int(num_steps)
        self.resume_from = resume_from
        self.eval_every = None if eval_every is None else int(eval_every)
        self.best_preset: Any = None
        self.evaluations: list[list[float]] = []
        self._last_evaluation: dict[str, Any] | None = None  # (of eval_every)

    @run_scope()  # (its chunks of training and evaluations: one run)
    def run(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Train (or continue training), then evaluate: ``(train_results, eval_results)``."""
        returns: list[float] = []
        self.evaluations = []
        if self.resume_from is not None:
            self.resume(self.resume_from)
            if self.experiment.frame > self.num_steps:  # (as a Ray run's resume: one line)
                log_dir, frame = self.experiment.logger.log_dir, self.experiment.frame
                self.close()
                check_unfinished(log_dir, self.num_steps, frame)
            warn_budget_extended(self.num_steps, self.experiment.train_steps)
            self.evaluations = self._read_evaluations(self.experiment.frame)
            returns = list(getattr(self.experiment.logger, "returns", []))  # before the resume
        else:
            self.new_agent(train_steps=self.num_steps)
        start = time.perf_counter()
        chunk = self.eval_every or self.num_steps
        since = self.evaluations[-1][0] if self.evaluations else 0  # (the last evaluation's step)
        while True:
            target = min(since + chunk, self.num_steps)
            train_results = self.train(max(target - self.experiment.frame, 0))
            returns += train_results["returns"]
            if self.eval_every is None or since >= self.num_steps:
                break
            self._evaluate_and_keep_best()
            since = self.experiment.frame
        train_results.update(returns=returns, mean_return=mean_return(returns),
                             wall_time=time.perf_counter() - start)
        if self.eval_every is not None:
            train_results["evaluations"] = self.evaluations
            train_results["best"] = max(self.evaluations, key=lambda e: e[1], default=None)
        last = self._last_evaluation  # (at the final step already: the same, played once)
        return train_results, last if last and last["step"] == self.experiment.frame \
            else self._evaluation(self.eval_episodes)

    def _evaluate_and_keep_best(self) -> None:
        results = self._last_evaluation = self.evaluate()
        best = max((mean for _, mean in self.evaluations), default=-math.inf)
        if self.logdir is not None:  # a row per set (the run's first: in a new file)
            path = Path(self.logdir) / "eval_results.csv"
            sets = {name: results[name] for name in SETS if name in results} or {SETS[0]: results}
            rows = [f"{results['step']},{one['mean_eval_reward']!r},{one['std_eval_reward']!r},"
                    f"{one['episodes']},{name}\n" for name, one in sets.items()]
            if not self.evaluations:
                path.write_text("step,mean_eval_reward,std_eval_reward,episodes,set\n")
            append_lines(path, rows)
        self.evaluations.append([results["step"], results["mean_eval_reward"]])
        if results["mean_eval_reward"] > best:
            self.best_preset = copy.deepcopy(self.preset)
            if self.logdir is not None:
                save_preset(self.preset, self.experiment.vector_env, self.logdir, "best_")

    def _read_evaluations(self, frame: float = math.inf) -> list[list[float]]:
        """The run's ``eval_results.csv`` (its held-out set's, if any) up to ``frame`` (the later
        rows dropped from the file too: evaluated again)."""
        if self.logdir is None or not (path := Path(self.logdir) / "eval_results.csv").exists():
            return []
        keep_until(path, frame)
        rows = [line.split(",") for line in path.read_text().splitlines()[1:] if line]
        wanted = SETS[1] if any(row[4:] == [SETS[1]] for row in rows) else SETS[0]
        try:
            return [[int(row[0]), float(row[1])] for row in rows if row[4:] in ([], [wanted])]
        except (ValueError, IndexError):
            raise ValueError(f"{path} has a row without a step and a mean return (hand-edited?): "
                             "restore the file, or delete the row") from None
