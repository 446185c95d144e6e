"""The ``Actor``: the acting half of the shell around every algorithm (Acme's actor): a policy
acting on a batch of B >= 1 rows through ``Policy.rollout``, in training or evaluation mode,
and an adder (a ``SegmentBuffer``) that writes the rows a ``Learner`` takes.

Evaluation is the Actor in evaluation mode and nothing else: ``preset.test_agent()`` is an
``Actor`` over a copy of the policy with ``evaluation=True`` (every row asks the policy for its
evaluation action: the greedy or mean action, the network in eval mode), the same request
Ray's evaluation makes (``looprl.distributed.pipeline.evaluate``).
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.streams import RandomStream
from looprl.core import (
    Agent,
    ParallelAgent,
    Policy,
    RolloutRequest,
    RolloutResult,
    SampleBatch,
    State,
)
from looprl.core.state import StateArray
from looprl.memory.segments import SegmentBuffer, rows_of

__all__ = ["Actor"]


class Actor(Agent, ParallelAgent):
    """A policy acting on one ``State`` or each row of a ``StateArray`` (seed 003's ``act``),
    writing what it saw and did into ``adder`` when it has one.

    Args:
        policy: the acting policy.
        adder: the ``SegmentBuffer`` that cuts the rows into segments (``None``: nothing
            written, as in evaluation).
        evaluation: ask for evaluation actions (``RolloutRequest.is_evaluation``).
    """

    def __init__(self, policy: Policy, adder: SegmentBuffer | None = None,
                 evaluation: bool = False):
        self.policy = policy
        self.adder = adder
        self.evaluation = evaluation
        self.device = getattr(policy, "device", torch.device("cpu"))
        self.stream: RandomStream | None = None  # (``seed``)

    def seed(self, seed: int) -> None:
        """Act on random numbers of its own, seeded with ``seed``: a ``RandomStream``, the one
        source of the policy's draws in ``rollout`` (the policies draw from torch's global
        generator, which the stream stands in for; unseeded, the process's)."""
        self.stream = RandomStream(seed)

    def rollout(self, request: RolloutRequest) -> RolloutResult:
        """The policy's ``rollout`` of ``request``, drawing from the actor's stream (if
        seeded): what every loop and runtime asks the policy through."""
        if self.stream is None:
            return self.policy.rollout(request)
        with self.stream:
            return self.policy.rollout(request)

    def act(self, state: Any) -> Any:
        """The policy's action for ``state`` (a ``State``), or one per row (a ``StateArray``)."""
        batched = isinstance(state, StateArray)
        state = state.to(self.device)
        obs = state.observation if batched else state.observation.unsqueeze(0)
        action = self.rows(obs, state)
        return action if batched else action[0]

    def rows(self, obs: Any, state: State) -> torch.Tensor:
        """The policy's actions for the rows ``obs`` (``[B, ...]``); with an adder, the rows
        are written with the rewards and ends ``state`` brought."""
        result = self.rollout(RolloutRequest(obs=obs, is_evaluation=self.evaluation))
        if self.adder is not None:
            self.adder.write(None, *rows_of(obs, state.reward, state.done, state.mask, result,
                                            self.policy.version))
        return result.action

    def segments(self) -> list[SampleBatch]:
        """The segments the adder finished since the last call (``[]`` without one)."""
        return [] if self.adder is None else self.adder.segments()
