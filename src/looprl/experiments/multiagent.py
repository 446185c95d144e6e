"""``MultiagentEnvExperiment`` trains a ``Multiagent``; ``play`` plays games, for your loops."""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable
from typing import Any

from looprl.agents.actor import Actor
from looprl.agents.independent import row_actions
from looprl.agents.shell import LearningAgent
from looprl.collector import EnvRunner, Episode
from looprl.collector.copies import made
from looprl.core import Multiagent, RolloutRequest, RolloutResult, StateArray
from looprl.core.preset import check_agent
from looprl.environments.multiagent import (
    MultiagentEnvironment,
    MultiagentPettingZooEnv,
    check_shared_shapes,
)
from looprl.environments.srl import Environment
from looprl.experiments.agent_loggers import AgentLoggers
from looprl.experiments.episodes import check_spaces, check_test, play_episodes
from looprl.experiments.experiment import Experiment, evaluation_seed, log_scalars
from looprl.experiments.progress import evaluation_progress
from looprl.meta.component import MetaComponent
from looprl.meta.hub import MetaHub, StreamHooks, agent_hub
from looprl.presets.multiagent.independent import IndependentMultiagentPreset


def play(env: MultiagentPettingZooEnv, multiagent: Multiagent, episodes: int = 1,
         seed: int | None = None) -> dict[str, list[float]]:
    """Each agent's returns in ``episodes`` episodes of ``multiagent`` in ``env``."""
    check_agent(multiagent, "play")
    runner, act = game(env, multiagent, seed)
    return agent_returns(play_episodes(runner, act, episodes), env.possible_agents)


def game(env: MultiagentPettingZooEnv, multiagent: Multiagent, seed: int | None = None
         ) -> tuple[EnvRunner, Callable[[RolloutRequest], RolloutResult]]:
    """The collector over ``env.adapter`` and ``multiagent``'s answer to its requests."""
    check_shared_shapes(env, "the multi-agent game loop")
    runner = EnvRunner(lambda: env.adapter, segment_length=None, seed=seed, is_evaluation=True)
    return runner, answers(multiagent, runner, env.possible_agents)


def answers(agent: Multiagent, runner: EnvRunner, names: list[str]
            ) -> Callable[[RolloutRequest], RolloutResult]:
    """``agent``'s answer to each of ``runner``'s requests (``row_actions``)."""
    return lambda _: RolloutResult(action=row_actions(agent, runner.states(), names))


def agent_returns(played: list[Episode], names: list[str]) -> dict[str, list[float]]:
    """Each agent's returns in the episodes ``played`` (``names[i]``: agent ``i``'s)."""
    return {name: [episode.returns[i] for episode in played] for i, name in enumerate(names)}


def training_copy(env: MultiagentPettingZooEnv) -> Environment:
    """What Ray's actors step for ``env``: ``make`` of (a copy of) its ``remote_env()``."""
    return made(*env.remote_env())


class MultiagentEnvExperiment(Experiment):
    """Trains a multi-agent preset in a ``MultiagentPettingZooEnv`` (a frame: one agent's move)."""

    env: MultiagentPettingZooEnv
    #: one ``MetaHub`` per agent when meta components are attached (``_attach``)
    hubs: dict[str, MetaHub] = {}  # noqa: RUF012 -- replaced, never mutated

    def __init__(self, preset: Any, env: Any, logdir: str = "runs", name: str | None = None,
                 quiet: bool = False, render: bool = False, save_freq: float = math.inf,
                 train_steps: float = math.inf, verbose: bool = True, **options: Any):
        """ALL's arguments in ALL's order; ``options``: ``Experiment``'s others."""
        super().__init__(preset, env, name, train_steps, logdir, quiet, render, save_freq,
                         verbose, **options)

    def _vector_env(self, preset: Any, env: Any) -> Any:
        if not isinstance(env, MultiagentPettingZooEnv):
            raise TypeError(f"MultiagentEnvExperiment trains in a MultiagentPettingZooEnv, got "
                            f"{type(env).__name__}: wrap a PettingZoo environment in one (an SRL "
                            "environment too: MultiagentPettingZooEnv(env, name, remote=(name, "
                            "args)))")
        check_shared_shapes(env, type(self).__name__)
        if isinstance(preset, IndependentMultiagentPreset):
            preset.fit_agents(env)
        return env

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A checkpoint's experiment (one saved without ``agent_logs`` gets them)."""
        self.__dict__.update(state)
        if "agent_logs" not in state:
            self.agent_logs = AgentLoggers(self.logger, name=self.name, env_name=self.env.name,
                                           verbose=self.verbose, loggers=self.agent_loggers)

    def _make_agent(self) -> Multiagent:
        self.agent_logs = AgentLoggers(self.logger, self.env.possible_agents, name=self.name,
                                       env_name=self.env.name, verbose=self.verbose)
        self.agent_loggers = self.agent_logs.loggers
        return self.preset.agent(logger=self.agent_loggers, train_steps=self.train_steps)

    def _attach(self, components: list[MetaComponent]) -> Any:
        """One ``MetaHub`` per agent over its own copies of ``components``; their hooks."""
        agents = getattr(self.agent, "agents", None)
        if agents is None:
            raise ValueError(f"{type(self.agent).__name__} has no per-agent `agents`; meta "
                             "components need independent agents (presets.multiagent)")
        self.hubs = {}
        for name, agent in agents.items():
            self.hubs[name] = agent_hub(copy.deepcopy(components), agent, self.env)
            self.hubs[name].metrics["agent"] = name
        policy = getattr(self.agent, "policy", None)
        return StreamHooks(list(self.hubs.values()), list(range(len(agents))), list(agents),
                           getattr(policy, "view", None))

    def _collected(self) -> Any:
        if self.render:  # (the game given, which shows itself: a copy made by name would not)
            return functools.partial(getattr, self.env, "adapter")
        return functools.partial(training_copy, self.env)

    def _act(self) -> None:
        for logger in self.agent_loggers.values():  # (each agent's losses: at the run's frame)
            logger.frame = self.logger.frame
        super()._act()

    def _acts(self, agent: Any, states: StateArray) -> Any:
        return row_actions(agent, states, self.env.possible_agents)

    def _log_meta(self) -> None:
        """Each agent's ``log/*`` scalars in its own run directory, as on Ray."""
        for name, hub in self.hubs.items():  # (their frames: set by _log_episode)
            log_scalars(hub, self.agent_logs[name])

    def _log_episode(self, episode: Episode) -> None:
        """The team return in the run's logs, each agent's in its own."""
        self.agent_logs.add_episode(dict(zip(self.env.possible_agents, episode.returns,
                                             strict=True)), self.logger.frame)
        super()._log_episode(episode)

    def test(self, episodes: int = 100, env: Any = None) -> dict[str, list[float]]:
        """Each agent's returns in ``episodes`` episodes, as a Ray run's evaluation."""
        check_test(episodes, env, f"{type(self).__name__}.test", (MultiagentEnvironment,))
        played = self.env if env is None else check_spaces(self.preset, env)
        seed = None if self.seed is None else evaluation_seed(self.seed)
        make_policy = getattr(self.preset, "policy", None)  # (what Ray's evaluation acts with;
        learns = isinstance(self.agent, LearningAgent)  # not a user's agents': their own acts)
        policy = make_policy(copy_model=True) if learns and callable(make_policy) else None
        runner = EnvRunner(functools.partial(training_copy, played), segment_length=None,
                           seed=seed, is_evaluation=True,
                           default_policy_state=getattr(policy, "default_policy_state", None))
        if policy is None:
            act = answers(self.preset.test_agent(), runner, played.possible_agents)
        else:
            actor = Actor(policy, evaluation=True)
            if seed is not None:
                actor.seed(seed)
            act = actor.rollout
        with evaluation_progress(self.description, episodes, self.quiet) as progress:
            returns = agent_returns(play_episodes(runner, act, episodes, progress=progress,
                                                  timeout=self.env_timeout),
                                    played.possible_agents)
        runner.close()
        if env is None:
            self.agent_logs.add_test_returns([sum(each) for each in zip(*returns.values())],
                                             returns, self.logger.frame)
            self.test_returns = returns
        return returns

    def close(self) -> None:
        """Close the loggers, the environment and the collector's copy of it."""
        super().close()
        if self.runner is not None:
            self.runner.close()
