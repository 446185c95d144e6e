"""What every experiment loop uses besides the loop: seeding (``seed_everything``), the live
dashboard's lines (``dashboard``), seed 003's episode loop (``play_episode``: watching, the
multi-agent games), and the evaluation episodes' step cap (``episode_cap``, from
``looprl.environments.gym_helpers``)."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from looprl.environments.gym_helpers import DEFAULT_EPISODE_CAP, episode_cap
from looprl.environments.multiagent import MultiagentEnvironment

__all__ = ["DEFAULT_EPISODE_CAP", "dashboard", "episode_cap", "play_episode", "seed_everything"]

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


def play_episode(agent: Any, env: Any, show: Callable[[], Any] = lambda: None,
                 max_steps: float = math.inf, seed: int | None = None) -> Any:
    """Play one episode of ``agent`` in ``env`` from a reset (with ``seed``, if given);
    return its return, or ``{agent: return}`` in a ``MultiagentEnvironment`` (seed 003's
    turn-by-turn loop). ``show()`` runs before every step (turn) and after the last step; an
    episode is cut after ``max_steps`` steps (turns)."""
    state = env.reset() if seed is None else env.reset(seed=seed)
    if isinstance(env, MultiagentEnvironment):
        returns = dict.fromkeys(env.possible_agents, 0.0)
        for turn, name in enumerate(env.agent_iter()):
            show()
            if turn == max_steps:
                log.warning("Episode cut after %d turns (max_steps)", max_steps)
                break
            state = env.last()
            returns[name] += float(state.reward)
            env.step(None if state.done else agent.act(state))
        return returns
    episode_return, steps = 0.0, 0
    show()
    while not state.done:
        if steps == max_steps:
            log.warning("Episode cut after %d steps (max_steps)", max_steps)
            break
        state = env.step(agent.act(state))
        episode_return += float(state.reward)
        steps += 1
        show()
    return episode_return
