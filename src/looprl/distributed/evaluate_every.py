"""``EvaluateEvery``: ``runner.eval_every`` on Ray, a ``DistributedRun.run`` callback that
evaluates the policy on the way as an ``OnlineRunner`` does locally."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from looprl.core.files import write_atomically
from looprl.core.suggest import check_count
from looprl.distributed.watch import BEST, POLICY_FILE
from looprl.environments.wrappers import NORMALIZATION_FILE
from looprl.runners.evaluation import best_evaluation, final_evaluation, record_evaluation

__all__ = ["EvaluateEvery"]


class EvaluateEvery:
    """Every ``every`` frames, the policy the trainer published last, evaluated as the final
    evaluation is (``final_evaluation``: ``episodes`` seeded episodes in ``env``, and the
    held-out ``test_env``), recorded as locally (``eval_results.csv`` in ``logdir``,
    ``evaluations``); the best so far is kept beside the final policy (``best_policy.pt``,
    ``looprl watch --best``). With one synchronous actor, at the frames a local run evaluates
    at (the actor stops there: ``hold_every``), the same evaluations bit for bit; else at the
    first poll at or past every multiple of ``every``. ``final``: the run's last, as locally."""

    def __init__(self, every: int, episodes: int, env: Any = None, test_env: Any = None,
                 logdir: str | None = None):
        check_count(**{"runner.eval_every": every})
        self.every, self.episodes, self.logdir = int(every), episodes, logdir
        self.env, self.test_env = env, test_env
        self.evaluations: list[list[float]] = []
        self._next = self.every
        self._held = False  # (actor 0 was seen stopped: the next poll has its frames)

    def hold_every(self, runtime: Any) -> int | None:
        """The env steps after which actor 0 stops for an evaluation (``ActorWorker.held``):
        ``every`` with one synchronous actor (the frames a local run evaluates at), else none."""
        return self.every if runtime.sync and runtime.actors == 1 else None

    def __call__(self, run: Any) -> None:
        """Evaluate ``run`` (a ``DistributedRun``) if due."""
        if self.hold_every(run.runtime) is not None:
            import ray
            actor = run.workers["actor0"]
            if not self._held:
                self._held = ray.get(actor.held.remote())
                return
            self._held = False
            self._evaluate(run)
            actor.resume.remote()
        elif run.result.frames >= self._next:
            self._next = (run.result.frames // self.every + 1) * self.every
            self._evaluate(run)

    def final(self, run: Any, results: dict[str, Any]) -> None:
        """Record the final evaluation's ``results`` as a local run records its last (unless
        it evaluated at that step already)."""
        if not self.evaluations or self.evaluations[-1][0] != results["step"]:
            self._record(run, results)

    def _evaluate(self, run: Any) -> None:
        if run.save_policy():  # (nothing published yet: none)
            self._record(run, {**final_evaluation(run, self.episodes, self.env, self.test_env),
                               "step": run.result.frames})

    def _record(self, run: Any, results: dict[str, Any]) -> None:
        if record_evaluation(self.logdir, self.evaluations, results):
            run_dir = Path(run.result.log_dir)
            for name in (POLICY_FILE, NORMALIZATION_FILE):
                if (run_dir / name).is_file():
                    write_atomically(run_dir / (BEST + name), lambda copy, name=name:
                                     shutil.copyfile(run_dir / name, copy))

    @property
    def best(self) -> list[float] | None:
        """``[step, mean return]`` of the best evaluation so far (``None``: none yet)."""
        return best_evaluation(self.evaluations)
