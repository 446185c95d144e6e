"""Adapters that run Gymnasium, Atari and PettingZoo environments as SRL environments.

They are registered as ``"gym"``, ``"atari"``, ``"pettingzoo"`` and ``"contextual"`` (see
``looprl.environments.srl``), and ``make`` falls back to ``GymnasiumEnvironment`` for any
Gymnasium id::

    from looprl.environments import make

    env = make("CartPole-v1")                      # one agent, obs {"obs": (4,) float32}
    env = make("atari", game="Breakout")           # obs {"obs": (4, 84, 84) uint8}
    env = make("pettingzoo", env="pettingzoo.classic.tictactoe_v3")   # AEC, turn-based
    env = make("pettingzoo", env="pettingzoo.classic.rps_v2", parallel=True)
    env = make("contextual", env_id="CartPole-v1", contexts={0: {"length": 0.3}})

Observation conventions: a Gymnasium/PettingZoo ``Dict`` observation keeps its keys; a
PettingZoo ``{"observation", "action_mask"}`` observation becomes
``{"obs": ..., "action_mask": <bool array>}``; any other observation becomes ``{"obs": ...}``.
``done`` is termination and ``truncated`` truncation, never both folded together.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import gymnasium as gym
import numpy as np

from looprl.environments.gym import action_to_numpy, check_env_id
from looprl.environments.multiagent import flat_box, flat_observation
from looprl.environments.srl import Environment, StepResult, action_value, step_result

MASK = "action_mask"

#: PettingZoo's families, searched for a name given without one (``"tictactoe_v3"``).
ZOO_FAMILIES = ("classic", "butterfly", "sisl", "mpe", "atari")


def _register_ale() -> None:
    """Register ale-py's ``ALE/...`` ids with Gymnasium, if ale-py is installed."""
    try:
        import ale_py
    except ImportError:
        return
    gym.register_envs(ale_py)


def is_gymnasium_id(name: str) -> bool:
    """Whether ``gymnasium.make(name)`` knows ``name`` (Atari ids included when ale-py is)."""
    if name not in gym.registry:
        _register_ale()
    return name in gym.registry


def gymnasium_ids() -> list[str]:
    """Every registered Gymnasium id."""
    return list(gym.registry)


def _obs_dict(obs: Any, space: gym.Space) -> dict[str, np.ndarray]:
    """An observation as the SRL obs dict (see the module docstring)."""
    if isinstance(space, gym.spaces.Dict):
        if MASK in space.spaces and "observation" in space.spaces:
            return {"obs": np.asarray(obs["observation"]), MASK: np.asarray(obs[MASK], bool)}
        return {key: np.asarray(obs[key]) for key in space.spaces}
    return {"obs": np.asarray(obs)}


def _obs_space(space: gym.Space) -> gym.spaces.Dict:
    """The ``Dict`` space of the obs dicts ``_obs_dict`` makes from ``space``."""
    if isinstance(space, gym.spaces.Dict):
        if MASK in space.spaces and "observation" in space.spaces:
            mask = space.spaces[MASK]
            return gym.spaces.Dict(
                {"obs": space["observation"], MASK: gym.spaces.Box(0, 1, mask.shape, bool)}
            )
        return space
    return gym.spaces.Dict({"obs": space})


def _masked(space: gym.Space) -> bool:
    """Whether ``space`` is a PettingZoo ``{"observation", "action_mask"}`` space."""
    return isinstance(space, gym.spaces.Dict) and {MASK, "observation"} <= set(space.spaces)


def _inner(space: gym.Space) -> gym.Space:
    """The observation part of a ``{"observation", "action_mask"}`` space, else ``space``."""
    return space["observation"] if _masked(space) else space


def _action(action: Any, space: gym.Space) -> Any:
    return action_to_numpy(action_value(action), space)


class _SingleAgent(Environment):
    """What the one-agent adapters share: spaces from ``_obs_space``/``_action_space`` and a
    ``seed`` that applies to the next ``reset`` and to the action space."""

    _obs_space: gym.spaces.Dict
    _seed: int | None = None

    @property
    def _action_space(self) -> gym.Space:
        return self._env.action_space

    @property
    def agent_count(self) -> int:
        return 1

    @property
    def observation_spaces(self) -> list[gym.Space]:
        return [self._obs_space]

    @property
    def action_spaces(self) -> list[gym.Space]:
        return [self._action_space]

    def seed(self, seed: int) -> int:
        """Seed the next ``reset`` and the action space."""
        self._seed = seed
        self._action_space.seed(seed)
        return seed


class GymnasiumEnvironment(_SingleAgent):
    """A single-agent Gymnasium environment as an SRL environment (``agent_count`` 1).

    Args:
        env_id: a Gymnasium id (``"CartPole-v1"``, ``"ALE/Breakout-v5"``) or a ``gym.Env``.
        **gym_kwargs: passed to ``gymnasium.make``.

    Raises:
        ValueError: ``env_id`` is not a Gymnasium id (one line, naming close matches).
    """

    def __init__(self, env_id: str | gym.Env, **gym_kwargs: Any):
        if isinstance(env_id, str):
            if not is_gymnasium_id(env_id):
                check_env_id(env_id)  # raises the one-line ValueError
            env_id = gym.make(env_id, **gym_kwargs)
        self._env = env_id
        self._seed: int | None = None
        self._obs_space = _obs_space(self._env.observation_space)

    @property
    def env(self) -> gym.Env:
        """The wrapped Gymnasium environment."""
        return self._env

    def reset(self) -> list[StepResult | None]:
        obs, info = self._env.reset(seed=self._seed)
        self._seed = None
        return [step_result(_obs_dict(obs, self._env.observation_space), 0.0, False, info)]

    def step(self, actions: list[Any | None]) -> list[StepResult | None]:
        _check_count(actions, 1)
        if actions[0] is None:
            raise ValueError("GymnasiumEnvironment.step: agent 0 must act, got None")
        action = _action(actions[0], self._env.action_space)
        obs, reward, terminated, truncated, info = self._env.step(action)
        obs = _obs_dict(obs, self._env.observation_space)
        return [step_result(obs, float(reward), terminated, info, truncated)]

    def render(self) -> Any:
        """``gym.Env.render()`` (build with ``render_mode="rgb_array"`` for frames)."""
        return self._env.render()

    def close(self) -> None:
        self._env.close()


def contextual_environment(env_id: str, contexts: Any = None, hide_context: bool = True,
                           instance_mode: str = "random", **make_kwargs: Any
                           ) -> GymnasiumEnvironment:
    """A ``looprl.environments.contextual.ContextualEnv`` as a single-agent SRL environment
    (registered as ``"contextual"``: ``make("contextual", env_id="CartPole-v1",
    contexts={0: {"length": 0.3}})``; what Ray actors play for a ``ContextualEnvironment``).
    Its ``seed(s)`` re-seeds the instance choice at the next reset, as ``reset(seed=s)``
    does; ``contextual_envs`` finds its wrapper, so ``next_instance`` works as locally.
    Arguments are ``ContextualEnv``'s."""
    from looprl.environments.contextual import ContextualEnv

    return GymnasiumEnvironment(ContextualEnv(env_id, contexts, hide_context, instance_mode,
                                              **make_kwargs))


class AtariGameEnvironment(_SingleAgent):
    """An Atari game with the DeepMind preprocessing as a single-agent SRL environment.

    The same pipeline as ``looprl.environments.AtariEnvironment`` (ale-py's native
    preprocessing: no-op and fire reset, frame skip 4 with max-pooling, 84x84 grayscale, 4
    stacked frames): observations are ``{"obs": (4, 84, 84) uint8}``. ``info`` carries the
    number of ``lives`` left. Episodes end at game over; rewards are unclipped scores.

    Args:
        game: ``"Breakout"``, ``"ALE/Breakout-v5"``, ``"BreakoutNoFrameskip-v4"``...
        **options: overrides of ``looprl.environments.atari.DEEPMIND_OPTIONS``
            (``frame_stack``, ``screen_size``, ``noop_max``, ``clip_rewards``...).
    """

    render_fps = 15.0  # 60 Hz, 4 frames a step

    def __init__(self, game: str, render_mode: str | None = None, **options: Any):
        from looprl.environments.atari import make_ale_vector_env

        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"AtariGameEnvironment renders its preprocessed frames "
                             f"(render_mode='rgb_array'), not render_mode={render_mode!r}")
        self._env = make_ale_vector_env(game, 1, num_threads=1, **options)
        self._seed: int | None = None
        self._obs_space = gym.spaces.Dict({"obs": self._env.single_observation_space})
        self._frame: np.ndarray | None = None

    @property
    def _action_space(self) -> gym.Space:
        return self._env.single_action_space

    def reset(self) -> list[StepResult | None]:
        obs, info = self._env.reset(seed=self._seed)
        self._seed = None
        self._frame = obs[0, -1]
        return [step_result({"obs": obs[0].copy()}, 0.0, False, {"lives": int(info["lives"][0])})]

    def step(self, actions: list[Any | None]) -> list[StepResult | None]:
        _check_count(actions, 1)
        space = self._env.single_action_space
        action = _action(actions[0], space)
        if not space.contains(action):
            raise ValueError(f"invalid Atari action {action!r}: the actions are 0..{space.n - 1}")
        obs, reward, terminated, truncated, info = self._env.step(np.array([action]))
        self._frame = obs[0, -1]
        info = {"lives": int(info["lives"][0])}
        return [
            step_result({"obs": obs[0].copy()}, float(reward[0]), terminated[0], info, truncated[0])
        ]

    def render(self) -> np.ndarray:
        """The newest preprocessed frame as an ``(84, 84, 3)`` uint8 RGB array."""
        if self._frame is None:
            raise RuntimeError("AtariGameEnvironment.render() before reset(): nothing to show")
        return np.repeat(self._frame[..., None], 3, axis=-1)

    def close(self) -> None:
        self._env.close()


def _check_count(actions: Any, n: int) -> None:
    if not isinstance(actions, (list, tuple)) or len(actions) != n:
        got = len(actions) if isinstance(actions, (list, tuple)) else type(actions).__name__
        raise ValueError(f"step() takes a list of {n} actions (one per agent), got {got}")


def make_pettingzoo(env: str, parallel: bool = False, **env_kwargs: Any) -> Any:
    """A PettingZoo environment from a module path.

    Args:
        env: ``"pettingzoo.classic.tictactoe_v3"`` (its ``env()``/``parallel_env()`` is
            called), a short ``"classic.tictactoe_v3"`` or ``"tictactoe_v3"``, or any
            ``"package.module:factory"`` (e.g. ``"mpe2.simple_spread_v3:parallel_env"``).
        parallel: call the module's ``parallel_env`` instead of ``env``.
        **env_kwargs: passed to the factory.

    Raises:
        ImportError: the module (or one of its dependencies) cannot be imported.
        ValueError: the module has no such factory.
    """
    module_name, _, factory = env.partition(":")
    factory = factory or ("parallel_env" if parallel else "env")
    derived = [] if module_name.startswith("pettingzoo.") else [f"pettingzoo.{module_name}"]
    if "." not in module_name:  # "tictactoe_v3": look in PettingZoo's families
        derived += [f"pettingzoo.{family}.{module_name}" for family in ZOO_FAMILIES]
    module = _import_module(env, module_name, must_exist=False)
    for candidate in derived:
        module = module or _import_module(env, candidate, must_exist=True)
    if module is None:
        tried = ", ".join(repr(c) for c in [module_name, *derived])
        raise ImportError(f"cannot import the PettingZoo environment {env!r}: tried {tried}")
    if not callable(getattr(module, factory, None)):
        raise ValueError(f"PettingZoo module {module.__name__!r} has no {factory}() to call")
    return getattr(module, factory)(**env_kwargs)


def _import_module(env: str, name: str, must_exist: bool) -> Any:
    """The module ``name``, ``None`` if there is none, ``ImportError`` if it fails to import.

    With ``must_exist``, a module whose package cannot even be searched counts as absent
    (a guessed name must not surface an unrelated package's error).
    """
    if must_exist:
        try:
            if importlib.util.find_spec(name) is None:
                return None
        except (ImportError, ValueError):
            return None
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if name == missing or name.startswith(missing + "."):
            return None  # the module itself does not exist
        raise ImportError(f"cannot import the PettingZoo environment {env!r}: {error}") from error
    except ImportError as error:
        raise ImportError(f"cannot import the PettingZoo environment {env!r}: {error}") from error


class PettingZooEnvironment(Environment):
    """A PettingZoo environment (AEC or parallel) as an SRL environment.

    Agents are the env's ``possible_agents``, in order: result ``i`` and action ``i`` belong
    to ``agent_names[i]``.

    * **Parallel** envs: every live agent gets a ``StepResult`` and must act; agents not
      alive (never spawned, or removed after their episode ended) get ``None``. An agent's
      last ``StepResult`` has ``done`` or ``truncated`` set.
    * **AEC** (turn-based) envs: only the agent whose turn is next gets a ``StepResult``;
      the others get ``None``, and ``step`` reads only that agent's action (the other
      entries are ignored). Its ``reward`` is everything the agent received since its
      previous ``StepResult`` (PettingZoo's cumulative reward), so rewards earned during
      the other agents' turns are not lost. When agents finish (e.g. the game ends), each
      gets a final ``StepResult`` with ``done``/``truncated`` set and its last rewards, in
      the same list as the next agent to act, if any.

    Action masks in ``{"observation", "action_mask"}`` observations become the obs dict's
    ``"action_mask"`` (bool).

    Args:
        env: a PettingZoo ``AECEnv`` or ``ParallelEnv``, or a module path for
            ``make_pettingzoo`` (``"pettingzoo.classic.tictactoe_v3"``).
        parallel: with a module path, build the module's ``parallel_env``.
        flatten: ``"obs"`` is the observation (without the action mask) flattened to one
            float32 vector, as ``MultiagentPettingZooEnv`` flattens it (the local presets'
            view); otherwise it keeps its shape and dtype.
        **env_kwargs: passed to the module's factory.
    """

    def __init__(self, env: Any, parallel: bool = False, flatten: bool = False,
                 **env_kwargs: Any):
        from pettingzoo.utils.env import ParallelEnv

        if isinstance(env, str):
            env = make_pettingzoo(env, parallel=parallel, **env_kwargs)
        elif env_kwargs:
            raise TypeError(f"unexpected arguments {sorted(env_kwargs)} for a built PettingZoo env")
        self._env = env
        self.parallel = isinstance(env, ParallelEnv)
        self.agent_names: list[str] = list(env.possible_agents)
        self._index = {agent: i for i, agent in enumerate(self.agent_names)}
        self._spaces = [env.observation_space(agent) for agent in self.agent_names]
        self.flatten = flatten
        self._seed: int | None = None

    @property
    def env(self) -> Any:
        """The wrapped PettingZoo environment."""
        return self._env

    @property
    def agent_count(self) -> int:
        return len(self.agent_names)

    @property
    def observation_spaces(self) -> list[gym.Space]:
        spaces = [_obs_space(space) for space in self._spaces]
        if not self.flatten:
            return spaces
        return [gym.spaces.Dict({**space.spaces, "obs": flat_box(_inner(zoo))})
                for space, zoo in zip(spaces, self._spaces, strict=True)]

    @property
    def action_spaces(self) -> list[gym.Space]:
        return [self._env.action_space(agent) for agent in self.agent_names]

    def seed(self, seed: int) -> int:
        """Seed the next ``reset`` and the action spaces (agent ``i`` with ``seed + i``)."""
        self._seed = seed
        for i, space in enumerate(self.action_spaces):
            space.seed(seed + i)
        return seed

    def reset(self) -> list[StepResult | None]:
        seed, self._seed = self._seed, None
        if self.parallel:
            observations, infos = self._env.reset(seed=seed)
            zeros = dict.fromkeys(observations, 0.0)
            falses = dict.fromkeys(observations, False)
            return self._parallel_results(observations, zeros, falses, falses, infos)
        self._env.reset(seed=seed)
        return self._aec_results()

    def step(self, actions: list[Any | None]) -> list[StepResult | None]:
        _check_count(actions, self.agent_count)
        if not self._env.agents:
            raise ValueError("every agent's episode is over: call reset() before step()")
        return self._parallel_step(actions) if self.parallel else self._aec_step(actions)

    def _obs(self, agent: str, obs: Any) -> dict[str, np.ndarray]:
        space = self._spaces[self._index[agent]]
        if not self.flatten:
            return _obs_dict(obs, space)
        if not _masked(space):
            return {"obs": flat_observation(space, obs)}
        return {"obs": flat_observation(_inner(space), obs["observation"]),
                MASK: np.asarray(obs[MASK], bool)}

    def _agent_action(self, agent: str, actions: list[Any | None]) -> Any:
        action = actions[self._index[agent]]
        if action is None:
            raise ValueError(
                f"agent {self._index[agent]} ({agent!r}) must act this step but its action is None"
            )
        return _action(action, self._env.action_space(agent))

    def _parallel_step(self, actions: list[Any | None]) -> list[StepResult | None]:
        step = {agent: self._agent_action(agent, actions) for agent in self._env.agents}
        return self._parallel_results(*self._env.step(step))

    def _parallel_results(self, observations, rewards, terminations, truncations, infos):
        results: list[StepResult | None] = [None] * self.agent_count
        for agent, obs in observations.items():
            results[self._index[agent]] = step_result(
                self._obs(agent, obs),
                float(rewards.get(agent, 0.0)),
                terminations.get(agent, False),
                infos.get(agent, {}),
                truncations.get(agent, False),
            )
        return results

    def _aec_step(self, actions: list[Any | None]) -> list[StepResult | None]:
        agent = self._env.agent_selection
        self._env.step(self._agent_action(agent, actions))
        return self._aec_results()

    def _aec_results(self) -> list[StepResult | None]:
        """Final results of the agents that finished, then the next agent to act (if any)."""
        results: list[StepResult | None] = [None] * self.agent_count
        while self._env.agents:
            agent = self._env.agent_selection
            obs, reward, terminated, truncated, info = self._env.last()
            result = step_result(self._obs(agent, obs), float(reward), terminated, info, truncated)
            results[self._index[agent]] = result
            if not (terminated or truncated):
                break
            self._env.step(None)  # PettingZoo removes a finished agent when it steps None
        return results

    def render(self) -> Any:
        """The PettingZoo env's ``render()`` (build it with ``render_mode="rgb_array"``)."""
        return self._env.render()

    def close(self) -> None:
        self._env.close()
