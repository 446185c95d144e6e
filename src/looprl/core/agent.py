"""The agents' interfaces (seed 003): ``act(state) -> action``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from looprl.core.hyperparameter import Hyperparameter


class AgentBase:
    """What the agents declare besides ``act``."""

    #: The buffer the agent learns from, ``metrics['buffer']`` of meta components.
    buffer: Any = None

    @property
    def unwrapped(self) -> Any:
        """The agent that holds the policy and trainer (inside wrappers)."""
        return self

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The ``hp/*`` keys this agent can change while training."""
        return {}


class AgentWrapper(AgentBase):
    """Base of the agents that wrap another (bodies, adapters)."""

    def __init__(self, agent: Any):
        self.agent = agent

    @property
    def unwrapped(self) -> Any:
        return self.agent.unwrapped

    @property
    def buffer(self) -> Any:  # type: ignore[override]
        return self.agent.buffer

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        return self.agent.hyperparameters()


class Agent(AgentBase, ABC):
    """Accepts a ``State`` and returns an action."""

    @abstractmethod
    def act(self, state: Any) -> Any:
        """Select an action for ``state``; train if the agent's schedule says so."""


class ParallelAgent(AgentBase, ABC):
    """Accepts a ``StateArray`` (one row per environment) and returns a batch of actions."""

    @abstractmethod
    def act(self, state_array: Any) -> Any:
        """Select one action per row of ``state_array``; train if the schedule says so."""


class Multiagent(AgentBase, ABC):
    """Accepts a ``MultiagentState`` whose ``agent`` key says whose turn it is."""

    @abstractmethod
    def act(self, multiagent_state: Any) -> Any:
        """Select an action for the agent named by ``multiagent_state['agent']``."""
