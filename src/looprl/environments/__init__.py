"""Environments: seed 003's (``Environment``, ``VectorEnvironment``, ``MultiagentEnvironment``)
and seed 004's SRL API (``SRLEnvironment``, ``make``); outside libraries called from one place."""

from looprl.environments import bodies
from looprl.environments.ale import atari_games
from looprl.environments.atari import AtariEnvironment, AtariVectorEnvironment
from looprl.environments.base import Environment, VectorEnvironment
from looprl.environments.bodies import *  # noqa: F403  (the names of bodies.__all__)
from looprl.environments.contextual import (
    ContextualEnv,
    ContextualEnvironment,
    contextual_envs,
    sample_contexts,
)
from looprl.environments.deepsea import DeepSea
from looprl.environments.duplicate import DuplicateEnvironment
from looprl.environments.faults import EnvironmentFailure, PolicyActionError
from looprl.environments.gym import GymEnvironment
from looprl.environments.gym_helpers import check_env_id
from looprl.environments.mujoco import MujocoEnvironment
from looprl.environments.multiagent import (
    AgentView,
    MultiagentAtariEnv,
    MultiagentEnvironment,
    MultiagentPettingZooEnv,
)
from looprl.environments.srl import Environment as SRLEnvironment
from looprl.environments.srl import StepResult, make, register, registered_environments, step_result
from looprl.environments.srl_adapters import (
    AtariGameEnvironment,
    GymnasiumEnvironment,
    PettingZooEnvironment,
)
from looprl.environments.vector import GymVectorEnvironment

__all__ = [
    "ContextualEnv", "ContextualEnvironment", "contextual_envs", "DeepSea", "DuplicateEnvironment",
    "sample_contexts", "AtariEnvironment", "AtariVectorEnvironment", "atari_games", "AgentView",
    "MujocoEnvironment", "MultiagentAtariEnv", "MultiagentEnvironment", "MultiagentPettingZooEnv",
    "Environment", "GymEnvironment", "GymVectorEnvironment", "VectorEnvironment", "check_env_id",
    "SRLEnvironment", "AtariGameEnvironment", "GymnasiumEnvironment", "PettingZooEnvironment",
    "StepResult", "make", "register", "registered_environments", "step_result",
    "EnvironmentFailure", "PolicyActionError", *bodies.__all__,
]
