"""``MultiagentEnvExperiment``: a ``Multiagent`` acting in a ``MultiagentEnvironment``.

The control loop of seed 003 for multi-agent environments: every agent acts on its turn,
finished agents see their final state once (and the environment steps ``None`` for them).
It logs into one run directory ``{logdir}/{name}/{env}``:

* the experiment's ``ExperimentLogger`` there records the frame and episode counters and,
  as the episode return, the sum of all agents' returns (the team return);
* one ``ExperimentLogger`` per agent, in ``{run dir}/{name}.{agent}/{env}``, records that
  agent's episode returns (its own ``returns100.csv``), its losses (each agent's preset
  logs to its own logger) and its test returns.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from looprl.core import Multiagent, Preset
from looprl.environments.multiagent import MultiagentEnvironment
from looprl.experiments.experiment import seed_everything
from looprl.experiments.logger import ExperimentLogger
from looprl.experiments.progress import TrainingProgress


def play(
    env: MultiagentEnvironment,
    multiagent: Multiagent,
    episodes: int = 1,
    seed: int | None = None,
) -> dict[str, list[float]]:
    """Run ``episodes`` episodes of ``multiagent`` in ``env``; return each agent's returns.

    Useful to evaluate trained agents against others (e.g. an ``IndependentMultiagent``
    of a test agent and a ``RandomAgent``). ``seed`` seeds the first reset.
    """
    returns: dict[str, list[float]] = defaultdict(list)
    for episode in range(episodes):
        env.reset(seed=seed if episode == 0 else None)
        episode_returns: dict[str, float] = defaultdict(float)
        for agent in env.agent_iter():
            state = env.last()
            episode_returns[agent] += float(state.reward)
            action = multiagent.act(state)
            env.step(None if state.done else action)
        for agent, value in episode_returns.items():
            returns[agent].append(value)
    return dict(returns)


class MultiagentEnvExperiment:
    """Trains a multi-agent preset in a ``MultiagentEnvironment`` and evaluates it.

    Args:
        preset: a built multi-agent preset (e.g. ``IndependentMultiagentPreset``); its
            ``agent(logger=...)`` receives a dict of one logger per agent.
        env: the environment.
        name: run name (defaults to the preset's name).
        train_steps: the training budget in frames (one frame = one agent's turn).
        logdir: root directory of run directories.
        quiet: no progress bar.
        render: render the environment during training.
        verbose: write losses and debugging statistics to TensorBoard.
        logger: a logger to use instead of a new ``ExperimentLogger``.
        seed: seeds torch and the environment for a reproducible run.
    """

    def __init__(
        self,
        preset: Preset,
        env: MultiagentEnvironment,
        name: str | None = None,
        train_steps: float = math.inf,
        logdir: str = "runs",
        quiet: bool = False,
        render: bool = False,
        verbose: bool = True,
        logger: Any = None,
        seed: int | None = None,
    ):
        if seed is not None:
            seed_everything(seed)
        self.preset = preset
        self.env = env
        self.name = name or preset.name
        self.train_steps = train_steps
        self.quiet = quiet
        self.render = render
        self.seed = seed
        self.logger = logger or ExperimentLogger(self.name, env.name, logdir, verbose)
        self.agent_loggers = {
            agent: ExperimentLogger(f"{self.name}.{agent}", env.name, self.logger.log_dir, verbose)
            for agent in env.possible_agents
        }
        self.agent = preset.agent(logger=self.agent_loggers, train_steps=train_steps)
        self.test_returns: dict[str, list[float]] = {}

    @property
    def frame(self) -> int:
        """Agent turns taken so far."""
        return self.logger.frame

    @property
    def episode(self) -> int:
        """Training episodes completed so far."""
        return self.logger.episode

    def train(self, frames: float = math.inf, episodes: float = math.inf) -> None:
        """Train until ``frames`` frames or ``episodes`` episodes have passed."""
        if math.isinf(frames) and math.isinf(episodes):
            raise ValueError("train() needs a budget: frames=... or episodes=...")
        total = int(frames) if math.isfinite(frames) else 0
        description = f"{self.name} on {self.env.name}"
        with TrainingProgress(total, description, quiet=self.quiet) as self._progress:
            while self.logger.frame < frames and self.logger.episode < episodes:
                self._run_training_episode()

    def _reset(self) -> None:
        if self.seed is not None and self.logger.episode == 0:
            self.env.reset(seed=self.seed)
        else:
            self.env.reset()

    def _run_training_episode(self) -> None:
        self._reset()
        returns: dict[str, float] = defaultdict(float)
        for agent in self.env.agent_iter():
            state = self.env.last()
            returns[agent] += float(state.reward)
            self.agent_loggers[agent].frame = self.logger.frame
            self._step(state)
        self._log_training_episode(returns)

    def _step(self, state: Any) -> None:
        """The selected agent acts on ``state``; the environment advances one turn."""
        if self.render:
            self.env.render()
        action = self.agent.act(state)
        self.env.step(None if state.done else action)
        self.logger.frame += 1
        self._progress.update(self.logger.frame, self.logger.episode, self.logger.mean_return100)

    def _log_training_episode(self, returns: dict[str, float]) -> None:
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

    def close(self) -> None:
        """Close the loggers and the environment."""
        self.close_loggers()
        self.env.close()
