"""PettingZoo environments as looprl ``MultiagentEnvironment`` objects.

PettingZoo (Terry et al., 2021, https://arxiv.org/abs/2009.14471) has two APIs: AEC
(agents act in turn) and parallel (all agents act at once). ``MultiagentPettingZooEnv``
wraps either -- parallel environments are converted with PettingZoo's ``parallel_to_aec``
-- and produces ``MultiagentState`` objects whose ``agent`` entry names whose turn it is,
so that one control loop serves both (seed 003)::

    env.reset()
    for agent in env.agent_iter():
        state = env.last()
        action = multiagent.act(state)
        env.step(None if state.done else action)   # done agents must step None

States follow the ``State`` convention (``done`` = terminated or truncated, ``mask`` = 0
only on termination); ``reward`` is the agent's reward accumulated since its last action.
Observations are converted to float32 tensors and, by default, flattened to one dimension
(``gymnasium.spaces.flatten``: ``Discrete`` becomes one-hot). Classic games, whose
observations are ``{'observation', 'action_mask'}`` dicts, give ``state['observation']``
the observation part and ``state['action_mask']`` a bool tensor of the legal actions.
"""

from __future__ import annotations

import copy
import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from looprl.core import MultiagentState
from looprl.environments.gym import action_to_numpy

FAMILIES = ("classic", "butterfly", "sisl", "atari")


class MultiagentEnvironment(ABC):
    """Several agents in one environment, producing ``MultiagentState`` objects."""

    name: str
    device: str | torch.device

    @abstractmethod
    def reset(self, seed: int | None = None) -> MultiagentState:
        """Start a new episode; return the state of the first agent to act."""

    @abstractmethod
    def step(self, action: Any) -> MultiagentState | None:
        """Apply the selected agent's ``action``; the next state (``None`` once all are done)."""

    @abstractmethod
    def last(self) -> MultiagentState:
        """The state of the agent whose turn it is."""

    @property
    def state(self) -> MultiagentState:
        """Alias of ``last()``."""
        return self.last()

    @abstractmethod
    def agent_iter(self, max_iter: int = 2**63) -> Iterator[str]:
        """Yield the selected agent until every agent is done."""

    @property
    @abstractmethod
    def agent_selection(self) -> str:
        """The agent whose turn it is."""

    @property
    @abstractmethod
    def agents(self) -> list[str]:
        """The agents still in the episode."""

    @property
    @abstractmethod
    def possible_agents(self) -> list[str]:
        """Every agent that may ever appear."""

    @abstractmethod
    def is_done(self, agent: str) -> bool:
        """Whether ``agent`` is terminated or truncated."""

    @property
    def done(self) -> bool:
        """Whether the episode is over (no agent left)."""
        return not self.agents

    @abstractmethod
    def observation_space(self, agent: str) -> gym.Space:
        """The observation space of ``agent`` as its states present it."""

    @abstractmethod
    def action_space(self, agent: str) -> gym.Space:
        """The action space of ``agent``."""

    def has_action_mask(self, agent: str) -> bool:
        """Whether ``agent``'s states carry an ``action_mask`` entry."""
        return False

    def subenv(self, agent: str) -> AgentView:
        """``agent``'s view of this environment: what a single-agent preset is built on."""
        return AgentView(self, agent)

    def render(self, **kwargs: Any) -> Any:
        """Render the environment (if it was created with a ``render_mode``)."""

    def close(self) -> None:
        """Release the environment's resources."""


class AgentView:
    """One agent's spaces of a ``MultiagentEnvironment``, shaped like an ``Environment``.

    Single-agent presets read ``name``, ``device``, ``observation_space`` and
    ``action_space`` from their environment; this view gives them those of one agent.
    """

    def __init__(self, env: MultiagentEnvironment, agent: str):
        self.multiagent_env = env
        self.agent = agent
        self.name = f"{env.name}/{agent}"
        self.device = env.device
        self.observation_space = env.observation_space(agent)
        self.action_space = env.action_space(agent)
        self.has_action_mask = env.has_action_mask(agent)

    @property
    def state_space(self) -> gym.Space:
        return self.observation_space


def make_zoo_env(name: str, **kwargs: Any) -> Any:
    """A PettingZoo AEC environment from a name like ``'tictactoe_v3'`` or ``'classic.rps_v2'``."""
    family, _, env_name = name.rpartition(".")
    families = (family,) if family else FAMILIES
    for candidate in families:
        try:
            module = importlib.import_module(f"pettingzoo.{candidate}.{env_name}")
        except ImportError:
            continue
        return module.env(**kwargs)
    raise ValueError(
        f"Unknown PettingZoo environment {name!r} (looked in pettingzoo.{{{','.join(families)}}}; "
        "the 'multiagent' extra installs pettingzoo)"
    )


def flat_box(space: gym.Space) -> gym.spaces.Box:
    """The float32 ``Box`` of ``space``'s observations flattened by ``flat_observation``."""
    flat = gym.spaces.flatten_space(space)
    return gym.spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32))


def flat_observation(space: gym.Space, obs: Any) -> np.ndarray:
    """``obs`` of ``space`` as one float32 vector (``gymnasium.spaces.flatten``: ``Discrete``
    becomes one-hot); the SRL PettingZoo adapter flattens the same way."""
    return np.asarray(gym.spaces.flatten(space, obs), dtype=np.float32)


class MultiagentPettingZooEnv(MultiagentEnvironment):
    """A PettingZoo AEC or parallel environment (see the module docstring).

    Args:
        zoo_env: a PettingZoo ``AECEnv`` or ``ParallelEnv``, or a name for ``make_zoo_env``.
        name: display name (defaults to the environment's ``metadata['name']``).
        device: where state tensors are put.
        seed: seed of the first reset.
        flatten: flatten observations to 1-d float32 (``False`` keeps their shape and dtype,
            e.g. for images).
        remote: what Ray actors play for it (``remote_env``): the name and arguments of
            ``looprl.environments.make``; default the SRL PettingZoo adapter of its module.
    """

    def __init__(
        self,
        zoo_env: Any,
        name: str | None = None,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        flatten: bool = True,
        remote: tuple[str, dict[str, Any]] | None = None,
    ):
        from pettingzoo.utils.conversions import parallel_to_aec
        from pettingzoo.utils.env import ParallelEnv

        if isinstance(zoo_env, str):
            name = name or zoo_env.rpartition(".")[2]
            zoo_env = make_zoo_env(zoo_env)
        if isinstance(zoo_env, ParallelEnv):
            zoo_env = parallel_to_aec(zoo_env)
        self._env = zoo_env
        self.name = name or zoo_env.metadata.get("name", type(zoo_env.unwrapped).__name__)
        self.device = device
        self.flatten = flatten
        self._seed = seed
        self._spaces = {agent: self._spaces_of(agent) for agent in zoo_env.possible_agents}
        self._remote = remote

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        """What Ray actors play for this environment: ``remote``, or the PettingZoo
        adapter of its module, observations flattened as here."""
        module = self._env.metadata.get("name", self.name)
        return self._remote or ("pettingzoo", {"env": module, "flatten": self.flatten})

    def _spaces_of(self, agent: str) -> tuple[gym.Space, bool, gym.Space]:
        """``(zoo observation space, has mask, space of state['observation'])``."""
        space = self._env.observation_space(agent)
        masked = isinstance(space, gym.spaces.Dict) and "action_mask" in space.spaces
        inner = space["observation"] if masked else space
        return space, masked, flat_box(inner) if self.flatten else inner

    @property
    def env(self) -> Any:
        """The wrapped PettingZoo AEC environment."""
        return self._env

    def reset(self, seed: int | None = None) -> MultiagentState:
        seed = seed if seed is not None else self._seed
        self._seed = None
        self._env.reset(seed=seed)
        return self.last()

    def step(self, action: Any) -> MultiagentState | None:
        if action is not None:
            action = action_to_numpy(action, self._env.action_space(self.agent_selection))
        self._env.step(action)
        return self.last() if self._env.agents else None

    def last(self) -> MultiagentState:
        agent = self._env.agent_selection
        obs, reward, terminated, truncated, info = self._env.last()
        space, masked, _ = self._spaces[agent]
        mask = None
        if masked:
            obs, mask = obs["observation"], obs["action_mask"]
        observation = self._observation(obs, space["observation"] if masked else space)
        state = MultiagentState.from_zoo(
            agent, (observation, reward, terminated, truncated, info), device=self.device
        )
        if masked:
            state["action_mask"] = torch.as_tensor(np.asarray(mask, dtype=bool), device=self.device)
        return state

    def _observation(self, obs: Any, space: gym.Space) -> np.ndarray:
        if not self.flatten:
            return np.asarray(obs)
        return flat_observation(space, obs)

    def agent_iter(self, max_iter: int = 2**63) -> Iterator[str]:
        return self._env.agent_iter(max_iter)

    @property
    def agent_selection(self) -> str:
        return self._env.agent_selection

    @property
    def agents(self) -> list[str]:
        return list(self._env.agents)

    @property
    def possible_agents(self) -> list[str]:
        return list(self._env.possible_agents)

    def is_done(self, agent: str) -> bool:
        return bool(self._env.terminations[agent] or self._env.truncations[agent])

    def observation_space(self, agent: str) -> gym.Space:
        return self._spaces[agent][2]

    def action_space(self, agent: str) -> gym.Space:
        return self._env.action_space(agent)

    def has_action_mask(self, agent: str) -> bool:
        return self._spaces[agent][1]

    def render(self, **kwargs: Any) -> Any:
        return self._env.render()

    def close(self) -> None:
        self._env.close()

    def duplicate(self, n: int) -> list[MultiagentPettingZooEnv]:
        """``n`` independent copies of this environment (deep copies)."""
        return [
            MultiagentPettingZooEnv(
                copy.deepcopy(self._env), self.name, self.device, flatten=self.flatten,
                remote=self._remote,
            )
            for _ in range(n)
        ]
