"""``MultiagentEnvExperiment``: a ``Multiagent`` acting in a ``MultiagentEnvironment``.

The control loop of seed 003 for multi-agent environments: every agent acts on its turn;
finished agents see their final state once. The run directory's logger records the team
return (the sum of the agents'); one logger per agent, in ``{run dir}/{name}.{agent}/{env}``,
its returns, losses and test returns.

Meta components run per agent, each on its own copies (``copy.deepcopy``: register hooks as
bound methods) and its own metrics dictionary (``self.hubs[name]``, ``metrics['agent']``).
An agent's transition ends when its next turn comes: its ``post_step`` hooks run then.
"""

from __future__ import annotations

import copy
import logging
from collections import defaultdict
from typing import Any

import torch

from looprl.agents.independent import MaskedAgent, masked_observation
from looprl.core import Multiagent
from looprl.environments.multiagent import MultiagentEnvironment
from looprl.experiments.episodes import DEFAULT_EPISODE_CAP, episode_cap, play_episode
from looprl.experiments.experiment import Experiment
from looprl.experiments.logger import ExperimentLogger
from looprl.meta.component import MetaComponent
from looprl.meta.hub import MetaHub, agent_hub, observation_row

log = logging.getLogger(__name__)


def play(env: MultiagentEnvironment, multiagent: Multiagent, episodes: int = 1,
         seed: int | None = None) -> dict[str, list[float]]:
    """Run ``episodes`` episodes of ``multiagent`` in ``env`` (``seed``: of the first reset);
    return each agent's returns. An episode that does not end is cut after
    ``episode_cap(env)`` turns (the env's ``max_episode_steps``, else
    ``DEFAULT_EPISODE_CAP``), with a warning."""
    cap = episode_cap(env)
    games = [play_episode(multiagent, env, seed=seed if i == 0 else None, max_steps=cap)
             for i in range(episodes)]
    return {agent: [game[agent] for game in games] for agent in env.possible_agents}


class MultiagentEnvExperiment(Experiment):
    """Trains a multi-agent preset in a ``MultiagentEnvironment`` and evaluates it.

    The arguments are ``Experiment``'s; ``train_steps`` counts frames of one agent's turn
    each, and the preset's ``agent(logger=...)`` (e.g. ``IndependentMultiagentPreset``'s)
    receives a dict of one ``ExperimentLogger`` per agent.
    """

    env: MultiagentEnvironment
    #: one ``MetaHub`` per agent when meta components are attached (``_attach``)
    hubs: dict[str, MetaHub] = {}  # noqa: RUF012 -- replaced, never mutated

    def _make_agent(self) -> Multiagent:
        self.agent_loggers = {agent: ExperimentLogger(f"{self.name}.{agent}", self.env.name,
                                                      self.logger.log_dir, self.verbose)
                              for agent in self.env.possible_agents}
        return self.preset.agent(logger=self.agent_loggers, train_steps=self.train_steps)

    def _attach(self, components: list[MetaComponent]) -> None:
        """One ``MetaHub`` per agent, over its own copies of ``components``."""
        agents = getattr(self.agent, "agents", None)
        if agents is None:
            raise ValueError(f"{type(self.agent).__name__} has no per-agent `agents`; meta "
                             "components need independent agents (presets.multiagent)")
        self.hubs: dict[str, MetaHub] = {}
        for name, agent in agents.items():
            hub = agent_hub(copy.deepcopy(components), agent, self.env)
            hub.metrics["agent"] = name
            hub.pre_episode()
            self.hubs[name] = hub

    def _hooked_act(self, state: Any) -> Any:
        """The acting agent's action, with its hub's calls (``MetaHub``, on the agent's view of
        the states, ``_view``): ``after_step`` of its previous turn (ending its episode if
        ``state`` is its last), then, unless its episode is over, ``pre_step``."""
        name = state["agent"]
        hub = self.hubs[name]
        frame = self.logger.frame
        seen = self._view(name, state)
        if name in self._pending:
            previous, action = self._pending.pop(name)
            seen = hub.after_env_step(previous, action, seen, frame, self._returns[name],
                                      self._turns[name])
            state = state.update("reward", seen.reward)
        elif state.done:  # its episode ended before its first turn
            hub.end_episodes(torch.ones(1, dtype=torch.bool), [self._returns[name]], [0])
        if not state.done:
            hub.pre_step(observation_row(seen))
        action = self.agent.act(state)
        if not state.done:
            self._pending[name] = (seen, action)
            self._turns[name] += 1
        return action

    def _view(self, name: str, state: Any) -> Any:
        """``state`` as agent ``name``'s hooks see it: in its own view, what its networks and
        its learner read (a masked agent's observation with its action mask appended; the
        same view its hooks get on Ray, ``StreamHooks``)."""
        if not isinstance(self.agent.agents[name], MaskedAgent):
            return state
        return state.update("observation",
                            masked_observation(state.observation, state["action_mask"]))

    def _advance(self) -> None:
        """One training episode (cut after ``episode_cap(env)`` turns if it does not end)."""
        self._reset()
        self._pending, self._turns = {}, defaultdict(int)
        self._returns: dict[str, float] = defaultdict(float)
        cap = episode_cap(self.env)
        for turn, agent in enumerate(self.env.agent_iter()):
            if turn == cap:
                log.warning("a training episode of %s ran %d turns without ending: cut there "
                            "(the cap: the env's max_episode_steps, else %d)", self.env.name,
                            cap, DEFAULT_EPISODE_CAP)
                break
            state = self.env.last()
            self._returns[agent] += float(state.reward)
            self.agent_loggers[agent].frame = self.logger.frame
            self._step(state)
        self._log_training_episode(self._returns)
        for name, hub in self.hubs.items():
            self._log_meta_scalars(hub, self.agent_loggers[name])

    def _step(self, state: Any) -> None:
        """The selected agent acts on ``state``; the environment advances one turn."""
        action = self._hooked_act(state) if self.hubs else self.agent.act(state)
        self.env.step(None if state.done else action)
        self.logger.frame += 1
        self._update_progress()

    def _log_training_episode(self, returns: dict[str, float]) -> None:
        self._check_finite(sum(returns.values()))
        for agent, value in returns.items():
            logger = self.agent_loggers[agent]
            logger.frame = self.logger.frame
            logger.add_episode_return(value)
            logger.episode += 1
        self.logger.add_episode_return(sum(returns.values()))
        self.logger.episode += 1

    def test(self, episodes: int = 100) -> dict[str, list[float]]:
        """Run ``episodes`` episodes with the test agent; return each agent's returns."""
        seed = None if self.seed is None else self.seed + 10_000
        returns = play(self.env, self.preset.test_agent(), episodes, seed=seed)
        for agent, values in returns.items():
            self.agent_loggers[agent].add_test_returns(values)
        self.logger.add_test_returns([sum(values) for values in zip(*returns.values())])
        self.test_returns = returns
        return returns

    def close_loggers(self) -> None:
        """Close the experiment's and the agents' loggers (safe to call more than once)."""
        for logger in self.agent_loggers.values():
            logger.close()
        self.logger.close()
