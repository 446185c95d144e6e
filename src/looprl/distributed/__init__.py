"""Distributed training on Ray (seed 004's SRL API), and the local checks to run before it.

* ``test_environment`` -- check an SRL environment in one process;
* ``test_pipeline`` -- run an environment, a policy and a trainer together in one process;
* ``AlgorithmSpec`` + ``RuntimeConfig`` -> ``DistributedRun(...).run()`` -- the same policy
  and trainer on actor, policy and trainer workers (Ray actors).

Importing this package imports no Ray; ``DistributedRun.run`` does (the ``distributed`` extra).
"""

from looprl.distributed.collector import EnvRunner, Episode, RolloutSizeError
from looprl.distributed.config import AlgorithmSpec, RuntimeConfig
from looprl.distributed.controller import DistributedResult, DistributedRun
from looprl.distributed.pipeline import PipelineReport, TrainerCore, test_pipeline
from looprl.distributed.testing_env import EnvironmentCheckError, test_environment

__all__ = [
    "AlgorithmSpec",
    "DistributedResult",
    "DistributedRun",
    "EnvRunner",
    "EnvironmentCheckError",
    "Episode",
    "PipelineReport",
    "RolloutSizeError",
    "RuntimeConfig",
    "TrainerCore",
    "test_environment",
    "test_pipeline",
]
