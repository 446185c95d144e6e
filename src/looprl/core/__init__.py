"""Core data structures and interfaces: the bottom layer of looprl."""

from looprl.core import namedarray  # (the module, callable as its @namedarray decorator)
from looprl.core.agent import Agent, AgentBase, AgentWrapper, Multiagent, ParallelAgent
from looprl.core.algorithm import (
    Policy,
    Trainer,
    parts_hyperparameters,
    register_policy,
    register_trainer,
)
from looprl.core.batches import (
    RolloutRequest,
    RolloutResult,
    SampleBatch,
    TrainerStepResult,
    deterministic_rows,
)
from looprl.core.hyperparameter import Hyperparameter, merge_hyperparameters
from looprl.core.logger import DummyLogger, Logger
from looprl.core.namedarray import NamedArray, recursive_aggregate, recursive_apply
from looprl.core.preset import ParallelPreset, Preset
from looprl.core.state import MultiagentState, State, StateArray

__all__ = ["Agent", "DummyLogger", "Hyperparameter", "AgentBase", "AgentWrapper", "Logger",
           "Multiagent", "NamedArray", "MultiagentState", "ParallelAgent", "ParallelPreset",
           "Policy", "Preset", "RolloutRequest", "RolloutResult", "SampleBatch",
           "TrainerStepResult", "register_policy", "register_trainer", "State", "StateArray",
           "Trainer", "deterministic_rows", "parts_hyperparameters", "merge_hyperparameters",
           "namedarray", "recursive_aggregate", "recursive_apply"]
