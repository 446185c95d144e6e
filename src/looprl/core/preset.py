"""Presets: configured factories of training and test agents (seed 003)."""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import torch

from looprl.core.agent import Agent, ParallelAgent
from looprl.core.files import save_atomically
from looprl.core.suggest import text_hint


class Preset(ABC):
    """A configured algorithm on a configured environment; builds agents that share weights.
    ``env_spaces``: the environment's observation and action spaces; ``agent_spaces``: each
    agent's, with whether its states carry an action mask (both ``None``: unknown);
    ``env_remote``: what Ray actors make for it (text: why they cannot); ``meta``: the meta
    components attached to its experiments."""

    env_name: str | None = None
    env_spaces: tuple[Any, Any] | None = None
    agent_spaces: dict[str, tuple[Any, Any, bool]] | None = None
    env_remote: tuple[str, dict[str, Any]] | str | None = None
    meta: tuple[Any, ...] | list[Any] = ()

    def __init__(self, name: str, device: str | torch.device, hyperparameters: dict[str, Any]):
        self.name = name
        self.device = device
        self.hyperparameters = hyperparameters

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, device={str(self.device)!r})"

    @abstractmethod
    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Agent:
        """Build a training agent; ``train_steps`` is the budget schedules anneal over."""

    @abstractmethod
    def test_agent(self) -> Agent:
        """Build an evaluation agent from a copy of the current parameters."""

    def save(self, filename: str) -> None:
        """``torch.save`` the preset (configuration and weights) through ``save_atomically``."""
        save_atomically(self, filename)


class ParallelPreset(Preset):
    """A preset whose training agent is a ``ParallelAgent`` over ``n_envs`` environments."""

    #: rows of the segments it learns from
    n_steps: int = 1

    @property
    def n_envs(self) -> int:
        """Environments the training agent acts on (default ``hyperparameters['n_envs']``)."""
        n_envs = self.__dict__.get("_n_envs")
        if n_envs is None:
            n_envs = getattr(self, "hyperparameters", {}).get("n_envs", 1)
        return int(n_envs)

    @n_envs.setter
    def n_envs(self, value: int) -> None:
        self._n_envs = value

    @abstractmethod
    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> ParallelAgent:
        """Build a training agent acting on ``StateArray`` batches of ``n_envs`` rows."""

    @abstractmethod
    def parallel_test_agent(self) -> ParallelAgent:
        """Build an evaluation agent acting on ``StateArray`` batches."""


def check_built(preset: Any, owner: str, also: tuple[type, ...] = ()) -> None:
    """A one-line ``TypeError`` unless ``preset`` is a built ``Preset`` (or has ``agent()``,
    or is one of ``also``); a builder is told to build it."""
    if isinstance(preset, (Preset, *also)) or callable(getattr(preset, "agent", None)):
        return
    name = getattr(preset, "default_name", "preset")
    built = f": build it first ({name}.env(env).build())" if hasattr(preset, "build") else ""
    others = "".join(f" or an {kind.__name__}" for kind in also)  # (DistributedRun's spec)
    raise TypeError(f"{owner} takes a built Preset{others}, got a {type(preset).__name__}{built}")


def check_agent(agent: Any, owner: str) -> None:
    """A one-line ``TypeError`` unless ``agent`` has ``act(state)``; a preset (built or not) is
    told to give its ``test_agent()``."""
    if callable(getattr(agent, "act", None)):
        return
    if callable(getattr(agent, "test_agent", None)):
        hint = ": give its test agent, preset.test_agent()"
    elif hasattr(agent, "build"):
        name = getattr(agent, "default_name", "preset")
        hint = f": build the preset and give its test agent ({name}.env(env).build().test_agent())"
    else:
        hint = " (preset.test_agent(), or an object of your own with act(state))"
    raise TypeError(f"{owner} plays an agent, an object with act(state), got "
                    f"{type(agent).__name__}{hint}")


def check_train_steps(train_steps: Any, owner: str) -> None:
    """A one-line ``TypeError`` unless ``train_steps`` (the frames schedules anneal over) is a
    number, and a ``ValueError`` unless it is > 0."""
    if not isinstance(train_steps, numbers.Real) or isinstance(train_steps, bool | np.bool_):
        raise TypeError(f"{owner}: train_steps is a number of frames (math.inf: no budget), got "
                        f"{train_steps!r:.40}{text_hint(train_steps, 'float')}")
    if not train_steps > 0:  # (NaN too)
        raise ValueError(f"{owner}: train_steps, the frames its schedules anneal over, must be "
                         f"> 0 (math.inf: no budget), got {train_steps!r}")
