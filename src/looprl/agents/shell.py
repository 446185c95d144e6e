"""Seed 003's ``Agent.act(state)`` as a facade over the two units of the shell, an ``Actor``
(policy and adder) and a ``Learner`` (buffer, schedule, trainer)."""

from __future__ import annotations

import math
from typing import Any

import torch

from looprl.agents.actor import Actor
from looprl.agents.learner import Learner, ReplaySchedule
from looprl.approximation.schedules import ProgressLR
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
from looprl.core.observations import check_default_dtype
from looprl.core.state import StateArray
from looprl.environments.base import wrapped_seed
from looprl.memory.atari_replay import frame_ring
from looprl.memory.n_step import NStepReplayBuffer
from looprl.memory.samples import OnPolicyBuffer
from looprl.memory.segments import SegmentBuffer

__all__ = ["AllForm", "LearningAgent", "ReplayAgent", "SegmentAgent", "all_replay", "seed_units"]


def seed_units(seed: int, actor: Actor | None = None, learner: Learner | None = None) -> None:
    """Seed an ``actor`` and a ``learner`` with ``wrapped_seed(seed)``, as every runtime does."""
    for unit in (actor, learner):
        if unit is not None:
            unit.seed(wrapped_seed(seed))


def _check_units(agent: Any, policy: Any, trainer: Any) -> None:
    """A one-line ``TypeError`` unless ``policy`` is a ``Policy`` and ``trainer`` a ``Trainer``."""
    if not (isinstance(policy, Policy) and isinstance(trainer, Trainer)):
        raise TypeError(f"{type(agent).__name__} takes looprl's (policy, trainer, ...), a Policy "
                        f"and a Trainer, got {type(policy).__name__} and "
                        f"{type(trainer).__name__}: ALL's agent classes (DQN, DDQN, C51, "
                        "Rainbow, VQN, VSarsa, DDPG, SAC, A2C, PPO, VAC, VPG) take ALL's "
                        "arguments; ALL has no TD3 agent: build it and the others from a preset "
                        "(docs/coming-from-all.md#agents)")


class AllForm:
    """An agent class of two argument forms: looprl's ``(policy, trainer, ...)`` (a ``Trainer``
    second) go to ``_units`` (the shell's constructor), ALL's to ``_from_all``."""

    def __init__(self, *args: Any, **kwargs: Any):
        if isinstance(args[1] if len(args) > 1 else kwargs.get("trainer"), Trainer):
            self._units(*args, **kwargs)
        else:
            self._from_all(*args, **kwargs)

    def _units(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    def _from_all(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError


def all_replay(agent: str, replay_buffer: Any, discount_factor: float) -> tuple[Any, int, float]:
    """ALL's ``replay_buffer`` and ``discount_factor`` as ``(buffer, n_step, discount per step)``;
    an ``NStepReplayBuffer(n, gamma, buffer)`` needs ``discount_factor=gamma ** n``, as ALL's."""
    if not isinstance(replay_buffer, NStepReplayBuffer):
        return replay_buffer, int(getattr(replay_buffer, "n_step", 1)), discount_factor
    n, gamma = replay_buffer.steps, replay_buffer.discount_factor
    if not math.isclose(discount_factor, gamma ** n):
        raise ValueError(f"{agent}'s discount_factor ({discount_factor}) bootstraps the {n}-step "
                         f"returns of NStepReplayBuffer({n}, {gamma}, ...): give "
                         f"discount_factor={gamma ** n:.6g} ({gamma} ** {n}), as ALL's presets do")
    return replay_buffer.buffer, n, gamma


class LearningAgent(AgentBase):
    """``act`` over ``actor`` (whose adder cuts the segments) and ``learner``."""

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
        """The policy's action for ``state``, written as one row; the learner steps as due."""
        if torch.get_default_dtype() is not torch.float32:  # (no message built each step)
            check_default_dtype(f"{type(self).__name__}.act")
        self._fit(len(state) if isinstance(state, StateArray) else 1)
        action = self.actor.act(state)
        for segment in self.actor.segments():
            self.train(segment)
        return action

    def eval(self, state: Any) -> Any:
        """ALL's ``agent.eval(state)``: the policy's evaluation action; nothing is learned."""
        return Actor(self.policy, evaluation=True).act(state)

    def _fit(self, rows: int) -> None:
        """Widen the adder (and on-policy batches) to the first batch; later ones must match."""
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
            self._stretch_budget(self.learner.buffer.batch_streams / rows)
            self.learner.buffer.batch_streams = rows

    def _stretch_budget(self, factor: float) -> None:
        """Scale the trainer's and each ``ProgressLR``'s ``total_updates`` by ``factor``."""
        if hasattr(self.trainer, "total_updates"):
            self.trainer.total_updates *= factor
        parts = {**self.policy.approximations(), **self.trainer.approximations()}
        for approximation in parts.values():
            schedule = getattr(approximation, "lr_scheduler", None)
            if isinstance(schedule, ProgressLR):
                schedule.total_updates *= factor

    def train(self, segment: SampleBatch) -> TrainerStepResult | None:
        """Put ``segment`` (``[T + 1, B]``), take the steps due; the last result (or ``None``).
        Gradients are on whatever the caller's mode (``no_grad``, ``inference_mode``)."""
        if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
            with torch.inference_mode(False), torch.enable_grad():  # (5 us: only where needed)
                return self.train(segment)
        learner = self.learner
        learner.put(segment if learner.replay else segment.to(self.actor.device))
        return learner.train()

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The learner's ``hp/*`` keys: the policy's, the trainer's and the schedule's."""
        return self.learner.hyperparameters()

    @property
    def discount_factor(self) -> float:
        """ALL's ``agent.discount_factor``: the trainer's, to the power of its n-step returns
        (ALL's ``gamma ** n`` beside an ``NStepReplayBuffer``)."""
        trainer = self.trainer
        return trainer.discount_factor ** getattr(trainer, "n_step", 1)


class ReplayAgent(LearningAgent, Agent):
    """A replay agent (single environment): the learner trains as its ``ReplaySchedule`` says
    (``minibatch_size``: its ``batch_size``, ``replay_start_size``: its ``min_size``)."""

    def __init__(self, policy: Policy, trainer: Trainer, replay_buffer: Any,
                 minibatch_size: int = 32, replay_start_size: int = 1000,
                 update_frequency: int = 1, gradient_steps: int = 1,
                 logger: Logger | None = None, log_every: int | None = None):
        _check_units(self, policy, trainer)
        schedule = ReplaySchedule(minibatch_size, replay_start_size, update_frequency,
                                  gradient_steps)
        super().__init__(Actor(policy, SegmentBuffer(schedule.segment_length, 1)),
                         Learner(trainer, replay_buffer, schedule, logger, log_every))
        self.replay_buffer = replay_buffer  # (the seed's name)

    @property
    def minibatch_size(self) -> int:
        """Transitions per gradient step (the schedule's ``batch_size``)."""
        return self.learner.schedule.batch_size

    @property
    def replay_start_size(self) -> int:
        """Transitions stored before the first update (the schedule's ``min_size``)."""
        return self.learner.schedule.min_size

    @property
    def update_frequency(self) -> int:
        """Transitions per update (the schedule's)."""
        return self.learner.schedule.update_frequency

    def store_frames_once(self) -> None:
        """ALL's ``DeepmindAtariBody(agent, lazy_frames=True)``: an empty
        ``ExperienceReplayBuffer`` or ``PrioritizedReplayBuffer`` becomes the Atari frame ring
        of its size and settings (``memory.atari_replay.frame_ring``), for stacked frames."""
        ring = self.learner.buffer = self.buffer = frame_ring(self.learner.buffer)
        if isinstance(self.replay_buffer, NStepReplayBuffer):
            self.replay_buffer.buffer = ring
        else:
            self.replay_buffer = ring


class SegmentAgent(LearningAgent):
    """An on-policy agent: the learner steps on each segment ``adder`` completes."""

    def __init__(self, policy: Policy, trainer: Trainer, adder: SegmentBuffer,
                 logger: Logger | None = None):
        _check_units(self, policy, trainer)
        super().__init__(Actor(policy, adder),
                         Learner(trainer, OnPolicyBuffer(len(adder.t)), logger=logger))
