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
    """At the first poll at or past every ``every`` frames, the policy the trainer published
    last, evaluated as the final evaluation is (``final_evaluation``: ``episodes`` seeded
    episodes in ``env``, and the held-out ``test_env``), recorded as locally
    (``eval_results.csv`` in ``logdir``, ``evaluations``); the best so far is kept beside the
    final policy (``best_policy.pt``, ``looprl watch --best``)."""

    def __init__(self, every: int, episodes: int, env: Any = None, test_env: Any = None,
                 logdir: str | None = None):
        check_count(**{"runner.eval_every": every})
        self.every, self.episodes, self.logdir = int(every), episodes, logdir
        self.env, self.test_env = env, test_env
        self.evaluations: list[list[float]] = []
        self._next = self.every

    def __call__(self, run: Any) -> None:
        """Evaluate ``run`` (a ``DistributedRun``) if its frames passed the next multiple."""
        frames = run.result.frames
        if frames < self._next or not run.save_policy():  # (nothing published yet: wait)
            return
        self._next = (frames // self.every + 1) * self.every
        results = {**final_evaluation(run, self.episodes, self.env, self.test_env),
                   "step": frames}
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
