"""An SRL environment as a PettingZoo parallel environment, for the multi-agent presets'
spaces and seed 003's turn loop (``play``); training and evaluation step the SRL environment.

Agents are ``agent_0``, ``agent_1``, ...; an agent's observation is its ``obs`` entry, or
``{"observation", "action_mask"}`` when its obs dict has an ``action_mask``. Every agent still
in the episode must act at every step.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import gymnasium as gym
from pettingzoo.utils.env import ParallelEnv

from looprl.environments.multiagent import MASK
from looprl.environments.srl import Environment, StepResult, checked_results


class SRLParallelEnv(ParallelEnv):
    """``env`` (an SRL ``Environment``) with PettingZoo's parallel API; ``ValueError`` if it
    does not declare ``observation_spaces`` and ``action_spaces``."""

    def __init__(self, env: Environment, name: str):
        self.env = env
        self.metadata = {"name": name}
        self.render_mode = None
        self.possible_agents = [f"agent_{i}" for i in range(env.agent_count)]
        self.agents: list[str] = []
        try:
            spaces = env.observation_spaces, env.action_spaces
        except NotImplementedError:
            raise ValueError(f"{name}: to play it locally, its class must define "
                             "observation_spaces and action_spaces (one gymnasium space per "
                             "agent)") from None
        self._observation_spaces = dict(zip(self.possible_agents,
                                            map(_observation_space, spaces[0])))
        self._action_spaces = dict(zip(self.possible_agents, spaces[1]))

    def observation_space(self, agent: str) -> gym.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> gym.Space:
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            with suppress(NotImplementedError):  # an environment without randomness of its own
                self.env.seed(seed)
        self.agents = list(self.possible_agents)
        results = self._results(self.env.reset(), "reset")
        return ({a: _observation(r) for a, r in results.items()},
                {a: r.info for a, r in results.items()})

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        results = self._results(self.env.step([actions.get(a) for a in self.possible_agents]),
                                "step")
        observations = {a: _observation(r) for a, r in results.items()}
        rewards = {a: float(r.reward[0]) for a, r in results.items()}
        terminations = {a: bool(r.done[0]) for a, r in results.items()}
        truncations = {a: bool(r.truncated[0]) for a, r in results.items()}
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return (observations, rewards, terminations, truncations,
                {a: r.info for a, r in results.items()})

    def _results(self, results: Any, call: str) -> dict[str, StepResult]:
        """The results of the agents still in the episode (each must have one)."""
        by_agent = dict(zip(self.possible_agents, checked_results(results, self.env, call)))
        waiting = [a for a in self.agents if by_agent[a] is None]
        if waiting:
            raise ValueError(f"{self.metadata['name']}.{call}() gave no result for "
                             f"{', '.join(waiting)}: seed 003's turn loop (play) needs "
                             "every agent to act at every step; train and evaluate it with "
                             "MultiagentEnvExperiment (the collector), as looprl run does")
        return {a: by_agent[a] for a in self.agents}

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def _observation_space(space: gym.Space) -> gym.Space:
    """An SRL obs-dict space as the agent's observation space (see the module docstring)."""
    if isinstance(space, gym.spaces.Dict) and "obs" in space.spaces:
        if MASK in space.spaces:
            return gym.spaces.Dict({"observation": space["obs"], MASK: space[MASK]})
        return space["obs"]
    return space


def _observation(result: StepResult) -> Any:
    obs = result.obs
    if MASK in obs:
        return {"observation": obs["obs"], MASK: obs[MASK]}
    return obs["obs"]
