"""``RunRecords``: what an ``Experiment`` keeps of its run besides the loop: its counters
(``frame``, ``episode``), the logging of episodes, ``log/*`` scalars and test returns, the
first non-finite return (to explain a divergence), and its checkpoints."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from looprl.experiments.checkpoint import save_checkpoint
from looprl.meta.hub import MetaHub

__all__ = ["RunRecords"]


class RunRecords:
    """The records of an ``Experiment`` (its base): it sets ``logger``, ``runner``, ``_hp``,
    ``_progress``, ``_nonfinite_episode``, ``_next_checkpoint``, ``checkpoint_every`` and
    ``checkpoint_replay`` and the ``training_env``."""

    logger: Any
    runner: Any
    training_env: Any

    def __getstate__(self) -> dict[str, Any]:
        """For checkpoints: everything but the progress display."""
        state = dict(self.__dict__)
        state.pop("_progress", None)
        state.pop("_hp", None)  # getters and setters (closures), found again by train()
        return state

    def _maybe_checkpoint(self) -> None:
        """Save a checkpoint when ``checkpoint_every`` frames have passed since the last."""
        if self.logger.frame >= self._next_checkpoint:
            every = self.checkpoint_every
            self._next_checkpoint = (self.logger.frame // every + 1) * every
            save_checkpoint(self, replay=self.checkpoint_replay)

    def prepare_checkpoint(self) -> None:
        """Let the training environment prepare for a checkpoint (Atari fixes its next
        reset's seed)."""
        prepare = getattr(self.training_env, "prepare_checkpoint", None)
        if prepare is not None:
            prepare(self.frame)

    @property
    def frame(self) -> int:
        """Environment steps taken so far."""
        return self.logger.frame

    @property
    def episode(self) -> int:
        """Training episodes completed so far."""
        return self.logger.episode

    def _log_training_episode(self, episode_return: float) -> None:
        self._check_finite(episode_return)
        self.logger.add_episode_return(float(episode_return))
        self.logger.episode += 1
        if self.logger.verbose:
            self.logger.add_hyperparameters({k: h.get() for k, h in self._hp.items()})

    def _check_finite(self, episode_return: float) -> None:
        """Remember the first episode whose return is NaN or inf (to explain a divergence)."""
        if self._nonfinite_episode is None and not math.isfinite(episode_return):
            self._nonfinite_episode = (self.logger.episode + 1, self.logger.frame)

    def _log_meta_scalars(self, hub: MetaHub, logger: Any) -> None:
        """Hand ``logger`` the ``log/*`` scalars ``hub``'s components wrote."""
        for key, value in hub.log_scalars().items():
            logger.add_log(key[4:], value)

    def _log_test(self, returns: list[float]) -> None:
        self.test_returns = returns
        self.logger.add_test_returns(returns)

    def _update_progress(self) -> None:
        self._progress.update(self.logger.frame, self.logger.episode, self.logger.mean_return100)

    def close_loggers(self) -> None:
        """Close the experiment's loggers (safe to call more than once)."""
        self.logger.close()

    def _running_return_nonfinite(self) -> bool:
        """Whether an unfinished training episode has a non-finite return so far."""
        return self.runner is not None and not np.isfinite(self.runner.running_returns).all()
