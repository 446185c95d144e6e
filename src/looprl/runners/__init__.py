"""The outer loop: runners that train, evaluate and re-configure agents over repeated runs.

* ``OnlineRunner``: train, then evaluate (``run() -> (train_results, eval_results)``).
* ``ESRunner``: evolution strategies (CMA-ES or OpenAI-ES, ask/tell) over hyperparameters,
  network parameters, or both.
* ``OptunaRunner``: hyperparameter search with Optuna (TPE, pruning, resumable studies);
  Optuna is imported only when it is constructed (``pip install looprl[hpo]``).
* ``PBTRunner``: population-based training on Ray Tune (exploit: a member continues from a
  better one's checkpoint; explore: perturbed ``hp/*`` values); Ray is imported only when it
  is constructed (``pip install looprl[distributed]``).

Their trials (ES individuals, Optuna trials) run through ``trials``: ``LocalTrials`` one after
another (the default), or ``looprl.distributed.trials.RayTrials`` at once on Ray, with the same
results (``looprl.runners.trials``).

The keys of the dictionaries ``Runner.train`` and ``Runner.evaluate`` return are documented
in ``looprl.runners.base`` (``TRAIN_KEYS``, ``EVAL_KEYS``).
"""

from looprl.runners.base import EVAL_KEYS, TRAIN_KEYS, Runner
from looprl.runners.es import ESRunner
from looprl.runners.fitness import SHAPERS, fitness_shaper
from looprl.runners.hpo import OptunaRunner
from looprl.runners.online import OnlineRunner
from looprl.runners.pbt import PBTRunner
from looprl.runners.space import Dimension, SearchSpaceError, parse_search_space
from looprl.runners.strategies import STRATEGIES, make_strategy
from looprl.runners.trials import LocalTrials

__all__ = ["EVAL_KEYS", "SHAPERS", "STRATEGIES", "TRAIN_KEYS", "Dimension", "ESRunner",
           "LocalTrials", "OnlineRunner", "OptunaRunner", "PBTRunner", "Runner",
           "SearchSpaceError", "fitness_shaper", "make_strategy", "parse_search_space"]
