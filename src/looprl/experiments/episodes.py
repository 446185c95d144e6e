"""What every experiment loop uses besides the loop: seeding (``seed_everything``), the live
dashboard's lines (``dashboard``), the one loop that plays episodes through the collector
(``play_episodes``: watching, a saved policy's episodes), the action of seed 003's ``Agent`` as
a row (``single_action``), seed 003's turn loop of a multi-agent game (``play_episode``, for
``play``), and the evaluation episodes' step cap (``episode_cap``, from
``looprl.environments.gym_helpers``)."""

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
from looprl.environments.multiagent import MultiagentEnvironment

__all__ = ["DEFAULT_EPISODE_CAP", "dashboard", "episode_cap", "play_episode", "play_episodes",
           "seed_everything", "single_action"]

log = logging.getLogger(__name__)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global random number generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def dashboard(logger: Any, hyperparameters: dict[str, Any]) -> Callable[[], list[str]]:
    """The live dashboard's lines under the progress bar: the last value of each loss the
    logger received, and the agent's current ``hp/*`` values."""

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
    """``agent``'s action for the one row of ``states`` (seed 003's ``Agent.act`` of a
    ``State``), as a batch of one."""
    return torch.as_tensor(agent.act(states[0])).unsqueeze(0)


def play_episodes(runner: EnvRunner, act: Callable[[RolloutRequest], RolloutResult],
                  episodes: int, show: Callable[[], Any] = lambda: None,
                  max_steps: float = math.inf) -> list[Episode]:
    """Play ``episodes`` episodes on ``runner`` (one env copy, from the state it is in),
    ``act`` answering each of its requests; their ``Episode`` s (``returns``: each agent's).

    ``show()`` runs at the first state and after every step (so once per state); an episode
    is cut after ``max_steps`` steps, with a warning, and the next one begins.
    """
    played: list[Episode] = []
    steps, returns = 0, np.zeros(runner.agent_count)  # steps < 0: the next step resets
    show()
    while len(played) < episodes:
        request = runner.request()
        if request is not None:  # (each agent's return so far, for a cut)
            reward = runner.states().reward.numpy()
            agent = np.zeros(len(reward), int) if request.agent is None else request.agent
            np.add.at(returns, agent, reward)
        if steps == max_steps:
            log.warning("Episode cut after %d steps (max_steps)", max_steps)
            played.append(_cut(runner, steps, returns))
            if len(played) == episodes:
                break
            steps = -1
        runner.record(0, None if request is None else act(request))
        runner.segments()  # (not kept)
        runner.advance()
        ended = runner.pop_episodes()
        played += ended
        steps = -1 if ended else 0 if steps < 0 else steps + 1
        returns *= steps > 0
        show()
    return played[:episodes]


def _cut(runner: EnvRunner, steps: int, returns: np.ndarray) -> Episode:
    """The episode in progress, ended here (the runner's next step resets its copy)."""
    runner.truncate()
    each = tuple(float(r) for r in returns) if runner.agent_count > 1 else ()
    return Episode(float(runner.running_returns[0]), steps, 0, each)


def play_episode(agent: Any, env: MultiagentEnvironment, max_steps: float = math.inf,
                 seed: int | None = None) -> dict[str, float]:
    """Play one game of ``agent`` (a ``Multiagent``) in ``env`` from a reset (with ``seed``,
    if given), seed 003's turn-by-turn loop (``play``); each agent's return. A game is cut
    after ``max_steps`` turns."""
    env.reset() if seed is None else env.reset(seed=seed)
    returns = dict.fromkeys(env.possible_agents, 0.0)
    for turn, name in enumerate(env.agent_iter()):
        if turn == max_steps:
            log.warning("Episode cut after %d turns (max_steps)", max_steps)
            break
        state = env.last()
        returns[name] += float(state.reward)
        env.step(None if state.done else agent.act(state))
    return returns
