"""Environment interfaces (seed 003): one environment (``Environment``) and a batch
(``VectorEnvironment``), each keeping its current ``state``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from operator import attrgetter
from typing import Any

import numpy as np
import torch
from gymnasium.utils import EzPickle

from looprl.core import StateArray
from looprl.core.suggest import check_seed

#: Seeds looprl derives from a run's wrap below it, which every environment (ale-py's) takes.
SEED_SPAN = 2**31 - 2**16


def wrapped_seed(seed: int) -> int:
    """``seed`` (a run's seed plus an offset) wrapped below ``SEED_SPAN``."""
    return seed % SEED_SPAN


def forwarded(path: str, doc: str | None = None) -> property:
    """A read-only property of the attribute at ``path`` (``"env.action_space"``)."""
    return property(attrgetter(path), doc=doc or f"``self.{path}``.")


class Restorable:
    """A checkpointed environment's ``needs_reset`` (its episode lost) and reset seeds."""

    #: ``reset`` must come before the next ``step`` (restored from a checkpoint)
    needs_reset: bool = False
    name: str
    _seed: int | None = None  # of the next reset only
    given_seed: int | None = None  # the latest given (of the constructor or ``seed``): copies'

    def seed(self, seed: int) -> None:
        """Seed the next ``reset`` and the copies ``duplicate`` makes (ALL's ``env.seed(s)``)."""
        self._seed = self.given_seed = check_seed(self.name, seed, optional=False)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled environment (one pickled as its arguments: ``needs_reset``)."""
        if "seed" in state:  # (pickled when the seed given was the attribute ``seed``)
            state["given_seed"] = state.pop("seed")
        self.__dict__.update(state)
        for inner in (state.get("env"), state.get("looprl")):  # (gym's, a vector's, looprl's)
            made = getattr(inner, "envs", [inner])
            if getattr(inner, "needs_reset", False) or any(
                    isinstance(getattr(env, "unwrapped", None), EzPickle) for env in made):
                self.needs_reset = True

    def _next_seed(self, seed: Any = None) -> int | None:
        """The seed of this reset: ``seed`` (checked), else the one ``seed()`` gave (used up)."""
        seed, self._seed = check_seed(self.name, self._seed if seed is None else seed), None
        return seed

    def _reset_seed(self, seed: Any = None) -> int | None:
        """``_next_seed``, else after a restore one from NumPy's (checkpointed) generator."""
        seed = self._next_seed(seed)
        if seed is None and self.needs_reset:
            seed = int(np.random.randint(SEED_SPAN))
        self.needs_reset = False
        return seed


class _Spaces(Restorable, ABC):
    """What ``Environment`` and ``VectorEnvironment`` share."""

    device: str | torch.device
    _state: Any = None

    def __repr__(self) -> str:
        copies = getattr(self, "n_envs", None)
        return (f"{type(self).__name__}({getattr(self, 'name', '?')!r}"
                f"{'' if copies is None else f', n_envs={copies}'})")

    @abstractmethod
    def reset(self) -> Any:
        """Start a new episode (of every sub-environment) and return the ``state``."""

    @abstractmethod
    def step(self, action: Any) -> Any:
        """Apply ``action`` (one row per sub-environment) and return the next ``state``."""

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

    @property
    def done(self) -> bool:
        """Whether the current episode has ended (terminated or truncated)."""
        return bool(self.state.done)

    @property
    def reward(self) -> Any:
        """The reward of the last step (0 after a reset): the current ``state.reward``."""
        return self.state.reward

    def render(self, **kwargs: Any) -> Any:
        """Render the environment (if it was created with a ``render_mode``)."""

    @abstractmethod
    def duplicate(self, n: int) -> VectorEnvironment:
        """A vector environment of ``n`` independent copies of this environment."""

    def remote_env(self) -> tuple[str, dict[str, Any]] | str:
        """The ``make`` name and arguments Ray actors play (text: why they cannot make it)."""
        return self.name, {}

    def remade(self) -> Environment:
        """A new environment made as this one was (a run rebuilds a copy that raised with it);
        ``NotImplementedError`` saying why where it cannot be made again."""
        raise NotImplementedError(f"{type(self).__name__} does not implement remade()")


class VectorEnvironment(_Spaces):
    """``n_envs`` environments stepped together into ``StateArray`` batches, with next-step
    autoreset: a ``done`` row ignores its action and comes back as a new episode's first state."""

    n_envs: int
    _arrays: tuple[Any, ...] | None = None  # the last step's, ``state`` made from them when read

    @property
    def state(self) -> StateArray:
        if self._state is None and self._arrays is not None:
            self._state = self._make_state(*self._arrays)
        return super().state

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

    def remade(self) -> VectorEnvironment:
        """New copies made as these were, not copies of their state (a run rebuilds them with
        it after an exception); ``NotImplementedError`` saying why where they cannot be."""
        raise NotImplementedError(f"{type(self).__name__} does not implement remade()")
