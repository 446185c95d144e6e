"""Seed 003's ``Agent.act(state)`` as a facade over the two units of the shell: an ``Actor``
(the policy and an adder that writes the rows) and a ``Learner`` (the buffer, the schedule and
the trainer). ``act`` feeds the Actor, hands the Learner each segment the adder completes,
steps it as its schedule says, and returns the action.

The local experiments do not call ``act``: their collector (``looprl.collector.EnvRunner``)
writes the same rows into its own adder, cut the same way (``LearningAgent.adder``'s
``segment_length`` and ``whole_episodes``), and calls ``train`` on each segment, as Ray's
actor workers hand them to the trainer worker's ``Learner``.

* ``ReplayAgent`` -- the replay algorithms (the DQN family, DDPG, TD3, SAC): segments of a
  divisor of ``update_frequency`` transitions into the replay, trained by a
  ``ReplaySchedule`` at the same transitions as one by one.
* ``SegmentAgent`` -- the on-policy ones (PPO, PPG, A2C, VAC, VPG, VQN, VSarsa): fresh
  segments into an ``OnPolicyBuffer``, one trainer step per batch.
"""

from __future__ import annotations

from typing import Any

from looprl.agents.actor import Actor
from looprl.agents.learner import Learner, ReplaySchedule
from looprl.core import (
    Agent,
    AgentBase,
    Hyperparameter,
    Logger,
    Policy,
    SampleBatch,
    Trainer,
    TrainerStepResult,
)
from looprl.core.state import StateArray
from looprl.memory.samples import OnPolicyBuffer
from looprl.memory.segments import SegmentBuffer

__all__ = ["LearningAgent", "ReplayAgent", "SegmentAgent", "seed_units"]


def seed_units(seed: int, actor: Actor | None = None, learner: Learner | None = None) -> None:
    """Seed an ``actor`` and a ``learner`` with ``seed``: each draws from random numbers of
    its own (``Actor.seed``, ``Learner.seed``), which do not depend on the process they
    share. Every runtime seeds a run's units this way (locally in one process, on Ray in the
    actor and trainer workers), so that one seed gives one run."""
    for unit in (actor, learner):
        if unit is not None:
            unit.seed(seed)


class LearningAgent(AgentBase):
    """``act`` over ``actor`` and ``learner`` (see the module docstring).

    Args:
        actor: the acting unit; its adder (a ``SegmentBuffer``) cuts the segments.
        learner: the learning unit.
    """

    def __init__(self, actor: Actor, learner: Learner):
        if actor.adder is None:
            raise ValueError("a LearningAgent's actor needs an adder (a SegmentBuffer) to "
                             "write the rows its learner takes")
        self.actor, self.learner = actor, learner
        self.policy, self.trainer = actor.policy, learner.trainer  # (the units' parts)
        self.buffer = getattr(learner, "buffer", None)  # (independent learners: one each)

    @property
    def adder(self) -> SegmentBuffer:
        """The actor's ``SegmentBuffer``: the collector cuts segments as it does."""
        return self.actor.adder

    def act(self, state: Any) -> Any:
        """The policy's action for ``state`` (a ``State``, or each row of a ``StateArray``),
        written as one row; the learner takes each finished segment and steps as due."""
        self._fit(len(state) if isinstance(state, StateArray) else 1)
        action = self.actor.act(state)
        for segment in self.actor.segments():
            self.train(segment)
        return action

    def _fit(self, rows: int) -> None:
        """Make the adder (and an on-policy learner's batches) as wide as the first batch
        the agent acts on, whatever its preset's ``n_envs`` (as ALL's agents take any batch);
        ``ValueError`` in one line for another width later."""
        adder = self.actor.adder
        if rows == len(adder.t):
            return
        if adder.rows is not None:
            raise ValueError(f"{type(self).__name__} acts on batches of {len(adder.t)} rows (its "
                             f"first), got {rows}: give one agent batches of one size (build "
                             "another agent from the preset for other environments)")
        self.actor.adder = SegmentBuffer(adder.segment_length, rows, adder.whole_episodes,
                                         adder.first_stream)
        if not self.learner.replay:
            self.learner.buffer.batch_streams = rows

    def train(self, segment: SampleBatch) -> TrainerStepResult | None:
        """Give ``segment`` (``[T + 1, B]`` rows) to the learner, which takes the steps its
        schedule says are due; the last one's result (``None``: none was due)."""
        learner = self.learner
        learner.put(segment if learner.replay else segment.to(self.actor.device))
        return learner.train()

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The learner's ``hp/*`` keys: the policy's, the trainer's and the schedule's."""
        return self.learner.hyperparameters()


class ReplayAgent(LearningAgent, Agent):
    """A replay agent (single environment): every ``act`` writes one row, the rows go into
    the replay as transitions (none out of a terminal state) in segments of the schedule's
    ``segment_length`` (a divisor of ``update_frequency``), and the learner trains as its
    ``ReplaySchedule`` says: nothing for the first ``replay_start_size``
    transitions, then ``gradient_steps`` steps every ``update_frequency`` transitions, the
    priorities a step returns going back to the buffer.

    Args:
        policy, trainer: the algorithm.
        replay_buffer: an ``ExperienceReplayBuffer`` (or a prioritized/n-step/Atari one).
        minibatch_size: transitions per gradient step.
        replay_start_size: transitions collected before training starts.
        update_frequency: transitions between training phases.
        gradient_steps: gradient steps per training phase.
        logger: receives the trainer's statistics every ``log_every`` gradient steps.
    """

    def __init__(self, policy: Policy, trainer: Trainer, replay_buffer: Any,
                 minibatch_size: int = 32, replay_start_size: int = 1000,
                 update_frequency: int = 1, gradient_steps: int = 1,
                 logger: Logger | None = None, log_every: int = 1000):
        schedule = ReplaySchedule(minibatch_size, replay_start_size, update_frequency,
                                  gradient_steps)
        super().__init__(Actor(policy, SegmentBuffer(schedule.segment_length, 1)),
                         Learner(trainer, replay_buffer, schedule, logger, log_every))
        self.replay_buffer = replay_buffer  # (the seed's name)

    @property
    def minibatch_size(self) -> int:
        """Transitions per gradient step (the schedule's ``batch_size``, ``hp/batch_size``)."""
        return self.learner.schedule.batch_size


class SegmentAgent(LearningAgent):
    """An on-policy agent: each segment its adder completes (of ``streams`` columns) goes to
    the learner, which steps on it.

    Args:
        policy, trainer: the algorithm.
        adder: the ``SegmentBuffer`` that cuts the segments.
        logger: receives the trainer's statistics.
    """

    def __init__(self, policy: Policy, trainer: Trainer, adder: SegmentBuffer,
                 logger: Logger | None = None):
        super().__init__(Actor(policy, adder),
                         Learner(trainer, OnPolicyBuffer(len(adder.t)), logger=logger))
