"""Gymnasium, Atari and PettingZoo environments as SRL environments (``"gym"``, ``"atari"``,
``"pettingzoo"``); PettingZoo's games are made (``make_zoo_env``) and stepped here. A ``Dict``
observation keeps its keys, PettingZoo's ``{"observation", "action_mask"}`` becomes ``{"obs",
"action_mask"}`` (a bool mask), any other ``{"obs": ...}``; ``done`` is termination,
``truncated`` truncation."""

from __future__ import annotations

import copy
import functools
import importlib
import types
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import gymnasium as gym
import numpy as np

from looprl.core.observations import as_observation
from looprl.core.suggest import check_seed
from looprl.environments.ale import ale_rom_folder
from looprl.environments.atari import AtariVectorEnvironment
from looprl.environments.base import Restorable
from looprl.environments.faults import EnvironmentFailure, EnvironmentOutputError, failure
from looprl.environments.gym import GymEnvironment
from looprl.environments.gym_helpers import (
    action_to_numpy,
    check_env_id,
    module_exists,
    zoo_modules,
)
from looprl.environments.srl import (
    Environment,
    StepResult,
    action_value,
    agent_count,
    check_observation,
    checked_results,
    is_gymnasium_id,
    make,
    result_scalars,
    spaces_of,
    step_result,
)
from looprl.environments.vector import GymVectorEnvironment

MASK = "action_mask"


def make_zoo_env(name: str, parallel: bool = False, **kwargs: Any) -> Any:
    """The ``env(**kwargs)`` (``parallel_env``) of a PettingZoo module (``"tictactoe_v3"``, ...)."""
    module_name, _, factory = name.partition(":")
    factory = factory or ("parallel_env" if parallel else "env")
    derived = zoo_modules(module_name)
    module = _import_module(name, module_name)
    for candidate in derived:
        module = module or (_import_module(name, candidate) if module_exists(candidate) else None)
    if module is None:
        tried = ", ".join(repr(c) for c in [module_name, *derived])
        raise ValueError(f"Unknown PettingZoo environment {name!r} (tried {tried}; the "
                         "'multiagent' extra installs pettingzoo; its MPE games, such as "
                         "simple_spread_v3, need pip install mpe2 and their bare name)")
    if not callable(getattr(module, factory, None)):
        raise ValueError(f"PettingZoo module {module.__name__!r} has no {factory}() to call")
    if module.__name__.startswith("pettingzoo.atari.") and "auto_rom_install_path" not in kwargs:
        kwargs["auto_rom_install_path"] = ale_rom_folder()  # (else AutoROM's, to download)
    return getattr(module, factory)(**kwargs)


def _import_module(env: str, name: str) -> Any:
    """The module ``name`` (of the game ``env``), ``None`` if there is none."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        missing = error.name if isinstance(error, ModuleNotFoundError) else None
        if missing and (name == missing or name.startswith(missing + ".")):
            return None  # the module itself does not exist
        family = name.split(".")[1] if name.startswith("pettingzoo.") else ""  # (its extra)
        reason = (f"PettingZoo's {family} games need the module {missing}: pip install "
                  f"'pettingzoo[{family}]' installs it" if missing and family in (
                      "atari", "butterfly", "classic", "sisl") else str(error))
        raise ImportError(f"cannot import the PettingZoo environment {env!r}: {reason}") from error


def observation_part(space: gym.Space) -> tuple[gym.Space, bool]:
    """``space``'s observation part (of PettingZoo's masked spaces) and whether it is masked."""
    masked = isinstance(space, gym.spaces.Dict) and {MASK, "observation"} <= set(space.spaces)
    return (space["observation"] if masked else space), masked


def _obs_dict(obs: Any, space: gym.Space, flatten: bool = False) -> dict[str, np.ndarray]:
    """An observation of ``space`` as the SRL obs dict; ``flatten``: ``"obs"`` as float32."""
    inner, masked = observation_part(space)
    if isinstance(space, gym.spaces.Dict) and not flatten and not masked:
        return {key: np.asarray(obs[key]) for key in space.spaces}
    observation = obs["observation"] if masked else obs
    observation = (np.asarray(gym.spaces.flatten(inner, observation), dtype=np.float32)
                   if flatten else np.asarray(observation))
    if masked:
        return {"obs": observation, MASK: np.asarray(obs[MASK], dtype=bool)}
    return {"obs": observation}


def _obs_space(space: gym.Space, flatten: bool = False) -> gym.spaces.Dict:
    """The ``Dict`` space of the obs dicts ``_obs_dict`` makes from ``space``."""
    inner, masked = observation_part(space)
    if isinstance(space, gym.spaces.Dict) and not flatten and not masked:
        return space
    if flatten:  # (the float32 Box of the flattened observations)
        flat = gym.spaces.flatten_space(inner)
        inner = gym.spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32))
    spaces = {"obs": inner}
    if masked:
        spaces[MASK] = gym.spaces.Box(0, 1, space[MASK].shape, bool)
    return gym.spaces.Dict(spaces)


class _Adapter(Environment, Restorable):
    """What the adapters share: the wrapped environment ``env`` and the next ``reset``'s seed."""

    env: Any
    _seed: int | None = None
    clips_actions = True  # (Box actions into their bounds: the collector leaves them as they are)

    @property
    def name(self) -> str:
        return type(self.env).__name__

    def seed(self, seed: int) -> int:
        """Seed the next ``reset`` and the action spaces (agent ``i``'s with ``seed + i``)."""
        self._seed = seed = check_seed(self.name, seed, optional=False)
        for i, space in enumerate(self.action_spaces):
            space.seed(seed + i)
        return seed

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class _SingleAgent(_Adapter):
    """A view of ``looprl`` (a ``GymEnvironment`` or a one-copy ``AtariVectorEnvironment``)."""

    looprl: Any
    _obs_space: gym.spaces.Dict

    @property
    def name(self) -> str:
        return self.looprl.name

    @property
    def agent_count(self) -> int:
        return 1

    @property
    def observation_spaces(self) -> list[gym.Space]:
        return [self._obs_space]

    @property
    def action_spaces(self) -> list[gym.Space]:
        return [self.looprl.action_space]

    def reset(self) -> list[StepResult | None]:
        return [self._result(*self.looprl.reset_output(self._reset_seed()))]

    def step(self, actions: list[Any | None]) -> list[StepResult | None]:
        _check_count(actions, 1)
        if actions[0] is None:
            raise ValueError(f"{type(self).__name__}.step: agent 0 must act, got None")
        obs, reward, terminated, truncated, info = self.looprl.step_output(
            action_value(actions[0]))
        return [self._result(obs, info, reward, terminated, truncated)]

    def render(self) -> Any:
        return self.looprl.render()


class GymnasiumEnvironment(_SingleAgent):
    """A Gymnasium environment (an id or a ``gym.Env``) for SRL; ``obs`` as ``GymEnvironment``'s;
    ``label``: its name in logs (the id, or the ``package.module:Class`` it was made from)."""

    _cast = False  # (adapters pickled before it: their observations as the env gave them)

    def __init__(self, env_id: str | gym.Env,
                 wrap_env: Callable[[gym.Env], gym.Env] | None = None, *,
                 label: str | None = None, **gym_kwargs: Any):
        name = label or (env_id if isinstance(env_id, str) else None)  # (its name in logs)
        if isinstance(env_id, str):
            is_gymnasium_id(env_id)  # (registers ale-py's ids)
            check_env_id(env_id)  # (raises for an unknown id, or one Gymnasium dropped)
            env_id = gym.make(env_id, **gym_kwargs)
            env_id = env_id if wrap_env is None else wrap_env(env_id)
        self.looprl = GymEnvironment(env_id, name=name)
        self.env = env_id
        space = _obs_space(self.env.observation_space)
        self._cast = space is not self.env.observation_space  # (an "obs" field, not a Dict's)
        inner = space["obs"] if self._cast else None
        if isinstance(inner, gym.spaces.Box) and as_observation(inner.low).dtype != inner.dtype:
            space = gym.spaces.Dict({**space.spaces, "obs": gym.spaces.Box(
                inner.low.astype(np.float32), inner.high.astype(np.float32))})
        self._obs_space = space

    def _result(self, obs: Any, info: dict, reward: float = 0.0, terminated: bool = False,
                truncated: bool = False) -> StepResult:
        obs = _obs_dict(obs, self.env.observation_space)
        if self._cast:  # (as GymEnvironment's states hold it: float32, uint8 images kept)
            obs["obs"] = as_observation(obs["obs"], self.looprl.name)
        return step_result(obs, float(reward), terminated, info, truncated)


class AtariGameEnvironment(_SingleAgent):
    """An Atari game as ``AtariEnvironment`` plays it (``options``) as an SRL environment:
    observations ``{"obs": (4, 84, 84) uint8}``, ``info["lives"]``; ``game_name``: SRL's game."""

    render_fps = 15.0  # 60 Hz, 4 frames a step

    def __init__(self, game: str | None = None, render_mode: str | None = None, *,
                 game_name: str | None = None, **options: Any):
        if (game is None) == (game_name is None):
            raise TypeError("the 'atari' environment takes one game: game='Breakout' (or "
                            f"'ALE/Breakout-v5'; SRL's game_name=), got game={game!r}, "
                            f"game_name={game_name!r}")
        game = game if game is not None else game_name
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"AtariGameEnvironment renders its preprocessed frames "
                             f"(render_mode='rgb_array'), not render_mode={render_mode!r}")
        self.looprl = AtariVectorEnvironment(game, 1, num_threads=1, **options)
        self.env = self.looprl.env
        self._obs_space = gym.spaces.Dict({"obs": self.env.single_observation_space})

    def _result(self, obs: Any, info: dict, reward: Any = (0.0,), terminated: Any = (False,),
                truncated: Any = (False,)) -> StepResult:
        return step_result({"obs": obs[0].copy()}, float(reward[0]), terminated[0],
                           {"lives": int(info["lives"][0])}, truncated[0])


class SRLGymEnv(gym.Env):
    """A one-agent SRL environment ``env`` as a ``gymnasium.Env`` (its ``"obs"`` observations)."""

    def __init__(self, env: Environment, name: str):
        if agent_count(env) != 1:
            raise ValueError(f"{name} is an SRL environment of {env.agent_count} agents: train "
                             "it with a multi-agent preset (algorithm=multiagent/ppo or "
                             "multiagent/dqn, for discrete actions; for continuous ones, from "
                             "Python: multiagent.independent(continuous.ppo))")
        self.env, self.name = env, name
        try:
            space, self.action_space = (spaces_of(env, "observation_spaces")[0],
                                        spaces_of(env, "action_spaces")[0])
        except NotImplementedError as error:
            raise ValueError(f"{name}: to train it with a single-agent preset, {error}") from None
        fields = list(space.spaces) if isinstance(space, gym.spaces.Dict) else ["obs"]
        if fields != ["obs"]:
            raise ValueError(f"{name}'s observations have the fields {fields}; a single-agent "
                             "preset learns from one array, the field 'obs': put all it should "
                             "see there (an action mask is not read)")
        self.observation_space = space["obs"] if isinstance(space, gym.spaces.Dict) else space
        self._declared = gym.spaces.Dict({"obs": self.observation_space})

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        if seed is not None:
            with suppress(NotImplementedError):  # (an environment without seed(): unseeded)
                self.env.seed(seed)
        result = checked_results(self.env.reset(), self.env, "reset")[0]
        return self._obs(result, "reset"), dict(result.info or {})  # (SRL's info may be None)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        result = checked_results(self.env.step([action]), self.env, "step")[0]
        if result is None:
            raise ValueError(f"{self.name}.step() returned None for its only agent; return its "
                             "StepResult at every step")
        reward, done, truncated = result_scalars(result)
        return self._obs(result, "step"), reward, done, truncated, dict(result.info or {})

    def _obs(self, result: Any, call: str) -> Any:
        """The ``"obs"`` field of ``result``'s observation, checked at a step
        (``check_observation``; ``checked_results`` checked a reset's)."""
        if "obs" not in result.obs:
            raise EnvironmentOutputError(
                f"{self.name}.{call}() returned an observation of the fields {sorted(result.obs)}"
                ", without 'obs', the field its observation space declares: return "
                "StepResult(obs={'obs': array}, ...)")
        if call == "step":
            check_observation(f"{self.name}.step() returned", result.obs, self._declared)
        return result.obs["obs"]

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class SRLAgentEnvironment(GymEnvironment):
    """Seed 003's view of a one-agent SRL environment; Ray's actors make it from ``remote``."""

    def __init__(self, env: Environment, remote: tuple[str, dict[str, Any]]):
        super().__init__(SRLGymEnv(env, remote[0]), name=remote[0])
        self._remote = remote

    def remote_env(self) -> tuple[str, dict[str, Any]]:
        return self._remote

    @classmethod
    def made(cls, name: str, env_args: dict[str, Any]) -> SRLAgentEnvironment:
        """The view of ``make(name, **env_args)`` (on a copy of ``env_args``)."""
        return cls(make(name, **copy.deepcopy(env_args)), (name, env_args))

    def remade(self) -> SRLAgentEnvironment:
        """A new view of ``make(*remote)``."""
        return self.made(*self._remote)

    def duplicate(self, n: int) -> GymVectorEnvironment:
        """``n`` copies, each made from ``remote`` (as Ray's actors make theirs)."""
        return GymVectorEnvironment(functools.partial(_made_view, *self._remote), n,
                                    device=self.device, name=self.name, seed=self.given_seed)


def _made_view(name: str, env_args: dict[str, Any]) -> SRLGymEnv:
    """A new ``SRLGymEnv`` of ``make(name, **env_args)`` (on a copy of ``env_args``)."""
    return SRLGymEnv(make(name, **copy.deepcopy(env_args)), name)


def _check_count(actions: Any, n: int) -> None:
    if not isinstance(actions, (list, tuple)) or len(actions) != n:
        got = len(actions) if isinstance(actions, (list, tuple)) else type(actions).__name__
        raise ValueError(f"step() takes a list of {n} actions (one per agent), got {got}")


def check_agent_action(name: str, agent: str, value: Any, space: gym.Space) -> None:
    """A one-line ``ValueError`` for ``agent``'s action ``value`` outside its ``space``."""
    if not space.contains(value):
        raise ValueError(f"Invalid action {value!r} for {name}'s {agent} (action space {space})")


class PettingZooEnvironment(_Adapter):
    """A PettingZoo game (AEC or parallel, or its name) as an SRL environment, agent ``i`` being
    ``agent_names[i]``; ``turns``: the agents of the latest results (AEC: whose turn, finished)."""

    def __init__(self, env: Any, parallel: bool = False, flatten: bool = False,
                 **env_kwargs: Any):
        from pettingzoo.utils.env import ParallelEnv

        if isinstance(env, str):
            env = make_zoo_env(env, parallel=parallel, **env_kwargs)
        elif env_kwargs:
            raise TypeError(f"unexpected arguments {sorted(env_kwargs)} for a built PettingZoo env")
        elif not hasattr(env, "possible_agents"):
            what = (f"the module {env.__name__}: call its env()"
                    if isinstance(env, types.ModuleType) else
                    f"{env.__qualname__}, not called: call it"
                    if isinstance(env, type | types.FunctionType) else
                    f"{type(env).__name__} {env!r:.40}")
            raise TypeError(f"a PettingZoo environment is a game (tictactoe_v3.env(), AEC or "
                            f"parallel) or its name ('tictactoe_v3'), got {what}")
        self.env = env
        self.parallel = isinstance(env, ParallelEnv)
        self.agent_names: list[str] = list(env.possible_agents)
        self._index = {agent: i for i, agent in enumerate(self.agent_names)}
        self._spaces = [env.observation_space(agent) for agent in self.agent_names]
        self.flatten = flatten
        self.turns: list[int] = []
        self._episode = self._t = 0  # episodes begun, steps into the current one

    @property
    def name(self) -> str:
        """The class of the game given; for a PettingZoo wrapper of one, the game's name."""
        wrapper = type(self.env).__module__.startswith("pettingzoo.utils")
        return (wrapper and getattr(self.env, "metadata", {}).get("name")) or super().name

    @property
    def agent_count(self) -> int:
        return len(self.agent_names)

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``self.env.<method>(*args, **kwargs)``; its exceptions as ``EnvironmentFailure``."""
        if method == "reset":
            self._episode, self._t = self._episode + 1, 0
        else:
            self._t += 1
        try:
            return getattr(self.env, method)(*args, **kwargs)
        except Exception as error:
            raise failure(self.name, method, error, self._episode, self._t) from error

    @property
    def observation_spaces(self) -> list[gym.Space]:
        return [_obs_space(space, self.flatten) for space in self._spaces]

    @property
    def action_spaces(self) -> list[gym.Space]:
        return [self.env.action_space(agent) for agent in self.agent_names]

    def reset(self) -> list[StepResult | None]:
        output = self._call("reset", seed=self._reset_seed())
        if self.parallel:  # (observations and infos: no rewards or ends yet)
            return self._parallel_results(output[0], {}, {}, {}, output[1])
        return self._aec_results()

    def step(self, actions: list[Any | None]) -> list[StepResult | None]:
        _check_count(actions, self.agent_count)
        if not self.env.agents:
            raise ValueError("every agent's episode is over: call reset() before step()")
        acting = list(self.env.agents) if self.parallel else [self.env.agent_selection]
        chosen = {agent: self._agent_action(agent, actions) for agent in acting}
        try:
            output = self._call("step", chosen if self.parallel else chosen[acting[0]])
        except EnvironmentFailure as failed:
            if isinstance(failed.__cause__, AssertionError):  # (games assert valid actions)
                for agent, value in chosen.items():
                    check_agent_action(self.name, agent, value, self.env.action_space(agent))
            raise
        return self._parallel_results(*output) if self.parallel else self._aec_results()

    def _obs(self, agent: str, obs: Any) -> dict[str, np.ndarray]:
        return _obs_dict(obs, self._spaces[self._index[agent]], self.flatten)

    def _agent_action(self, agent: str, actions: list[Any | None]) -> Any:
        action = actions[self._index[agent]]
        if action is None:
            raise ValueError(f"agent {self._index[agent]} ({agent!r}) must act this step but its "
                             "action is None")
        return action_to_numpy(action_value(action), self.env.action_space(agent))

    def _parallel_results(self, observations, rewards, terminations, truncations, infos):
        results: list[StepResult | None] = [None] * self.agent_count
        self.turns = [self._index[agent] for agent in observations]
        for agent, obs in observations.items():
            results[self._index[agent]] = step_result(
                self._obs(agent, obs), float(rewards.get(agent, 0.0)),
                terminations.get(agent, False), infos.get(agent, {}), truncations.get(agent, False))
        return results

    def _aec_results(self) -> list[StepResult | None]:
        """Final results of the agents that finished, then the next agent to act (if any)."""
        results: list[StepResult | None] = [None] * self.agent_count
        self.turns = []
        while self.env.agents:
            agent = self.env.agent_selection
            obs, reward, terminated, truncated, info = self.env.last()
            result = step_result(self._obs(agent, obs), float(reward), terminated, info, truncated)
            results[self._index[agent]] = result
            self.turns.append(self._index[agent])
            if not (terminated or truncated):
                break
            self._call("step", None)  # PettingZoo removes a finished agent when it steps None
        return results
