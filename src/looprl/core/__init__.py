"""Core data structures and interfaces (the bottom layer of looprl)."""

from looprl.core.interfaces import (
    Agent,
    Multiagent,
    ParallelAgent,
    ParallelPreset,
    Policy,
    Preset,
    RolloutRequest,
    RolloutResult,
    Trainer,
    deterministic_rows,
)
from looprl.core.logger import DummyLogger, Logger
from looprl.core.namedarray import NamedArray, namedarray, recursive_aggregate, recursive_apply
from looprl.core.state import MultiagentState, State, StateArray

__all__ = [
    "Agent",
    "DummyLogger",
    "Logger",
    "Multiagent",
    "NamedArray",
    "MultiagentState",
    "ParallelAgent",
    "ParallelPreset",
    "Policy",
    "Preset",
    "RolloutRequest",
    "RolloutResult",
    "State",
    "StateArray",
    "Trainer",
    "deterministic_rows",
    "namedarray",
    "recursive_aggregate",
    "recursive_apply",
]
