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
        **kwargs: ``Runner``'s (``seed``, ``logdir``, ``meta``, ``device``, ``quiet``,
            ``eval_episodes``).
    """

    def __init__(self, agent: Any, env: Any, num_steps: int = 100_000, **kwargs: Any):
        super().__init__(agent, env, **kwargs)
        if int(num_steps) <= 0:
            raise ValueError(f"num_steps must be positive, got {num_steps!r}")
        self.num_steps = int(num_steps)

    def run(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Train, then evaluate: ``(train_results, eval_results)`` with the keys of
        ``looprl.runners.base`` (``TRAIN_KEYS``, ``EVAL_KEYS``)."""
        self.new_agent(train_steps=self.num_steps)
        train_results = self.train(self.num_steps)
        eval_results = self.evaluate()
        return train_results, eval_results
