"""``ReplayAgent``: the base of the local agents that learn from a replay buffer (DQN and
its family, DDPG, TD3, SAC): ``act`` (seed 003) as a facade over a policy and a ``Learner``."""

from __future__ import annotations

from typing import Any

from looprl.agents.learner import Learner, ReplaySchedule
from looprl.core import Agent, Hyperparameter, Logger, Policy, State, Trainer

__all__ = ["ReplayAgent"]


class ReplayAgent(Agent):
    """Local replay agent (single environment): ``act`` stores the transition in its
    ``learner``, which trains as its ``ReplaySchedule`` says (nothing for the first
    ``replay_start_size`` transitions, then ``gradient_steps`` steps every
    ``update_frequency`` transitions, the priorities a step returns going back to the
    buffer), then picks the next action.

    Args:
        policy, trainer: the algorithm.
        replay_buffer: an ``ExperienceReplayBuffer`` (or a prioritized/n-step one).
        minibatch_size: transitions per gradient step.
        replay_start_size: transitions collected before training starts.
        update_frequency: transitions between training phases.
        gradient_steps: gradient steps per training phase.
        logger: receives the trainer's statistics every ``log_every`` gradient steps.
    """

    def __init__(
        self,
        policy: Policy,
        trainer: Trainer,
        replay_buffer: Any,
        minibatch_size: int = 32,
        replay_start_size: int = 1000,
        update_frequency: int = 1,
        gradient_steps: int = 1,
        logger: Logger | None = None,
        log_every: int = 1000,
    ):
        self.policy, self.trainer = policy, trainer  # (the learner's too)
        self.buffer = self.replay_buffer = replay_buffer  # (the seed's name)
        schedule = ReplaySchedule(minibatch_size, replay_start_size, update_frequency,
                                  gradient_steps)
        self.learner = Learner(trainer, replay_buffer, schedule, logger, log_every)
        self._state: State | None = None
        self._action: Any = None

    @property
    def minibatch_size(self) -> int:
        """Transitions per gradient step (the schedule's ``batch_size``, ``hp/batch_size``)."""
        return self.learner.schedule.batch_size

    def act(self, state: State) -> Any:
        self.learner.store(self._state, self._action, state)
        self.learner.train()
        self._state = state
        self._action = self.policy.act(state)
        return self._action

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The learner's keys: the policy's, the trainer's and the schedule's
        (``hp/batch_size``, ``hp/update_frequency`` and ``hp/gradient_steps``)."""
        return self.learner.hyperparameters()
