"""What every experiment loop uses: seeding, the live dashboard's lines, the one loop that
plays episodes through the collector (``play_episodes``: every evaluation and watch) and the
evaluation episodes' step cap (``episode_cap``)."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from looprl.collector import EnvRunner, Episode
from looprl.core import RolloutRequest, RolloutResult, StateArray
from looprl.environments.gym_helpers import DEFAULT_EPISODE_CAP, episode_cap

__all__ = ["DEFAULT_EPISODE_CAP", "check_episodes", "dashboard", "episode_cap", "play_episodes",
           "seed_everything", "single_action"]

log = logging.getLogger(__name__)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global random number generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def dashboard(logger: Any, hyperparameters: dict[str, Any]) -> Callable[[], list[str]]:
    """The dashboard's lines: the last value of each loss and the current ``hp/*`` values."""

    def number(value: Any) -> str:
        try:
            return f"{float(value):.4g}"
        except (TypeError, ValueError):
            return str(value)

    def lines() -> list[str]:
        losses = getattr(logger, "last_losses", {})
        shown = []
        if losses:
            shown.append("  ".join(f"loss/{k} {number(v)}" for k, v in sorted(losses.items())))
        if hyperparameters:
            shown.append("  ".join(f"{k} {number(h.get())}"
                                   for k, h in sorted(hyperparameters.items())))
        return shown

    return lines


def single_action(agent: Any, states: StateArray) -> torch.Tensor:
    """Seed 003's ``agent.act`` of the one ``State`` in ``states``, as a batch of one."""
    return torch.as_tensor(agent.act(states[0])).unsqueeze(0)


def play_episodes(runner: EnvRunner, act: Callable[[RolloutRequest], RolloutResult],
                  episodes: int, show: Callable[[], Any] = lambda: None,
                  max_steps: float = math.inf) -> list[Episode]:
    """Play ``episodes`` episodes on ``runner`` (from the state it is in), ``act`` answering
    each of its requests; their ``Episode`` s, as they end.

    Each env copy plays its share (the first ``episodes % n`` copies one more), so that short
    episodes are not favoured. ``show()`` runs once per state. An episode is cut after
    ``max_steps`` steps, with a warning, and counted; every copy then starts a new episode.
    """
    check_episodes(episodes)
    copies = len(runner.running_returns)
    if runner.agent_count > 1 and copies > 1:
        raise ValueError(f"play_episodes plays a game of {runner.agent_count} agents in one env "
                         f"copy, got {copies}: build the EnvRunner with n_envs=1")
    quota = np.full(copies, episodes // copies)
    quota[: episodes % copies] += 1
    played: list[Episode] = []
    steps = np.zeros(copies, int)  # (< 0: the next step resets the copy)
    show()
    while quota.any():
        request = runner.request()
        long = (steps >= max_steps) & (quota > 0)
        if long.any():
            played += _cut(runner, np.flatnonzero(long), steps, max_steps)
            quota -= long
            if not quota.any():
                break
            steps[:] = -1
        runner.record(0, None if request is None else act(request))
        runner.segments()  # (not kept; none from a runner built without a buffer)
        runner.advance()
        steps = np.where(steps < 0, 0, steps + 1)
        for episode in runner.pop_episodes():  # (counted while its copy has a share left)
            steps[episode.env] = -1
            if quota[episode.env] > 0:
                played.append(episode)
                quota[episode.env] -= 1
        show()
    return played


def check_episodes(episodes: Any, caller: str = "play_episodes", least: int = 0) -> None:
    """``ValueError`` unless ``episodes`` is a whole number >= ``least``."""
    if isinstance(episodes, bool) or not isinstance(episodes, int | np.integer) or (
            episodes < least):
        raise ValueError(f"{caller} plays a whole number of episodes >= {least}, got "
                         f"{episodes!r:.40}")


def _cut(runner: EnvRunner, long: np.ndarray, steps: np.ndarray, max_steps: float
         ) -> list[Episode]:
    """The episodes in progress of copies ``long``, ended here (all copies reset next)."""
    unit = "turns" if runner.agent_count > 1 else "steps"
    name = getattr(runner.envs, "name", None) or type(runner.envs[0]).__name__
    log.warning("an episode of %s was cut after %d %s: it ran %d %s without ending (max_steps)",
                name, max_steps, unit, max_steps, unit)
    runner.truncate()
    running, each = runner.running_returns, runner.running_agent_returns
    several = runner.agent_count > 1
    return [Episode(float(running[i]), int(steps[i]), int(i),
                    tuple(float(r) for r in each[i]) if several else ()) for i in long]
