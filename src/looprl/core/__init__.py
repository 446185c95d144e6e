"""Core data structures and interfaces (the bottom layer of looprl), by module:

* ``namedarray`` -- ``NamedArray`` (+ ``@namedarray``), nested arrays with named fields.
* ``state`` -- ``State``, ``StateArray``, ``MultiagentState``: what environments return.
* ``agent`` -- ``Agent`` / ``ParallelAgent`` / ``Multiagent``: ``act(state) -> action``
  (seed 003); ``AgentBase``, ``AgentWrapper``.
* ``algorithm`` -- ``Policy`` (``rollout``, ``analyze``) and ``Trainer`` (``step``) (seed
  004), built by name through ``register_policy`` / ``register_trainer``.
* ``batches`` -- ``RolloutRequest``, ``RolloutResult``, ``SampleBatch``, ``TrainerStepResult``.
* ``preset`` -- ``Preset`` / ``ParallelPreset``: configured factories of agents.
* ``hyperparameter`` -- ``Hyperparameter``: the ``hp/*`` keys a part declares.
* ``logger`` -- ``Logger``, ``DummyLogger``.
* helpers: ``imports`` (objects by import path), ``files`` (loading looprl's files),
  ``suggest`` (one-line errors with close matches).
"""

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
from looprl.core.namedarray import NamedArray, namedarray, recursive_aggregate, recursive_apply
from looprl.core.preset import ParallelPreset, Preset
from looprl.core.state import MultiagentState, State, StateArray

__all__ = ["Agent", "DummyLogger", "Hyperparameter", "AgentBase", "AgentWrapper", "Logger",
           "Multiagent", "NamedArray", "MultiagentState", "ParallelAgent", "ParallelPreset",
           "Policy", "Preset", "RolloutRequest", "RolloutResult", "SampleBatch",
           "TrainerStepResult", "register_policy", "register_trainer", "State", "StateArray",
           "Trainer", "deterministic_rows", "parts_hyperparameters", "merge_hyperparameters",
           "namedarray", "recursive_aggregate", "recursive_apply"]
