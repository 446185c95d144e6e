"""The outer loop: runners that train, evaluate and re-configure agents over repeated runs;
each has ``run() -> (train_results, eval_results)``.
"""

from looprl.runners.base import EVAL_KEYS, TRAIN_KEYS, OnlineRunner, Runner
from looprl.runners.es import SHAPERS, STRATEGIES, ESRunner, fitness_shaper, make_strategy
from looprl.runners.hpo import OptunaRunner
from looprl.runners.pbt import PBTRunner
from looprl.runners.space import Dimension, SearchSpaceError, parse_search_space
from looprl.runners.trials import LocalTrials

__all__ = ["EVAL_KEYS", "SHAPERS", "STRATEGIES", "TRAIN_KEYS", "Dimension", "ESRunner",
           "LocalTrials", "OnlineRunner", "OptunaRunner", "PBTRunner", "Runner",
           "SearchSpaceError", "fitness_shaper", "make_strategy", "parse_search_space"]
