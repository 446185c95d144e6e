"""The warnings about a run's budget (``train_steps``), on every runtime."""

from __future__ import annotations

import logging
import math
from typing import Any

from looprl.core.suggest import warn_once

__all__ = ["warn_budget_extended", "warn_never_trained", "warn_past_budget", "warn_trained"]

log = logging.getLogger(__name__)


def warn_trained(experiment: Any, frames: float) -> None:
    """After ``train``: warn of an episode-count call past the budget, and of no trainer step."""
    if math.isinf(frames):
        warn_budget_extended(experiment.frame, experiment.train_steps)
    learner = getattr(experiment.agent.unwrapped, "learner", None)
    if getattr(learner, "updates", None) != 0 or not experiment.frame >= experiment.train_steps:
        return
    warn_never_trained(experiment.name, experiment.env.name, experiment.frame)


def warn_never_trained(name: str, env: str, frames: int) -> None:
    """Warn (once per run) that a run's budget ended before its first update."""
    warn_once(log, "%s on %s: the agent never trained in its %d frames (its first update needs "
              "more: replay_start_size and update_frequency, n_envs x n_steps or "
              "min_batch_size); its results are those of the untrained agent. Raise the frames "
              "or lower those hyperparameters", name, env, frames, key=f"untrained {name} {env}")


def warn_past_budget(experiment: Any, frames: float) -> None:
    """``warn_budget_extended`` before a ``train`` call starting past the budget or exceeding it."""
    planned, frame = experiment.train_steps, experiment.frame
    if math.isfinite(frames) and frames > frame and (frame >= planned or frames > frame + planned):
        warn_budget_extended(frames, planned)


def warn_budget_extended(frames: float, planned: float) -> None:
    """Warn (once per run) that training past the ``planned`` budget ends the schedules."""
    if frames > planned:
        warn_once(log, "Training to %d frames goes past the %d its schedules were planned "
                  "over (train_steps; a resumed run's first budget): the learning rate and "
                  "clipping of the on-policy presets (which reach 0), epsilon and replay beta "
                  "stay at their end values after frame %d, so an on-policy preset trains "
                  "nothing more; start a new run with frames=%d (train_steps=%d) to anneal over "
                  "it", frames, planned, planned, frames, frames, key="past its budget")
