"""The learner of independent learners: each agent's trainer learns from its own buffer on its
own schedule, on every runtime."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from looprl.agents.actor import Actor
from looprl.agents.independent import (
    IndependentMultiagent,
    IndependentPolicy,
    IndependentTrainer,
    agent_stats,
)
from looprl.agents.learner import Learner, StepLoop, make_learner
from looprl.agents.shell import LearningAgent
from looprl.core import Hyperparameter, SampleBatch, TrainerStepResult
from looprl.memory.segments import SegmentBuffer

__all__ = ["IndependentLearner", "IndependentLearners", "shared_cut"]


def _summed(counter: str, doc: str) -> property:
    """A read-only property: the agents' learners' ``counter`` summed."""
    return property(lambda self: sum(getattr(core, counter) for core in self.cores), doc=doc)


class IndependentLearner(StepLoop):
    """One ``Learner`` per agent (``cores[i]`` trains ``policy.policies[i]``); ``put`` hands each
    agent's streams to its own, and ``trainer`` is the ``IndependentTrainer`` of their trainers."""

    def __init__(self, policy: IndependentPolicy, cores: Sequence[Learner]):
        self.trainer = IndependentTrainer(policy, [core.trainer for core in cores])
        self.cores = list(cores)
        self._next = 0  # the agent whose batch is looked for first (round robin)

    @classmethod
    def from_buffers(cls, trainer: IndependentTrainer, buffers: list[tuple[str | None, Any]],
                     max_lag: int | None = None) -> IndependentLearner:
        """Each agent's ``make_learner`` of one ``(buffer, buffer_args)`` per agent, in order."""
        if len(buffers) != len(trainer.trainers):
            raise ValueError(f"IndependentLearner needs one (buffer, buffer_args) per agent "
                             f"({len(trainer.trainers)}), got {len(buffers)}")
        return cls(trainer.policy, [make_learner(agent, kind, args, max_lag)
                                    for agent, (kind, args) in zip(trainer.trainers, buffers)])

    def seed(self, seed: int) -> None:
        """Seed agent ``i``'s learner with ``seed + i`` (``Learner.seed``)."""
        for i, core in enumerate(self.cores):
            core.seed(seed + i)

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """Every agent's learner's ``hp/*`` keys, as ``<key>/<agent>`` (``hp/lr/q/player_1``)."""
        return self._by_agent("hyperparameters")

    def _by_agent(self, method: str) -> dict[str, Any]:
        return {f"{key}/{name}": value
                for core, name in zip(self.cores, self.policy.names, strict=True)
                for key, value in getattr(core, method)().items()}

    @property
    def policy(self) -> IndependentPolicy:
        """The agents' policies."""
        return self.trainer.policy

    @property
    def replay(self) -> bool:
        """Whether an agent learns from a replay."""
        return any(core.replay for core in self.cores)

    received = _summed("received", "Streams put, over all agents.")
    dropped = _summed("dropped", "Streams dropped as too old, over all agents.")
    updates = _summed("updates", "Trainer steps taken, over all agents (0: none trained).")

    def shared_state(self) -> list[Any]:
        """Every agent's components' shared states, agent after agent."""
        return [state for core in self.cores for state in core.shared_state()]

    def log_scalars(self) -> dict[str, float]:
        """Each agent's update hooks' ``log/*`` values since the last call, as ``<key>/<agent>``."""
        return self._by_agent("log_scalars")

    def put(self, sample: SampleBatch) -> None:
        """Put each agent's streams of ``sample`` into its own learner."""
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
        try:
            result = self.cores[agent].learn(inner)
        except FloatingPointError as error:  # (whose: the agents' networks have one name)
            error.args = (f"agent {self.policy.names[agent]}: {error}",)
            raise  # (its traceback, whose locals the divergence diagnosis reads)
        self.policy.share_version()
        stats = agent_stats(self.policy.names[agent], result.stats)
        return TrainerStepResult(stats, result.step, result.agree_pushing, result.priorities)

    def finish(self, batch: tuple[int, Any], result: TrainerStepResult) -> None:
        """Hand the step's new priorities back to the agent's replay."""
        agent, inner = batch
        self.cores[agent].finish(inner, result)

    def state_dict(self, replay: bool = False) -> dict[str, Any]:
        """The trainers (with the policies they share) and every agent's counters (``replay``:
        and replay)."""
        return {"trainer": self.trainer,
                "agents": [core.state_dict(replay) for core in self.cores]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict``'s output."""
        for core, agent_state in zip(self.cores, state["agents"], strict=True):
            core.load_state_dict(agent_state)
        self.trainer = state["trainer"]


class IndependentLearners(IndependentMultiagent, LearningAgent):
    """Independent learners as seed 003's ``Multiagent`` (``act`` routes each state to its agent)
    and, for the collector, one ``Actor`` over an ``IndependentPolicy`` and an
    ``IndependentLearner``; ``masked`` and ``unmasked``: ``IndependentPolicy``'s."""

    def __init__(self, agents: dict[str, Any], masked: Collection[str] = (),
                 unmasked: Collection[str] = ()):
        IndependentMultiagent.__init__(self, agents)
        inner = [agent.unwrapped for agent in self.agents.values()]
        if not all(isinstance(agent, LearningAgent) for agent in inner):
            raise ValueError("IndependentLearners takes agents with an actor and a learner "
                             "(the presets' ReplayAgent/SegmentAgent); route other agents "
                             "with IndependentMultiagent")
        length, whole = shared_cut([(agent.adder.segment_length, agent.adder.whole_episodes,
                                     agent.learner.replay) for agent in inner])
        policy = IndependentPolicy([agent.policy for agent in inner], list(self.agents), masked,
                                   unmasked)
        LearningAgent.__init__(self, Actor(policy, SegmentBuffer(length, len(inner), whole)),
                               IndependentLearner(policy, [agent.learner for agent in inner]))


def shared_cut(cuts: Sequence[tuple[int, bool, bool]]) -> tuple[int, bool]:
    """The collector's ``(segment_length, whole_episodes)`` for every agent's ``(segment_length,
    whole_episodes, replay)``: on-policy agents must agree, replay agents take any divisor."""
    length = math.gcd(*(cut[0] for cut in cuts))
    own = {cut[0] for cut in cuts if not cut[2]}  # the on-policy agents' lengths
    whole = any(cut[1] for cut in cuts)  # (then every agent must cut alike)
    if (own and own != {length}) or (whole and len(set(cuts)) > 1):
        raise ValueError(f"the agents learn from segments of {sorted({c[0] for c in cuts})} "
                         "steps (whole episodes: " + ", ".join(str(c[1]) for c in cuts) + "), "
                         "which one collector cannot cut for all: give the on-policy agents' "
                         "presets one n_steps that divides the replay agents' update_frequency")
    return length, whole
