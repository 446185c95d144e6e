"""``AgentLoggers``: each agent's returns of a multi-agent run in its own run directory."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from looprl.core.logger import Logger
from looprl.experiments.logger import ExperimentLogger, MemoryLogger

__all__ = ["AgentLoggers"]


class AgentLoggers:
    """A multi-agent run's returns, logged alike by the local and the Ray runtime: the
    team's test returns in the run's logger ``run`` (its training returns are any run's,
    logged by the runtime's loop), each agent's returns in its own ``ExperimentLogger``
    (``loggers``, made on demand), whose run directory is ``{run dir}/{name}.{agent}/{env}``
    (a ``MemoryLogger`` when ``run`` writes no files: its ``log_dir`` is ``None``).

    Args:
        run: the run's logger (an ``ExperimentLogger``, or any logger with a ``log_dir``).
        agents: agents whose loggers are made now (the others: when first logged).
        name, env_name, verbose: of the agents' loggers (``None``: ``run``'s ``agent_name``,
            ``env_name`` and ``verbose``).
        loggers: the agents' loggers so far (a resumed run's), kept and added to.
    """

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
        """Each agent's return (``{agent: return}``) of a training episode that ended at
        ``frame``."""
        for agent, ret in returns.items():
            logger = self[agent]
            logger.frame = frame
            logger.add_episode_return(ret)
            logger.episode += 1

    def add_test_returns(self, team: list[float], returns: Mapping[str, list[float]],
                         frame: int) -> None:
        """The final evaluation's returns: the team's (``team``) in the run's logs, each
        agent's (``{agent: returns}``) in its own, at the run's ``frame``."""
        pairs = [(self.run, team), *((self[agent], each) for agent, each in returns.items())]
        for logger, values in pairs:
            logger.frame = frame
            logger.add_test_returns(values)

    def close(self) -> None:
        """Close the agents' loggers (the run's is closed by whoever made it)."""
        for logger in self.loggers.values():
            logger.close()
