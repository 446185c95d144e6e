"""``AgentLoggers``: each agent's returns of a multi-agent run in its own run directory."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from looprl.core.logger import Logger
from looprl.experiments.logger import ExperimentLogger, MemoryLogger

__all__ = ["AgentLoggers"]


class AgentLoggers:
    """A multi-agent run's returns, on both runtimes: the team's test returns in ``run``'s logs,
    each agent's in its own (``loggers``, made on demand) in ``{run dir}/{name}.{agent}/{env}``."""

    def __init__(self, run: Any, agents: Iterable[str] = (), *, name: str | None = None,
                 env_name: str | None = None, verbose: bool | None = None,
                 loggers: dict[str, Logger] | None = None) -> None:
        self.run = run
        self.name = run.agent_name if name is None else name
        self.env_name = run.env_name if env_name is None else env_name
        self.verbose = run.verbose if verbose is None else verbose
        self.loggers: dict[str, Logger] = {} if loggers is None else loggers
        for agent in agents:
            self[agent]  # (made now)

    def __getitem__(self, agent: str) -> Logger:
        """Agent ``agent``'s logger (made if it has none yet)."""
        if agent not in self.loggers:
            self.loggers[agent] = (MemoryLogger() if self.run.log_dir is None else
                                   ExperimentLogger(f"{self.name}.{agent}", self.env_name,
                                                    self.run.log_dir, self.verbose))
        return self.loggers[agent]

    def add_episode(self, returns: Mapping[str, float], frame: int) -> None:
        """Each agent's return (``{agent: return}``) of a training episode ended at ``frame``."""
        for agent, ret in returns.items():
            logger = self[agent]
            logger.frame = frame
            logger.add_episode_return(ret)
            logger.episode += 1

    def add_test_returns(self, team: list[float], returns: Mapping[str, list[float]],
                         frame: int) -> None:
        """The evaluation's returns at ``frame``: the team's in the run's logs, each agent's too."""
        pairs = [(self.run, team), *((self[agent], each) for agent, each in returns.items())]
        for logger, values in pairs:
            logger.frame = frame
            logger.add_test_returns(values)

    def close(self) -> None:
        """Close the agents' loggers (the run's is closed by whoever made it)."""
        for logger in self.loggers.values():
            logger.close()
