"""The ``Actor``: the acting half of the shell around every algorithm (Acme's actor)."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch

from looprl.agents.streams import RandomStream
from looprl.core import Agent, ParallelAgent, Policy, RolloutRequest, RolloutResult, SampleBatch
from looprl.core.state import State, StateArray
from looprl.memory.segments import SegmentBuffer, rows_of

__all__ = ["Actor"]


class Actor(Agent, ParallelAgent):
    """A policy acting on a ``State`` or each row of a ``StateArray`` (seed 003's ``act``), writing
    what it saw and did into ``adder`` (if any); ``evaluation``: ask for evaluation actions."""

    def __init__(self, policy: Policy, adder: SegmentBuffer | None = None,
                 evaluation: bool = False):
        self.policy = policy
        self.adder = adder
        self.evaluation = evaluation
        self.device = getattr(policy, "device", torch.device("cpu"))
        self.stream: RandomStream | None = None  # (``seed``)

    def seed(self, seed: int) -> None:
        """Draw the policy's random numbers from a ``RandomStream`` seeded with ``seed``."""
        self.stream = RandomStream(seed)

    def rollout(self, request: RolloutRequest) -> RolloutResult:
        """The policy's ``rollout`` of ``request``, inside the actor's stream if seeded."""
        with self.stream or nullcontext():
            return self.policy.rollout(request)  # (its input checked: looprl.core.checked)

    def act(self, state: Any) -> Any:
        """The policy's action for ``state``, or one per row of a ``StateArray``."""
        if not isinstance(state, State):
            raise TypeError(f"act takes a State (env.state, State({{'observation': obs}})) or a "
                            f"StateArray of several (State.array(states)), got "
                            f"{type(state).__name__} {state!r:.40}")
        batched = isinstance(state, StateArray)
        state = state.to(self.device)
        obs = state.observation if batched else state.observation.unsqueeze(0)
        result = self.rollout(RolloutRequest(obs=obs, is_evaluation=self.evaluation))
        if self.adder is not None:
            self.adder.write(None, *rows_of(obs, state.reward, state.done, state.mask, result,
                                            self.policy.version))
        return result.action if batched else result.action[0]

    def segments(self) -> list[SampleBatch]:
        """The segments the adder finished since the last call (``[]`` without one)."""
        return [] if self.adder is None else self.adder.segments()
