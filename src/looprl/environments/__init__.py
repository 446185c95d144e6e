"""Environments: Gymnasium wrappers producing ``State``/``StateArray`` objects."""

from looprl.environments.base import Environment, VectorEnvironment
from looprl.environments.gym import GymEnvironment, check_env_id
from looprl.environments.multiagent import (
    AgentView,
    MultiagentEnvironment,
    MultiagentPettingZooEnv,
)
from looprl.environments.vector import GymVectorEnvironment

__all__ = [
    "AgentView",
    "MultiagentEnvironment",
    "MultiagentPettingZooEnv",
    "Environment",
    "GymEnvironment",
    "GymVectorEnvironment",
    "VectorEnvironment",
    "check_env_id",
]
