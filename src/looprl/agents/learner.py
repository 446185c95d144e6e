"""The ``Learner``: the learning half of the shell around every algorithm (Acme's learner), the
same object on every runtime: a buffer, one update schedule, a trainer and the update hooks."""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from looprl.agents.streams import RandomStream
from looprl.core import (
    AgentBase,
    DummyLogger,
    Hyperparameter,
    Logger,
    SampleBatch,
    Trainer,
    TrainerStepResult,
    parts_hyperparameters,
)
from looprl.core.suggest import check_count
from looprl.memory.samples import REPLAY_KINDS, make_sample_buffer

__all__ = ["Learner", "ReplaySchedule", "StepLoop", "buffer_kind", "make_learner"]


@dataclass
class ReplaySchedule:
    """``gradient_steps`` trainer steps of ``batch_size`` transitions at every
    ``update_frequency``-th observation beyond ``min_size``; actors wait ``max_ahead`` ahead."""

    batch_size: int = 32
    min_size: int = 0
    update_frequency: int = 1
    gradient_steps: int = 1
    max_ahead: int = 256

    def __post_init__(self) -> None:
        check_count(batch_size=self.batch_size, update_frequency=self.update_frequency,
                    gradient_steps=self.gradient_steps)
        if self.min_size < 0 or self.max_ahead < 0:
            raise ValueError(f"min_size and max_ahead must be >= 0, got {self.min_size} and "
                             f"{self.max_ahead}")

    def steps(self, before: int, after: int) -> int:
        """Trainer steps due for the observations after the ``before``-th up to the ``after``-th."""
        start = max(before, self.min_size)
        if after <= start:
            return 0
        frequency = self.update_frequency
        return self.gradient_steps * (after // frequency - start // frequency)

    @property
    def segment_length(self) -> int:
        """Transitions per segment: the largest divisor of ``update_frequency`` up to 256."""
        frequency = self.update_frequency
        return max(t for t in range(1, min(frequency, 256) + 1) if frequency % t == 0)


CPU = torch.device("cpu")


def check_finite(trainer: Trainer, result: TrainerStepResult, device_too: bool = True) -> None:
    """A ``FloatingPointError`` naming the stats of ``result`` that are NaN or inf (those on an
    accelerator only where ``device_too``: reading one waits for the device)."""
    name = type(trainer).__name__
    if not isinstance(result, TrainerStepResult) or not isinstance(result.stats, dict):
        got = (f"stats={type(result.stats).__name__}" if isinstance(result, TrainerStepResult)
               else f"a {type(result).__name__}")
        raise TypeError(f"trainer {name}.step returned {got}; return a looprl.core."
                        "TrainerStepResult(stats={'loss': ..., ...}, step=...) (stats: numbers)")
    bad, odd = [], []
    for key, value in result.stats.items():
        if device_too or getattr(value, "device", CPU) == CPU:
            try:
                if not math.isfinite(value):
                    bad.append(key)
            except (TypeError, ValueError):  # (text, several numbers)
                odd.append(key)
    if odd:
        raise TypeError(f"trainer {name}.step returned stats {sorted(odd)} that are not single "
                        "numbers; give each stat as a float or a one-element tensor (e.g. "
                        "loss.item())")
    if bad:
        raise FloatingPointError(f"trainer {name} returned non-finite {sorted(bad)} at "
                                 f"step {result.step}: training diverged; try a lower learning "
                                 "rate or gradient clipping.")


class StepLoop:
    """``train_step`` and ``train`` from ``ready``, ``next_batch``, ``learn`` and ``finish``."""

    def train_step(self) -> TrainerStepResult | None:
        """One step if one is due (``None``: none is)."""
        batch = self.next_batch()
        if batch is None:
            return None
        result = self.learn(batch)
        self.finish(batch, result)
        return result

    def train(self) -> TrainerStepResult | None:
        """Every step due now; the last one's result (``None``: none was due)."""
        last = None
        while self.ready():
            last = self.train_step() or last
        return last


#: A replay learner logs its trainer's statistics every this many gradient steps (by default).
REPLAY_LOG_EVERY = 1000
_COUNTERS = ("received", "dropped", "observed", "owed", "updates")


class Learner(StepLoop, AgentBase):
    """A ``trainer``, its ``buffer`` (a replay or an ``OnPolicyBuffer``) and the ``schedule`` of its
    steps (``None``: one per on-policy batch); ``logger`` gets the statistics every ``log_every``
    steps; ``hooks``: the run's ``MetaHub`` (or ``None``), run around every step."""

    refill_from = 0

    def __init__(self, trainer: Trainer, buffer: Any, schedule: ReplaySchedule | None = None,
                 logger: Logger | None = None, log_every: int | None = None):
        if log_every is None:
            log_every = REPLAY_LOG_EVERY if schedule is not None else 1
        check_count(log_every=log_every)
        self.trainer = trainer
        self.buffer = buffer
        self.schedule = schedule
        self.logger = logger or DummyLogger()
        self.log_every = log_every
        self.hooks: Any = None
        self.observed = self.owed = self.updates = self.received = self.dropped = 0
        self.stream: RandomStream | None = None  # (``seed``)

    def seed(self, seed: int) -> None:
        """Draw from random numbers of its own: the replay's generator and a ``RandomStream``."""
        self.stream = RandomStream(seed)
        own = getattr(self.buffer, "seed", None)
        if callable(own):
            own(seed)

    @property
    def policy(self) -> Any:
        """The trained policy."""
        return self.trainer.policy

    @property
    def learner(self) -> Learner:
        """Itself (what a ``MetaHub`` looks up on the agent it is given)."""
        return self

    @property
    def replay(self) -> bool:
        """Whether it learns from a replay (else from fresh segments)."""
        return self.schedule is not None

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The policy's, the trainer's and (replay) the schedule's ``hp/*`` keys."""
        own = {} if self.schedule is None else {
            name: Hyperparameter.attribute(self.schedule, name, int)
            for name in ("batch_size", "update_frequency", "gradient_steps")}
        return parts_hyperparameters(self.policy, self.trainer, **own)

    def put(self, sample: SampleBatch) -> None:
        """Add the segments ``sample`` (``[T + 1, B]``); stale ones are dropped (on-policy)."""
        rows, columns = sample.reward.shape
        self.received += columns
        if not self.buffer.put(sample, self.policy.version):
            self.dropped += columns
        before = self.observed
        self.observed += (rows - 1) * columns
        if self.schedule is not None:
            start = self.refill_from
            self.owed += self.schedule.steps(before - start, self.observed - start)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._refill_if_empty()

    def _refill_if_empty(self) -> None:
        """Restored with an empty replay (saved without it), owe nothing and count the schedule
        anew: ``min_size`` observations refill it before the next step."""
        if self.schedule is not None and len(self.buffer) == 0:
            self.owed, self.refill_from = 0, self.observed

    def ready(self) -> bool:
        """Whether a step is due (an on-policy batch is complete, or the schedule owes one)."""
        if self.schedule is None:
            return self.buffer.ready()
        return self.owed > 0 and len(self.buffer) > 0

    def backlogged(self, batches: int) -> bool:
        """Whether the actors must wait: ``batches`` on-policy batches, or ``max_ahead`` ahead."""
        schedule = self.schedule
        if schedule is None:
            return len(self.buffer) >= batches * self.buffer.batch_streams
        return self.owed > schedule.steps(0, schedule.max_ahead + schedule.min_size)

    def next_batch(self) -> tuple[SampleBatch, Any] | None:
        """``(sample, replayed indices or None)`` of the next step (``None``: none is due)."""
        if self.schedule is None:
            self.dropped += self.buffer.drop_stale(self.policy.version)
        if not self.ready():
            return None
        if self.schedule is None:
            return self.buffer.get(), None
        index = self.buffer.sample_indices(self.schedule.batch_size)  # (its own generator)
        self.owed -= 1
        self.updates += 1
        return self.buffer.gather(index), index

    def learn(self, batch: tuple[SampleBatch, Any]) -> TrainerStepResult:
        """``Trainer.step`` on ``batch`` inside the update hooks (not touching the buffer)."""
        with self.stream or nullcontext():
            if self.hooks is None:
                result = self.trainer.step(batch[0])
            else:
                result = self.hooks.update(self.trainer, batch[0])
        check_finite(self.trainer, result, self.updates % self.log_every == 0)
        return result

    def finish(self, batch: tuple[SampleBatch, Any], result: TrainerStepResult) -> None:
        """Give the step's new priorities back to the replay; log its statistics."""
        if self.schedule is None:
            self.updates += 1
        elif result.priorities is not None:
            self.buffer.update_priorities(result.priorities, batch[1])
        if self.logger.verbose and self.updates % self.log_every == 0:
            for name, value in result.stats.items():
                self.logger.add_loss(name, value)

    def shared_state(self) -> list[dict[str, Any] | None]:
        """Each meta component's ``shared_state`` (published with the policy parameters)."""
        return [] if self.hooks is None else [c.shared_state() for c in self.hooks.stack]

    def log_scalars(self) -> dict[str, float]:
        """The ``log/*`` values the update hooks wrote since the last call."""
        return {} if self.hooks is None else self.hooks.log_scalars()

    def state_dict(self, replay: bool = False) -> dict[str, Any]:
        """The trainer (with its policy), the counters and the update hooks' ``state_dict`` s;
        ``replay``: a replay learner's buffer too (its contents: ``replay_contents_saved``)."""
        return {"trainer": self.trainer, **{key: getattr(self, key) for key in _COUNTERS},
                "meta": [] if self.hooks is None else [c.state_dict() for c in self.hooks.stack],
                **({"buffer": self.buffer} if replay and self.schedule is not None else {})}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict``'s output (``ValueError`` if trained on another kind of device)."""
        saved, here = _device(state["trainer"]), _device(self.trainer)
        if saved != here:
            raise ValueError(f"the checkpoint's trainer trained on {saved} and this one runs on "
                             f"{here}: resume with the first run's runtime.gpus_per_trainer")
        self.trainer = state["trainer"]
        for key in _COUNTERS:
            setattr(self, key, state[key])
        if self.hooks is not None:  # (their clock, metrics['update'], is the update count)
            self.hooks.bind_parts()  # (the loaded trainer's policy, optimizers, ...)
            self.hooks.metrics["update"] = self.updates
            for component, saved in zip(self.hooks.stack, state.get("meta", ()), strict=False):
                component.load_state_dict(saved)
        if "buffer" in state:  # (``state_dict(replay=True)``'s)
            self.buffer = state["buffer"]
            if self.hooks is not None:
                self.hooks.metrics["buffer"] = self.buffer
        self._refill_if_empty()


def buffer_kind(trainer: Any, buffer: str | None = None) -> str:
    """``buffer``, else ``trainer.sample_buffer``, else ``"on_policy"``."""
    return buffer or getattr(trainer, "sample_buffer", None) or "on_policy"


def make_learner(trainer: Trainer, buffer: str | None = None,
                 buffer_args: dict[str, Any] | None = None, max_lag: int | None = None
                 ) -> Learner:
    """The learner of ``trainer`` over a buffer of kind ``buffer_kind(trainer, buffer)`` built
    from ``buffer_args`` (a replay's: also ``ReplaySchedule``'s fields, ``batch``: its size)."""
    args = dict(buffer_args or {})
    kind = buffer_kind(trainer, buffer)
    if kind not in REPLAY_KINDS:
        args.setdefault("batch_streams", 8)
        args.setdefault("max_lag", max_lag)
        return Learner(trainer, make_sample_buffer(kind, **args))
    if max_lag is not None:
        raise ValueError(f"max_lag={max_lag} drops stale on-policy segments, and "
                         f"{type(trainer).__name__} learns from a {kind!r} replay, which keeps "
                         "every transition: leave max_lag unset (runtime.max_lag=null)")
    schedule = ReplaySchedule(
        batch_size=int(args.pop("batch", 32)), min_size=int(args.pop("min_size", 0)),
        **{key: int(args.pop(key)) for key in ("update_frequency", "gradient_steps",
                                               "max_ahead") if key in args})
    args.setdefault("size", 100_000)
    args.setdefault("n_step", getattr(trainer, "n_step", 1))
    return Learner(trainer, make_sample_buffer(kind, **args), schedule)


def _device(trainer: Any) -> str:
    module = getattr(trainer.policy, "module", None)
    parameter = next(module.parameters(), None) if module is not None else None
    return parameter.device.type if parameter is not None else "cpu"
