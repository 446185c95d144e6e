"""PettingZoo (https://arxiv.org/abs/2009.14471) AEC or parallel environments as seed 003's
``MultiagentEnvironment``: ``MultiagentState`` objects whose ``agent`` entry names whose turn
it is, one control loop for both::

    env.reset()
    for agent in env.agent_iter():
        state = env.last()
        action = multiagent.act(state)
        env.step(None if state.done else action)   # done agents must step None

``reward`` is the agent's reward since its last action. Observations are by default
flattened to float32 (``Discrete``: one-hot); ``state['action_mask']`` is a bool tensor where
the game has one. ``make_zoo_env`` and ``zoo_observation`` serve the SRL adapter too."""

from __future__ import annotations

import copy
import importlib
import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from looprl.core import MultiagentState
from looprl.environments.gym_helpers import action_to_numpy

MASK = "action_mask"

#: PettingZoo's families, searched for a name given without one (``"tictactoe_v3"``).
FAMILIES = ("classic", "butterfly", "sisl", "mpe", "atari")


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
    """One agent's ``name``, ``device`` and spaces of a ``MultiagentEnvironment``, as
    single-agent presets read an ``Environment``'s."""

    def __init__(self, env: MultiagentEnvironment, agent: str):
        self.agent = agent
        self.name = f"{env.name}/{agent}"
        self.device = env.device
        self.observation_space = env.observation_space(agent)
        self.action_space = env.action_space(agent)
        self.has_action_mask = env.has_action_mask(agent)

    @property
    def state_space(self) -> gym.Space:
        return self.observation_space


def make_zoo_env(name: str, parallel: bool = False, **kwargs: Any) -> Any:
    """A PettingZoo environment from a module path: ``"pettingzoo.classic.tictactoe_v3"`` (its
    ``env()``, or ``parallel_env()`` with ``parallel``, called with ``kwargs``),
    ``"classic.tictactoe_v3"``, ``"tictactoe_v3"``, or any ``"package.module:factory"``;
    ``ValueError`` if there is none, ``ImportError`` if the module fails to import."""
    module_name, _, factory = name.partition(":")
    factory = factory or ("parallel_env" if parallel else "env")
    derived = [] if module_name.startswith("pettingzoo.") else [f"pettingzoo.{module_name}"]
    if "." not in module_name:
        derived += [f"pettingzoo.{family}.{module_name}" for family in FAMILIES]
    module = _import_module(name, module_name, must_exist=False)
    for candidate in derived:
        module = module or _import_module(name, candidate, must_exist=True)
    if module is None:
        tried = ", ".join(repr(c) for c in [module_name, *derived])
        raise ValueError(f"Unknown PettingZoo environment {name!r} (tried {tried}; the "
                         "'multiagent' extra installs pettingzoo)")
    if not callable(getattr(module, factory, None)):
        raise ValueError(f"PettingZoo module {module.__name__!r} has no {factory}() to call")
    return getattr(module, factory)(**kwargs)


def _import_module(env: str, name: str, must_exist: bool) -> Any:
    """The module ``name``, ``None`` if there is none (with ``must_exist``, also if its
    package cannot be searched), ``ImportError`` if it fails to import."""
    if must_exist:
        try:
            if importlib.util.find_spec(name) is None:
                return None
        except (ImportError, ValueError):
            return None
    try:
        return importlib.import_module(name)
    except ImportError as error:
        missing = error.name if isinstance(error, ModuleNotFoundError) else None
        if missing and (name == missing or name.startswith(missing + ".")):
            return None  # the module itself does not exist
        raise ImportError(f"cannot import the PettingZoo environment {env!r}: {error}") from error


def observation_part(space: gym.Space) -> tuple[gym.Space, bool]:
    """The observation part of a PettingZoo ``{"observation", "action_mask"}`` space (else
    ``space``) and whether ``space`` has an action mask."""
    masked = isinstance(space, gym.spaces.Dict) and {MASK, "observation"} <= set(space.spaces)
    return (space["observation"] if masked else space), masked


def flat_box(space: gym.Space) -> gym.spaces.Box:
    """The float32 ``Box`` of ``space``'s observations flattened by ``zoo_observation``."""
    flat = gym.spaces.flatten_space(space)
    return gym.spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32))


def zoo_observation(space: gym.Space, obs: Any, flatten: bool) -> tuple[np.ndarray, Any]:
    """``obs`` of a PettingZoo ``space`` as ``(observation, bool action mask or None)``, the
    observation flattened to one float32 vector with ``flatten``."""
    inner, masked = observation_part(space)
    mask = np.asarray(obs[MASK], dtype=bool) if masked else None
    obs = obs["observation"] if masked else obs
    if flatten:
        return np.asarray(gym.spaces.flatten(inner, obs), dtype=np.float32), mask
    return np.asarray(obs), mask


class MultiagentPettingZooEnv(MultiagentEnvironment):
    """A PettingZoo AEC or parallel environment, or a name for ``make_zoo_env`` (``env``: the
    wrapped AEC environment); ``flatten``: observations to 1-d float32; ``remote``: the name
    and arguments of ``looprl.environments.make`` that the collector and Ray play (default:
    the PettingZoo adapter of a copy of the environment given, or of its name)."""

    _given_name: str | None = None  # (environments pickled before it was kept: the game)

    def __init__(self, zoo_env: Any, name: str | None = None, device: str | torch.device = "cpu",
                 seed: int | None = None, flatten: bool = True,
                 remote: tuple[str, dict[str, Any]] | None = None):
        from pettingzoo.utils.conversions import parallel_to_aec
        from pettingzoo.utils.env import ParallelEnv

        self._given_name = zoo_env if isinstance(zoo_env, str) else None
        if self._given_name is not None:
            name = name or zoo_env.rpartition(".")[2]
            zoo_env = make_zoo_env(zoo_env)
        if isinstance(zoo_env, ParallelEnv):
            zoo_env = parallel_to_aec(zoo_env)
        self.env = zoo_env
        self.name = name or zoo_env.metadata.get("name", type(zoo_env.unwrapped).__name__)
        self.device = device
        self.flatten = flatten
        self._seed = seed
        self._spaces = {a: zoo_env.observation_space(a) for a in zoo_env.possible_agents}
        self.remote = remote

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        """``remote``, else the PettingZoo adapter (observations flattened alike) of the name
        it was made from, or of the environment it was given: its module's name would lose the
        arguments it was built with (``collector.copies.made`` gives each env copy its own)."""
        if self.remote is not None:
            return self.remote
        env = self.env if self._given_name is None else self._given_name
        return "pettingzoo", {"env": env, "flatten": self.flatten}

    def reset(self, seed: int | None = None) -> MultiagentState:
        seed, self._seed = (self._seed if seed is None else seed), None
        self.env.reset(seed=seed)
        return self.last()

    def step(self, action: Any) -> MultiagentState | None:
        if action is not None:
            action = action_to_numpy(action, self.env.action_space(self.agent_selection))
        self.env.step(action)
        return self.last() if self.env.agents else None

    def last(self) -> MultiagentState:
        agent = self.env.agent_selection
        obs, reward, terminated, truncated, info = self.env.last()
        observation, mask = zoo_observation(self._spaces[agent], obs, self.flatten)
        state = MultiagentState.from_zoo(agent, (observation, reward, terminated, truncated, info),
                                         device=self.device)
        if mask is not None:
            state[MASK] = torch.as_tensor(mask, device=self.device)
        return state

    def agent_iter(self, max_iter: int = 2**63) -> Iterator[str]:
        return self.env.agent_iter(max_iter)

    @property
    def agent_selection(self) -> str:
        return self.env.agent_selection

    @property
    def agents(self) -> list[str]:
        return list(self.env.agents)

    @property
    def possible_agents(self) -> list[str]:
        return list(self.env.possible_agents)

    def is_done(self, agent: str) -> bool:
        return bool(self.env.terminations[agent] or self.env.truncations[agent])

    def observation_space(self, agent: str) -> gym.Space:
        inner, _ = observation_part(self._spaces[agent])
        return flat_box(inner) if self.flatten else inner

    def action_space(self, agent: str) -> gym.Space:
        return self.env.action_space(agent)

    def has_action_mask(self, agent: str) -> bool:
        return observation_part(self._spaces[agent])[1]

    def render(self, **kwargs: Any) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def duplicate(self, n: int) -> list[MultiagentPettingZooEnv]:
        """``n`` independent copies of this environment (deep copies)."""
        return [MultiagentPettingZooEnv(copy.deepcopy(self.env), self.name, self.device,
                                        flatten=self.flatten, remote=self.remote)
                for _ in range(n)]
