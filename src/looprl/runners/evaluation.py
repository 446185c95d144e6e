"""The final evaluation of a run on every runtime (``final_evaluation``): the trained agent's test
returns, and with held-out instances (``context.test``) its returns on each of them too."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from looprl.environments.contextual import ContextualEnvironment
from looprl.experiments.logger import ExperimentLogger, mean_return
from looprl.experiments.run_files import append_lines

__all__ = ["SETS", "best_evaluation", "final_evaluation", "held_out_returns", "instance_plan",
           "record_evaluation", "summary"]

#: The names of the two evaluated sets (in ``results.json``, TensorBoard and CSV files).
SETS = ("train_set", "test_set")


def instance_plan(env: Any, episodes: int) -> list[tuple[Any, int]]:
    """``(environment, episodes)`` pairs that evaluate ``env``: one per instance of a
    ``ContextualEnvironment`` (``max(episodes, instances)`` episodes in all), else ``env``."""
    if not isinstance(env, ContextualEnvironment):
        return [(env, episodes)]
    wrapper = env.contextual
    contexts = wrapper.contexts
    total = max(int(episodes), len(contexts))
    share, extra = divmod(total, len(contexts))
    return [(ContextualEnvironment(wrapper.env_id, {key: context}, wrapper.hide_context,
                                   seed=env.given_seed, device=env.device, name=env.name,
                                   **wrapper.make_kwargs), share + (i < extra))
            for i, (key, context) in enumerate(contexts.items())]


def held_out_returns(test: Callable[..., list[float]], env: Any, episodes: int) -> list[float]:
    """The returns of ``test(episodes=n, env=e)`` over ``instance_plan(env, episodes)``."""
    returns: list[float] = []
    for single, n in instance_plan(env, episodes):
        returns += test(episodes=n, env=single)
        if single is not env:
            single.close()
    return returns


def final_evaluation(run: Any, episodes: int, env: Any = None, test_env: Any = None
                     ) -> dict[str, Any]:
    """``summary`` of ``episodes`` of ``run.test`` (an ``Experiment``'s or a ``DistributedRun``'s;
    multi-agent: the team's returns); with ``test_env``, ``held_out_returns`` there too, logged
    as the two ``SETS``."""
    if test_env is None:
        if not episodes:  # (none played nor logged, as run_experiment's)
            return summary([])
        returns = run.test(episodes=episodes)
        if isinstance(returns, dict):
            returns = [sum(values) for values in zip(*returns.values(), strict=True)]
        return summary(returns)
    returns = run.test(episodes=episodes, env=env)
    held_out = held_out_returns(run.test, test_env, episodes)
    if isinstance(run.logger, ExperimentLogger):  # (named sets: not in ``Logger``'s protocol)
        run.logger.add_test_returns(dict(zip(SETS, (returns, held_out), strict=True)))
    return summary(returns, held_out)


def summary(returns: list[float], held_out: list[float] | None = None) -> dict[str, Any]:
    """``EVAL_KEYS`` but ``step`` of ``returns`` (with ``held_out``: of those, and both sets'
    under ``train_set`` and ``test_set``)."""
    returns = [float(r) for r in returns]
    results = {"mean_eval_reward": mean_return(returns),
               "std_eval_reward": float(np.std(returns)) if returns else math.nan,
               "returns": returns, "episodes": len(returns)}
    if held_out is None:
        return results
    test_set = summary(held_out)
    return {**test_set, "train_set": results, "test_set": test_set}


def record_evaluation(logdir: str | None, evaluations: list[list[float]],
                      results: dict[str, Any]) -> bool:
    """Add an evaluation on the way (``results``, at ``results["step"]``) to ``evaluations``
    (``[step, mean]`` rows) and to ``logdir``'s ``eval_results.csv`` (a row per set, the header
    first); whether it is the best so far."""
    best = max((mean for _, mean in evaluations), default=-math.inf)
    if logdir is not None:
        path = Path(logdir) / "eval_results.csv"
        sets = {name: results[name] for name in SETS if name in results} or {SETS[0]: results}
        rows = [f"{results['step']},{one['mean_eval_reward']!r},{one['std_eval_reward']!r},"
                f"{one['episodes']},{name}\n" for name, one in sets.items()]
        if not evaluations:
            path.write_text("step,mean_eval_reward,std_eval_reward,episodes,set\n")
        append_lines(path, rows)
    evaluations.append([results["step"], results["mean_eval_reward"]])
    return results["mean_eval_reward"] > best


def best_evaluation(evaluations: list[list[float]]) -> list[float] | None:
    """The ``[step, mean]`` row with the highest mean (``None``: none yet)."""
    return max(evaluations, key=lambda e: e[1], default=None)
