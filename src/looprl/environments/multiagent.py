"""Seed 003's multi-agent environments: ``MultiagentEnvironment`` produces ``MultiagentState``
objects whose ``agent`` entry names whose turn it is, one loop for PettingZoo's AEC and parallel
games and SRL environments alike::

    env.reset()
    for agent in env.agent_iter():
        state = env.last()
        env.step(None if state.done else multiagent.act(state))   # done agents step None

``reward`` is the agent's reward since its last action; a game's observations are flattened to
float32 by default; ``state['action_mask']`` is a bool tensor where the environment has one."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import gymnasium as gym
import torch

from looprl.core import MultiagentState
from looprl.core.suggest import check_device, check_seed, did_you_mean
from looprl.environments.gym_helpers import action_to_numpy, episode_cap, module_exists
from looprl.environments.srl import (
    Environment,
    StepResult,
    action_value,
    agent_count,
    checked_results,
    result_scalars,
    spaces_of,
)
from looprl.environments.srl_adapters import (
    MASK,
    PettingZooEnvironment,
    check_agent_action,
    make_zoo_env,
)


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

    def state_space(self, agent: str) -> gym.Space:
        """Alias of ``observation_space(agent)`` (ALL's name)."""
        return self.observation_space(agent)

    @abstractmethod
    def action_space(self, agent: str) -> gym.Space:
        """The action space of ``agent``."""

    def has_action_mask(self, agent: str) -> bool:
        """Whether ``agent``'s states carry an ``action_mask`` entry."""
        return False

    def subenv(self, agent: str) -> AgentView:
        """``agent``'s view of this environment: what a single-agent preset is built on."""
        return AgentView(self, agent)

    @property
    def subenvs(self) -> dict[str, AgentView]:
        """Every agent's ``subenv``, by name (ALL's ``env.subenvs[agent]``)."""
        return {agent: self.subenv(agent) for agent in self.possible_agents}

    def render(self, **kwargs: Any) -> Any:
        """Render the environment (if it was created with a ``render_mode``)."""

    def close(self) -> None:
        """Release the environment's resources."""


class AgentView:
    """One agent's ``name``, ``device`` and spaces, as single-agent presets read them."""

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


class MultiagentPettingZooEnv(MultiagentEnvironment):
    """Seed 003's turn-by-turn view of an SRL environment (``adapter``): a PettingZoo game (AEC,
    or parallel played as AEC; or its name for ``make_zoo_env``) through its
    ``PettingZooEnvironment``, or an SRL ``Environment`` (agents ``agent_0``, ...). ``flatten``:
    observations to 1-d float32; ``remote``: the ``make`` name and arguments Ray plays.
    The agents of a ``StepResult`` take their turns in order; the adapter steps when all acted."""

    def __init__(self, zoo_env: Any, name: str | None = None, device: str | torch.device = "cpu",
                 seed: int | None = None, flatten: bool = True,
                 remote: tuple[str, dict[str, Any]] | None = None,
                 render_mode: str | None = None):
        check_device(device)
        self._given_name = zoo_env if isinstance(zoo_env, str) else None
        if self._given_name is not None:
            name = name or zoo_env.rpartition(".")[2]
            zoo_env = make_zoo_env(zoo_env, **({} if render_mode is None else
                                               {"render_mode": render_mode}))
        if isinstance(zoo_env, Environment):
            self.adapter = self.env = zoo_env
        else:  # (a parallel game played as AEC)
            from pettingzoo.utils.conversions import parallel_to_aec
            from pettingzoo.utils.env import ParallelEnv

            self.env = parallel_to_aec(zoo_env) if isinstance(zoo_env, ParallelEnv) else zoo_env
            self.adapter = PettingZooEnvironment(self.env, flatten=flatten)
        self.name = name or getattr(self.env, "metadata", {}).get(
            "name", type(getattr(self.env, "unwrapped", self.env)).__name__)
        self._seed = check_seed(self.name, seed)
        self.device, self.flatten, self.remote = device, flatten, remote
        self._names: list[str] = getattr(self.adapter, "agent_names", None) or [
            f"agent_{i}" for i in range(agent_count(self.adapter))]
        self._index = {agent: i for i, agent in enumerate(self._names)}
        try:
            spaces = (spaces_of(self.adapter, "observation_spaces"),
                      spaces_of(self.adapter, "action_spaces"))
        except NotImplementedError as error:
            raise ValueError(f"{self.name}: to play it locally, {error}") from None
        self._spaces, self._actions = (dict(zip(self._names, s, strict=True)) for s in spaces)
        self._new_episode()

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        """``remote``, else the PettingZoo adapter (flattened alike) of the name or game given."""
        if self.remote is not None:
            return self.remote
        if self.adapter is self.env:
            raise ValueError(f"{self.name} is an SRL environment: give MultiagentPettingZooEnv "
                             "remote=(its registered name, its arguments) to train it")
        env = self.env if self._given_name is None else self._given_name
        return "pettingzoo", {"env": env, "flatten": self.flatten}

    def _new_episode(self) -> None:
        self._turns: list[tuple[str, StepResult]] = []  # who acts next, with its result
        self._last: dict[str, StepResult] = {}  # each agent's latest result
        self._out: set[str] = set()  # agents done and stepped
        self._chosen: dict[int, Any] = {}  # the actions of this round so far, by agent

    def _receive(self, results: Any, call: str) -> None:
        """The agents with a result (but one done and stepped) take the next turns, in order."""
        results = checked_results(results, self.adapter, call)
        zoo = isinstance(self.adapter, PettingZooEnvironment)
        order = self.adapter.turns if zoo else range(len(results))
        self._turns = [(self._names[i], results[i]) for i in order if results[i] is not None
                       and not (self._names[i] in self._out and _over(results[i]))]
        self._last.update(self._turns)

    def seed(self, seed: int) -> None:
        """Seed the next ``reset`` (ALL's ``env.seed(s)``)."""
        self._seed = check_seed(self.name, seed, optional=False)

    def reset(self, seed: int | None = None) -> MultiagentState:
        seed, self._seed = check_seed(self.name, self._seed if seed is None else seed), None
        if seed is not None:
            with suppress(NotImplementedError):  # (an environment without randomness)
                self.adapter.seed(seed)
        self._new_episode()
        self._receive(self.adapter.reset(), "reset")
        return self.last()

    def step(self, action: Any) -> MultiagentState | None:
        agent, result = self._turn()
        if _over(result) and action is not None:
            raise ValueError(f"{agent} is done: the only action it takes is None")
        if not _over(result) and self.adapter is not self.env:  # (a game's: as it converts)
            space = self._actions[agent]  # (the game's assertion would come after its turn)
            check_agent_action(self.name, agent, action_to_numpy(action_value(action), space),
                               space)
        self._turns.pop(0)
        if _over(result):
            self._out.add(agent)
        else:
            self._chosen[self._index[agent]] = action
        if not self._turns and (self._chosen or not all(map(_over, self._last.values()))):
            actions = [self._chosen.get(i) for i in range(len(self._names))]
            self._chosen = {}
            self._receive(self.adapter.step(actions), "step")
            self._step_without_turns()
        return self.last() if self._turns else None

    def _step_without_turns(self) -> None:
        """Step without actions while no agent has a turn but some play on (as the collector)."""
        cap, steps = episode_cap(self.adapter), 0
        while not self._turns and not all(map(_over, self._last.values())):
            if steps == cap:
                raise ValueError(f"{self.name} gave no agent a turn in {cap} steps while some "
                                 "play on: end their episodes (done) instead")
            self._receive(self.adapter.step([None] * len(self._names)), "step")
            steps += 1

    def _turn(self) -> tuple[str, StepResult]:
        if not self._turns:
            raise ValueError(f"no agent of {self.name} is to act: reset() starts an episode")
        return self._turns[0]

    def last(self) -> MultiagentState:
        agent, result = self._turn()
        obs = result.obs
        reward, done, truncated = result_scalars(result)
        state = MultiagentState.from_zoo(agent, (obs.get("obs", obs), reward, done, truncated,
                                                 result.info), device=self.device)
        if MASK in obs:
            state[MASK] = torch.as_tensor(obs[MASK], device=self.device)
        return state

    def agent_iter(self, max_iter: int = 2**63) -> Iterator[str]:
        for _ in range(max_iter):
            if not self._turns:
                break
            yield self._turns[0][0]

    @property
    def agent_selection(self) -> str:
        return self._turn()[0]

    @property
    def agents(self) -> list[str]:
        return [agent for agent in self._names if agent not in self._out]

    @property
    def possible_agents(self) -> list[str]:
        return list(self._names)

    def is_done(self, agent: str) -> bool:
        return self._known(agent) in self._last and _over(self._last[agent])

    def _known(self, agent: str) -> str:
        """``agent``, else a ``KeyError`` naming the agents there are."""
        if agent not in self._index:
            raise KeyError(f"{self.name} has no agent {agent!r}."
                           f"{did_you_mean(str(agent), self._names)} Its agents: "
                           f"{', '.join(self._names)}")
        return agent

    def observation_space(self, agent: str) -> gym.Space:
        space = self._spaces[self._known(agent)]
        return space["obs"] if isinstance(space, gym.spaces.Dict) and "obs" in space.spaces \
            else space

    def action_space(self, agent: str) -> gym.Space:
        return self._actions[self._known(agent)]

    def has_action_mask(self, agent: str) -> bool:
        return MASK in getattr(self._spaces[self._known(agent)], "spaces", {})

    def render(self, **kwargs: Any) -> Any:
        return self.adapter.render()

    def close(self) -> None:
        self.adapter.close()

    def duplicate(self, n: int) -> list[MultiagentPettingZooEnv]:
        """``n`` independent copies of this environment (deep copies)."""
        return [MultiagentPettingZooEnv(copy.deepcopy(self.env), self.name, self.device,
                                        flatten=self.flatten, remote=self.remote)
                for _ in range(n)]


class MultiagentAtariEnv(MultiagentPettingZooEnv):
    """ALL's ``MultiagentAtariEnv(env_name, device, **pettingzoo_params)``: a PettingZoo Atari
    game (``pong_v3``) as ALL preprocesses it with SuperSuit (``atari_zoo_env``); the collector
    and Ray's actors make the same game (its ``remote_env``)."""

    def __init__(self, env_name: str, device: str | torch.device = "cpu",
                 **pettingzoo_params: Any):
        remote = {key: value for key, value in pettingzoo_params.items() if key != "render_mode"}
        super().__init__(atari_zoo_env(env_name, **pettingzoo_params), env_name, device=device,
                         flatten=False, remote=("pettingzoo", {
                             "env": f"{__name__}:atari_zoo_env", "env_name": env_name, **remote}))


def atari_zoo_env(env_name: str, **pettingzoo_params: Any) -> Any:
    """The PettingZoo Atari game ``env_name`` (AEC) in grayscale, the max of each 2 frames,
    every 4th frame, resized to 84x84: each observation ``(1, 84, 84)`` ``uint8``."""
    if not isinstance(env_name, str) or not is_zoo_atari(env_name):
        raise ValueError(f"MultiagentAtariEnv plays PettingZoo's Atari games (pong_v3, "
                         f"boxing_v2, ...; pip install 'looprl[multiagent]'), got "
                         f"{env_name!r}: for another PettingZoo game use "
                         "MultiagentPettingZooEnv(name)")
    try:
        import supersuit
    except ImportError:
        raise ImportError("MultiagentAtariEnv needs SuperSuit: pip install "
                          "'looprl[multiagent]'") from None
    env = make_zoo_env(env_name, obs_type="grayscale_image", **pettingzoo_params)
    env = supersuit.frame_skip_v0(supersuit.max_observation_v0(env, 2), 4)
    return supersuit.reshape_v0(supersuit.resize_v1(env, 84, 84), (1, 84, 84))


def is_zoo_atari(name: str) -> bool:
    """Whether ``name`` is a PettingZoo Atari game's module (``pettingzoo.atari.NAME``)."""
    return module_exists(f"pettingzoo.atari.{name}")


def check_shared_shapes(env: MultiagentEnvironment, use: str) -> None:
    """``ValueError`` unless every agent of ``env`` observes in one shape and acts in one: the
    collector that ``use`` trains on keeps one array of each for all its agents."""
    for kind, space in (("observation", env.observation_space), ("action", env.action_space)):
        shapes = {agent: getattr(space(agent), "shape", None) for agent in env.possible_agents}
        if len(set(shapes.values())) > 1:
            listed = ", ".join(f"{agent} {shape}" for agent, shape in shapes.items())
            raise ValueError(f"{use} keeps one {kind} shape for all agents, but {env.name}'s "
                             f"agents have {kind}s of different shapes ({listed}): pad them to "
                             "one size (SuperSuit's pad_observations_v0, pad_action_space_v0), "
                             "or act in a loop of your own (agent.act(env.last()))")


def _over(result: StepResult) -> bool:
    """Whether ``result`` is its agent's last of the episode (terminated or truncated)."""
    _, done, truncated = result_scalars(result)
    return done or truncated
