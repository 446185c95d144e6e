"""Environment interfaces: one environment (``Environment``) and a batch (``VectorEnvironment``).

Both keep the current ``state`` as a property so that a control loop reads::

    env.reset()
    while True:
        action = agent.act(env.state)
        env.step(action)
        if env.done:
            agent.act(env.state)   # terminal update
            env.reset()

Episode ends follow the ``State`` convention: ``done`` is terminated *or* truncated and
``mask`` is 0 only on termination, so time-limit truncation bootstraps correctly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch

from looprl.core import State, StateArray


class Environment(ABC):
    """A single environment producing torch ``State`` objects."""

    name: str
    device: str | torch.device

    @abstractmethod
    def reset(self) -> State:
        """Start a new episode and return its first state."""

    @abstractmethod
    def step(self, action: Any) -> State:
        """Apply ``action`` (a tensor or python number) and return the next state."""

    @property
    @abstractmethod
    def state(self) -> State:
        """The current state."""

    @property
    def done(self) -> bool:
        """Whether the current episode has ended (terminated or truncated)."""
        return bool(self.state.done)

    @property
    @abstractmethod
    def observation_space(self) -> Any:
        """The Gymnasium observation space of one environment."""

    @property
    @abstractmethod
    def action_space(self) -> Any:
        """The Gymnasium action space of one environment."""

    @property
    def state_space(self) -> Any:
        """Alias of ``observation_space`` (the autonomous-learning-library's name)."""
        return self.observation_space

    def render(self, **kwargs: Any) -> Any:
        """Render the environment (if it was created with a ``render_mode``)."""

    def close(self) -> None:
        """Release the environment's resources."""

    @abstractmethod
    def duplicate(self, n: int) -> VectorEnvironment:
        """A vector environment of ``n`` independent copies of this environment."""


class VectorEnvironment(ABC):
    """``n_envs`` environments stepped together, producing ``StateArray`` batches.

    Sub-environments reset automatically on the step *after* they report ``done``
    (Gymnasium's next-step autoreset): the action sent to a ``done`` row is ignored and
    the row comes back as the first state of a new episode with reward 0. Agents treat the
    transition out of a ``done`` state as invalid.
    """

    name: str
    device: str | torch.device
    n_envs: int

    @abstractmethod
    def reset(self) -> StateArray:
        """Reset every sub-environment."""

    @abstractmethod
    def step(self, action: Any) -> StateArray:
        """Step every sub-environment with one action per row."""

    @property
    @abstractmethod
    def state_array(self) -> StateArray:
        """The current batch of states."""

    @property
    def state(self) -> StateArray:
        """Alias of ``state_array``."""
        return self.state_array

    @property
    @abstractmethod
    def observation_space(self) -> Any:
        """The observation space of one sub-environment."""

    @property
    @abstractmethod
    def action_space(self) -> Any:
        """The action space of one sub-environment."""

    @property
    def state_space(self) -> Any:
        return self.observation_space

    def copy(self) -> VectorEnvironment:
        """A new, independent vector environment of the same kind and size.

        Evaluation runs in a copy so that the training episodes continue undisturbed.
        Subclasses that cannot be rebuilt from their arguments raise
        ``NotImplementedError`` (the default).
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement copy()")

    def close(self) -> None:
        """Release the environments' resources."""
