"""The trainer's side of a run (``TrainerCore``) and ``test_pipeline``, which runs an
environment, a policy and a trainer together in one process before a distributed run.

No Ray: the Ray trainer worker wraps a ``TrainerCore``, and ``test_pipeline`` drives one with
an ``EnvRunner`` in a plain loop, so a pipeline that passes here runs the same code remotely.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from looprl.collector import EnvRunner
from looprl.core import SampleBatch, TrainerStepResult
from looprl.distributed.config import AlgorithmSpec
from looprl.meta.component import MetaComponent
from looprl.meta.hub import MetaHub, Parts

__all__ = ["PipelineReport", "TrainerCore", "collect", "evaluate", "load_shared_state",
           "test_pipeline", "trainer_core"]


class StepLoop:
    """``train_step`` of a trainer-side core: ``next_batch``, ``learn``, ``finish``."""

    def train_step(self) -> TrainerStepResult | None:
        """One ``Trainer.step`` on what the buffer holds (``None``: not enough yet)."""
        batch = self.next_batch()
        if batch is None:
            return None
        result = self.learn(batch)
        self.finish(batch, result)
        return result


class TrainerCore(StepLoop):
    """A trainer and the sample buffer it learns from.

    Args:
        trainer: a ``Trainer`` (``step(SampleBatch) -> TrainerStepResult``).
        buffer: ``"on_policy"``, or a replay: ``"uniform"``, ``"prioritized"``, or the Atari
            frame rings ``"atari_uniform"``, ``"atari_prioritized"`` (``None``:
            ``trainer.sample_buffer``; ``looprl.memory.samples``).
        buffer_args: the buffer's arguments. On-policy buffers take ``batch_streams`` (default
            8) and ``max_lag``; replay takes ``size`` (default 100,000), ``batch`` (default
            32), ``min_size`` (default ``batch``), ``n_step`` (default: the trainer's),
            ``updates_per_frame`` (the most trainer steps per env step received beyond
            ``min_size``; ``None``: as fast as it can), ``max_ahead`` (env steps the actors
            may run ahead of that ratio, default 256) and, prioritized, ``alpha``/``beta``.
            The replay is kept on the CPU; trainers move their batches to their device.
        meta: meta components whose update hooks run around every step (this copy's own;
            ``metrics['batch']`` is the ``SampleBatch``).
    """

    def __init__(self, trainer: Any, buffer: str | None = None,
                 buffer_args: dict[str, Any] | None = None, max_lag: int | None = None,
                 meta: Sequence[MetaComponent] = ()):
        from looprl.memory.samples import REPLAY_KINDS, make_sample_buffer

        self.trainer = trainer
        args = dict(buffer_args or {})
        kind = buffer or getattr(trainer, "sample_buffer", None)
        self.replay = kind in REPLAY_KINDS
        ratio = args.pop("updates_per_frame", None)
        self.updates_per_frame = float(ratio) if self.replay and ratio is not None else None
        self.frames = 0  # env steps received (replay)
        self.updates = 0  # batches taken (replay)
        if self.replay:
            self.max_ahead = int(args.pop("max_ahead", 256))
            self.batch = int(args.pop("batch", 32))
            self.min_size = int(args.pop("min_size", self.batch))
            args.setdefault("size", 100_000)
            args.setdefault("n_step", getattr(trainer, "n_step", 1))
        else:
            args.setdefault("batch_streams", 8)
            args.setdefault("max_lag", max_lag)
        self.buffer = make_sample_buffer(kind, **args)
        if meta:  # the trainer's hub: its learn() runs the update hooks around each step
            MetaHub(list(meta), Parts(trainer.policy, trainer, self.buffer), None)
        self.received = 0  # segments put
        self.dropped = 0  # segments dropped as too old

    @property
    def policy(self) -> Any:
        """The trained policy."""
        return self.trainer.policy

    def shared_state(self) -> list[dict[str, Any] | None]:
        """Each meta component's ``shared_state`` (published with the policy parameters)."""
        hub = self.trainer.hub
        return [] if hub is None else [component.shared_state() for component in hub.stack]

    def log_scalars(self) -> dict[str, float]:
        """The ``log/*`` values the update hooks wrote since the last call."""
        return {} if self.trainer.hub is None else self.trainer.hub.log_scalars()

    def put(self, sample: SampleBatch) -> None:
        """Add ``sample`` (a ``[T + 1, B]`` batch); stale ones are dropped (on-policy)."""
        rows, columns = sample.reward.shape
        self.received += columns
        self.frames += (rows - 1) * columns
        if not self.buffer.put(sample, self.policy.version):
            self.dropped += columns

    def ready(self) -> bool:
        """Whether ``train_step`` would train now: an on-policy batch is complete, or the
        replay holds ``min_size`` transitions and the update ratio allows another step."""
        if not self.replay:
            return self.buffer.ready()
        ratio = self.updates_per_frame
        return len(self.buffer) >= self.min_size and (
            ratio is None or self.updates < ratio * (self.frames - self.min_size))

    def backlogged(self, batches: int) -> bool:
        """Whether the actors must wait: an on-policy buffer holds ``batches`` whole batches,
        or they ran more than ``max_ahead`` env steps ahead of a replay's update ratio."""
        if not self.replay:
            return len(self.buffer) >= batches * self.buffer.batch_streams
        ratio = self.updates_per_frame
        return ratio is not None and self.updates < ratio * (self.frames - self.min_size
                                                             - self.max_ahead)

    def next_batch(self) -> tuple[SampleBatch, Any] | None:
        """``(sample, indices)`` for the next step (``None``: not ready); ``indices`` of
        replayed transitions, ``None`` for on-policy buffers."""
        if not self.replay:
            self.dropped += self.buffer.drop_stale(self.policy.version)
        if not self.ready():
            return None
        if not self.replay:
            return self.buffer.get(), None
        index = self.buffer.sample_indices(self.batch)
        self.updates += 1
        return self.buffer.gather(index), index

    def learn(self, batch: tuple[SampleBatch, Any]) -> TrainerStepResult:
        """``Trainer.learn`` on ``batch`` (touches the trainer only, not the buffer)."""
        return self.trainer.learn(batch[0])

    def finish(self, batch: tuple[SampleBatch, Any], result: TrainerStepResult) -> None:
        """Hand the step's new priorities back to a replay buffer."""
        if self.replay and result.priorities is not None:
            self.buffer.update_priorities(result.priorities, batch[1])

    def state_dict(self) -> dict[str, Any]:
        """The trainer, its policy (with optimizer) and counters, for a checkpoint."""
        return {"trainer": self.trainer, "received": self.received, "dropped": self.dropped,
                "frames": self.frames, "updates": self.updates}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict``'s output.

        Raises:
            ValueError: it was trained on another kind of device (a GPU and the CPU).
        """
        saved, here = _device(state["trainer"]), _device(self.trainer)
        if saved != here:
            raise ValueError(f"the checkpoint's trainer trained on {saved} and this one runs on "
                             f"{here}: resume with the first run's runtime.gpus_per_trainer")
        self.trainer = state["trainer"]
        self.received, self.dropped = state["received"], state["dropped"]
        self.frames, self.updates = state["frames"], state["updates"]


def trainer_core(spec: AlgorithmSpec, policy: Any = None, max_lag: int | None = None) -> Any:
    """The trainer side of ``spec``, training ``policy`` (default: a new one): a
    ``TrainerCore``, or for independent learners (``spec.buffer == "independent"``) an
    ``IndependentCore`` of one ``TrainerCore`` per agent."""
    trainer = spec.make_trainer(policy if policy is not None else spec.make_policy())
    if spec.buffer != "independent":
        return TrainerCore(trainer, spec.buffer, spec.buffer_args, max_lag,
                           meta=spec.make_meta())
    from looprl.distributed.independent import IndependentCore

    return IndependentCore(trainer, spec.buffer_args["agents"], max_lag)


def _device(trainer: Any) -> str:
    """The kind of device (``"cpu"``, ``"cuda"``) ``trainer``'s policy computes on."""
    module = getattr(trainer.policy, "module", None)
    parameter = next(module.parameters(), None) if module is not None else None
    return parameter.device.type if parameter is not None else "cpu"


@dataclass
class PipelineReport:
    """What ``test_pipeline`` saw.

    Attributes:
        frames: env steps taken.
        episodes: episode returns (summed over agents), in order.
        train_steps: ``Trainer.step`` calls.
        stats: the last step's statistics.
    """

    frames: int = 0
    episodes: list[float] = field(default_factory=list)
    train_steps: int = 0
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def mean_return(self) -> float:
        """Mean return of the last (up to) 20 episodes (``nan`` before the first)."""
        last = self.episodes[-20:]
        return float(np.mean(last)) if last else math.nan


def test_pipeline(
    spec: AlgorithmSpec | None = None,
    episodes: int = 5,
    max_frames: int = 100_000,
    n_envs: int = 2,
    segment_length: int = 32,
    seed: int = 0,
    **spec_kwargs: Any,
) -> PipelineReport:
    """Run an environment, a policy and a trainer together in this process, checking what
    a distributed run needs (``StepResult`` lists, one answer per row, segments that fit the
    buffer, finite statistics, a new ``policy.version`` per step), until ``episodes``
    episodes with at least one training step, or ``max_frames``.

    Args:
        spec: the algorithm; or give ``env=``, ``policy=``, ``trainer=`` (``AlgorithmSpec``'s
            fields) as keywords.
        episodes: episodes to play.
        max_frames: the most env steps.
        n_envs, segment_length: the actor's env copies and segment length.
        seed: seeds torch, NumPy and the envs.

    Raises:
        ValueError: a part misbehaves (the message names it), e.g. a policy whose
            ``rollout`` returns the wrong batch size, or a trainer returning non-finite stats.
    """
    spec = spec or AlgorithmSpec(**spec_kwargs)
    torch.manual_seed(seed)
    np.random.seed(seed)
    policy = spec.make_policy()
    core = trainer_core(spec, policy)
    runner = EnvRunner(spec.make_env, None, n_envs, segment_length,
                       policy.default_policy_state, seed=seed,
                       exploration=(spec.explorations or [None])[0], meta=spec.make_meta(),
                       policy=policy, whole_episodes=spec.whole_episodes)
    report = PipelineReport()
    while runner.frames < max_frames:
        collect(runner, policy)
        report.episodes += [episode.ret for episode in runner.pop_episodes()]
        for sample in runner.segments():
            core.put(sample)
        if _train(core, report) and runner.hub is not None:  # what a publication carries
            load_shared_state(runner.hub.stack, core.shared_state())
        if len(report.episodes) >= episodes and report.train_steps > 0:
            break
    report.frames = runner.frames
    if report.train_steps == 0:
        raise ValueError(f"the trainer never stepped in {runner.frames} frames: its buffer was "
                         "never ready (give more max_frames or a smaller batch)")
    return report


def collect(runner: EnvRunner, policy: Any) -> None:
    """One step of ``runner``'s first group with ``policy``'s actions."""
    request = runner.request(0)
    result = None if request is None else policy.rollout(request)
    runner.step(0, result, policy.version)


def load_shared_state(components: Any, shared: list[dict[str, Any] | None]) -> None:
    """Give each of an actor's ``components`` what the trainer's copy published
    (``TrainerCore.shared_state``; ``None``: nothing)."""
    for component, state in zip(components, shared, strict=True):
        if state is not None:
            component.load_shared_state(state)


def _train(core: Any, report: PipelineReport) -> bool:
    """Train on everything an on-policy buffer holds; from replay, as often as the update
    ratio allows (one step per env step without one). Whether it stepped."""
    trained = report.train_steps
    steps = 1 if core.replay and core.updates_per_frame is None else math.inf
    while steps > 0 and core.ready():
        steps -= 1
        version = core.policy.version
        result = core.train_step()
        stats = {k: float(v) for k, v in result.stats.items()}
        bad = sorted(k for k, v in stats.items() if not math.isfinite(v))
        if bad:
            raise ValueError(f"trainer {type(core.trainer).__name__} returned non-finite "
                             f"stats {bad} at step {result.step}")
        if core.policy.version == version:
            raise ValueError(f"trainer {type(core.trainer).__name__}.step did not increment "
                             "policy.version; workers could not tell new parameters apart")
        report.train_steps += 1
        report.stats = stats
    return report.train_steps > trained


test_pipeline.__test__ = False  # not a pytest test


def evaluate(spec: AlgorithmSpec, checkpoint: dict[str, Any] | None, episodes: int = 10,
             seed: int = 0) -> list[float]:
    """Returns of ``episodes`` deterministic episodes of the policy restored from
    ``checkpoint`` (``Policy.get_checkpoint()``; ``None``: a fresh policy), in this process."""
    policy = spec.make_policy()
    if checkpoint is not None:
        policy.load_checkpoint(checkpoint)
    runner = EnvRunner(spec.make_env, None, 1, 1, policy.default_policy_state, seed=seed,
                       is_evaluation=True)
    returns: list[float] = []
    while len(returns) < episodes:
        collect(runner, policy)
        runner.segments()  # not kept
        returns += [episode.ret for episode in runner.pop_episodes()]
    return returns[:episodes]
