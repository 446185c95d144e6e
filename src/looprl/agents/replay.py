"""``ReplayAgent``: the base of the local agents that learn from a replay buffer (DQN and
its family, DDPG, TD3, SAC): their parts and when they train."""

from __future__ import annotations

from typing import Any

from looprl.core import (
    Agent,
    DummyLogger,
    Hyperparameter,
    Logger,
    Policy,
    State,
    Trainer,
    parts_hyperparameters,
)

__all__ = ["ReplayAgent"]


class ReplayAgent(Agent):
    """Local replay agent (single environment): ``act`` stores the transition, trains, then
    picks the next action. Nothing is trained for the first ``replay_start_size`` steps,
    then ``gradient_steps`` every ``update_frequency`` steps; the priorities a step returns go
    back to the buffer's ``update_priorities``.

    Args:
        policy, trainer: the algorithm.
        replay_buffer: an ``ExperienceReplayBuffer`` (or a prioritized/n-step one).
        minibatch_size: transitions per gradient step.
        replay_start_size: steps collected before training starts.
        update_frequency: steps between training phases.
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
        self.policy = policy
        self.trainer = trainer
        self.replay_buffer = replay_buffer
        self.minibatch_size = minibatch_size
        self.replay_start_size = replay_start_size
        self.update_frequency = update_frequency
        self.gradient_steps = gradient_steps
        self._state: State | None = None
        self._action: Any = None
        self._frames_seen = 0
        self.logger = logger or DummyLogger()
        self.log_every = log_every
        self._updates = 0

    @property
    def buffer(self) -> Any:
        """The replay buffer (``replay_buffer``, the seed's name)."""
        return self.replay_buffer

    def act(self, state: State) -> Any:
        self.replay_buffer.store(self._state, self._action, state)
        self._train()
        self._state = state
        self._action = self._choose(state)
        return self._action

    def _choose(self, state: State) -> Any:
        """The action for ``state``: the policy's."""
        return self.policy.act(state)

    def _train(self) -> None:
        if not self._should_train():
            return
        buffer = self.replay_buffer
        for _ in range(self.gradient_steps):
            result = self.trainer.learn(buffer.sample_batch(self.minibatch_size))
            if result.priorities is not None:
                buffer.update_priorities(result.priorities)
            self._updates += 1
            if self.logger.verbose and self._updates % self.log_every == 0:
                for name, value in result.stats.items():
                    self.logger.add_info(name, value)

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The policy's and trainer's keys, and the update ratio it owns: ``hp/batch_size``,
        ``hp/update_frequency`` and ``hp/gradient_steps``."""
        return parts_hyperparameters(
            self.policy, self.trainer,
            batch_size=Hyperparameter.attribute(self, "minibatch_size", int),
            update_frequency=Hyperparameter.attribute(self, "update_frequency", int),
            gradient_steps=Hyperparameter.attribute(self, "gradient_steps", int),
        )

    def _should_train(self) -> bool:
        """Count this step; whether a training phase is due after it."""
        self._frames_seen += 1
        return (
            self._frames_seen > self.replay_start_size
            and self._frames_seen % self.update_frequency == 0
            and len(self.replay_buffer) > 0
        )
