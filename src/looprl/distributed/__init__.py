"""Distributed training on Ray (seed 004's SRL API), and the local checks to run before it:
``test_environment``, ``test_pipeline``, then ``DistributedRun(AlgorithmSpec, RuntimeConfig)``.

Importing this package imports no Ray, and its names only when first used (a Ray worker does not
import the controller's code). It sets ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (unless set),
which keeps a local Ray instance on 127.0.0.1."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # before any Ray import

if TYPE_CHECKING:
    from looprl.collector import EnvRunner, Episode, RolloutSizeError
    from looprl.distributed.config import AlgorithmSpec, RuntimeConfig
    from looprl.distributed.controller import DistributedResult, DistributedRun
    from looprl.distributed.pipeline import PipelineReport, test_pipeline
    from looprl.distributed.testing_env import EnvironmentCheckError, test_environment

_MODULES = {  # where each name is defined (relative: in this package)
    "EnvRunner": "looprl.collector", "Episode": "looprl.collector",
    "RolloutSizeError": "looprl.collector", "AlgorithmSpec": ".config", "RuntimeConfig": ".config",
    "DistributedResult": ".controller", "DistributedRun": ".controller",
    "PipelineReport": ".pipeline", "test_pipeline": ".pipeline",
    "EnvironmentCheckError": ".testing_env", "test_environment": ".testing_env",
}

__all__ = ["AlgorithmSpec", "DistributedResult", "DistributedRun", "EnvRunner",
           "EnvironmentCheckError", "Episode", "PipelineReport", "RolloutSizeError",
           "RuntimeConfig", "test_environment", "test_pipeline"]


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULES))
