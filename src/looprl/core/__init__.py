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
    SampleBatch,
    Trainer,
    TrainerStepResult,
    deterministic_rows,
    register_policy,
    register_trainer,
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
    "SampleBatch",
    "TrainerStepResult",
    "register_policy",
    "register_trainer",
    "State",
    "StateArray",
    "Trainer",
    "deterministic_rows",
    "namedarray",
    "recursive_aggregate",
    "recursive_apply",
]
