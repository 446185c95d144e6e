"""Environment interfaces (seed 003): one environment (``Environment``) and a batch
(``VectorEnvironment``), each keeping its current ``state``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch

from looprl.core import State, StateArray


class _Spaces(ABC):
    """What ``Environment`` and ``VectorEnvironment`` share."""

    name: str
    device: str | torch.device
    #: ``reset`` must come before the next ``step`` (restored from a checkpoint: Atari).
    needs_reset: bool = False
    _state: Any = None

    @property
    @abstractmethod
    def observation_space(self) -> Any:
        """The Gymnasium observation space of one (sub-)environment."""

    @property
    @abstractmethod
    def action_space(self) -> Any:
        """The Gymnasium action space of one (sub-)environment."""

    @property
    def state_space(self) -> Any:
        """Alias of ``observation_space`` (the autonomous-learning-library's name)."""
        return self.observation_space

    def close(self) -> None:
        """Release the environment's resources."""

    def prepare_checkpoint(self, frame: int) -> None:
        """Called before a checkpoint at ``frame`` is saved (Atari fixes its next reset seed)."""

    @property
    def state(self) -> Any:
        """The current ``State`` (``StateArray`` of a vector environment)."""
        if self._state is None:
            raise RuntimeError(f"Call reset() on {self.name} before reading its state")
        return self._state


class Environment(_Spaces):
    """A single environment producing torch ``State`` objects."""

    @abstractmethod
    def reset(self) -> State:
        """Start a new episode and return its first state."""

    @abstractmethod
    def step(self, action: Any) -> State:
        """Apply ``action`` (a tensor or python number) and return the next state."""

    @property
    def done(self) -> bool:
        """Whether the current episode has ended (terminated or truncated)."""
        return bool(self.state.done)

    def render(self, **kwargs: Any) -> Any:
        """Render the environment (if it was created with a ``render_mode``)."""

    @abstractmethod
    def duplicate(self, n: int) -> VectorEnvironment:
        """A vector environment of ``n`` independent copies of this environment."""

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        """The name and arguments of ``looprl.environments.make`` that Ray actors play."""
        return self.name, {}


class VectorEnvironment(_Spaces):
    """``n_envs`` environments stepped together, producing ``StateArray`` batches, with
    next-step autoreset: the action sent to a ``done`` row is ignored and the row comes back
    as the first state of a new episode with reward 0."""

    n_envs: int

    @abstractmethod
    def reset(self) -> StateArray:
        """Reset every sub-environment."""

    @abstractmethod
    def step(self, action: Any) -> StateArray:
        """Step every sub-environment with one action per row."""

    @property
    def state_array(self) -> StateArray:
        """Alias of ``state``."""
        return self.state

    @property
    def num_envs(self) -> int:
        """Alias of ``n_envs`` (the autonomous-learning-library's name)."""
        return self.n_envs

    def copy(self) -> VectorEnvironment:
        """A new, independent vector environment of the same kind and size (for evaluation)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement copy()")
