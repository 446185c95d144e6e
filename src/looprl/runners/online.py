"""``OnlineRunner``: train one agent, then evaluate it (Mighty's basic runner)."""

from __future__ import annotations

from typing import Any

from looprl.runners.base import Runner


class OnlineRunner(Runner):
    """Trains a fresh agent for ``num_steps`` steps, then evaluates it.

    Args:
        agent: a preset builder (``looprl.presets.classic_control.ppo``).
        env: an environment or a Gymnasium id.
        num_steps: the training budget (the agent's schedules anneal over it).
        resume_from: a checkpoint (or a run directory holding one) to continue up to
            ``num_steps`` steps, instead of a fresh agent.
        **kwargs: ``Runner``'s (``seed``, ``logdir``, ``meta``, ``device``, ``quiet``,
            ``eval_episodes``, ``checkpoint_every``).
    """

    def __init__(self, agent: Any, env: Any, num_steps: int = 100_000,
                 resume_from: str | None = None, **kwargs: Any):
        super().__init__(agent, env, **kwargs)
        if int(num_steps) <= 0:
            raise ValueError(f"num_steps must be positive, got {num_steps!r}")
        self.num_steps = int(num_steps)
        self.resume_from = resume_from

    def run(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Train (or continue training), then evaluate: ``(train_results, eval_results)``
        with the keys of ``looprl.runners.base`` (``TRAIN_KEYS``, ``EVAL_KEYS``)."""
        if self.resume_from is not None:
            self.resume(self.resume_from)
        else:
            self.new_agent(train_steps=self.num_steps)
        train_results = self.train(max(self.num_steps - self.experiment.frame, 0))
        eval_results = self.evaluate()
        return train_results, eval_results
