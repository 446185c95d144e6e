"""ALL's ``all.logging`` import path: ``Logger`` and ``DummyLogger`` (from ``looprl.core``)
and ``ExperimentLogger`` (from ``looprl.experiments``)."""

from looprl.core import DummyLogger, Logger
from looprl.experiments.logger import ExperimentLogger

__all__ = ["DummyLogger", "ExperimentLogger", "Logger"]
