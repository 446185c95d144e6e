"""The trainer side of independent learners: ``IndependentCore`` puts each segment's streams
into their agent's own ``Learner`` (``IndependentTrainer.split``), so that each agent's
trainer learns from its own buffer on its own schedule, as locally. It answers what the
trainer worker and ``test_pipeline`` ask a ``Learner``. No Ray here.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from looprl.agents.independent import IndependentPolicy, IndependentTrainer, agent_stats
from looprl.agents.learner import StepLoop, make_learner
from looprl.core import SampleBatch, TrainerStepResult
from looprl.meta.component import MetaComponent
from looprl.meta.hub import MetaHub

__all__ = ["IndependentCore"]


class IndependentCore(StepLoop):
    """One ``Learner`` per agent of an ``IndependentTrainer``, of ``(buffer,
    buffer_args)`` from ``buffers`` in the agents' order (``ValueError``: not one per agent).
    """

    def __init__(self, trainer: IndependentTrainer, buffers: list[tuple[str | None, Any]],
                 max_lag: int | None = None, meta: Sequence[MetaComponent] = ()):
        if len(buffers) != len(trainer.trainers):
            raise ValueError(f"IndependentCore needs one (buffer, buffer_args) per agent "
                             f"({len(trainer.trainers)}), got {len(buffers)}")
        self.trainer = trainer
        self.cores = [make_learner(agent_trainer, kind, args, max_lag)
                      for agent_trainer, (kind, args) in zip(trainer.trainers, buffers)]
        for core, name in zip(self.cores, self.policy.names, strict=True):
            if meta:  # each agent's own copies, as locally: its learner runs their update hooks
                core.hooks = MetaHub(copy.deepcopy(list(meta)), core, None)
                core.hooks.metrics["agent"] = name
        self._next = 0  # the agent whose batch is looked for first (round robin)

    @property
    def policy(self) -> IndependentPolicy:
        """The agents' policies."""
        return self.trainer.policy

    @property
    def replay(self) -> bool:
        """Whether an agent learns from a replay."""
        return any(core.replay for core in self.cores)

    @property
    def received(self) -> int:
        """Streams put, over all agents."""
        return sum(core.received for core in self.cores)

    @property
    def dropped(self) -> int:
        """Streams dropped as too old, over all agents."""
        return sum(core.dropped for core in self.cores)

    def shared_state(self) -> list[Any]:
        """Every agent's components' shared states, agent after agent (the order of an
        actor's ``StreamHooks.components``)."""
        return [state for core in self.cores for state in core.shared_state()]

    def log_scalars(self) -> dict[str, float]:
        """The ``log/*`` values each agent's update hooks wrote since the last call, as
        ``<key>/<agent>``."""
        return {f"{key}/{name}": value
                for core, name in zip(self.cores, self.policy.names, strict=True)
                for key, value in core.log_scalars().items()}

    def put(self, sample: SampleBatch) -> None:
        """Put each agent's streams of ``sample`` into its own core."""
        for agent, part in self.trainer.split(sample).items():
            self.cores[agent].put(part)

    def ready(self) -> bool:
        """Whether an agent's core would train now."""
        return any(core.ready() for core in self.cores)

    def backlogged(self, batches: int) -> bool:
        """Whether an agent's core makes the actors wait (``Learner.backlogged``)."""
        return any(core.backlogged(batches) for core in self.cores)

    def next_batch(self) -> tuple[int, Any] | None:
        """``(agent, its core's batch)`` of the next ready agent in turn (``None``: none)."""
        count = len(self.cores)
        for turn in range(count):
            agent = (self._next + turn) % count
            batch = self.cores[agent].next_batch()
            if batch is not None:
                self._next = (agent + 1) % count
                return agent, batch
        return None

    def learn(self, batch: tuple[int, Any]) -> TrainerStepResult:
        """The agent's own ``Trainer.step`` on its batch; statistics named ``{agent}/...``."""
        agent, inner = batch
        result = self.cores[agent].learn(inner)
        self.policy.share_version()
        stats = agent_stats(self.policy.names[agent], result.stats)
        return TrainerStepResult(stats, result.step, result.priorities)

    def finish(self, batch: tuple[int, Any], result: TrainerStepResult) -> None:
        """Hand the step's new priorities back to the agent's replay."""
        agent, inner = batch
        self.cores[agent].finish(inner, result)

    def state_dict(self) -> dict[str, Any]:
        """The trainers (with the policies they share) and every agent's counters."""
        return {"trainer": self.trainer, "agents": [core.state_dict() for core in self.cores]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict``'s output."""
        for core, agent_state in zip(self.cores, state["agents"], strict=True):
            core.load_state_dict(agent_state)
        self.trainer = state["trainer"]
