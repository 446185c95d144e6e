"""What flows between actors, policies and trainers (seed 004): ``RolloutRequest`` /
``RolloutResult`` (a policy's rollout), ``SampleBatch`` (the ``[T + 1, B]`` segments
trainers learn from) and ``TrainerStepResult`` (what a trainer step returns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from looprl.core.namedarray import namedarray


@namedarray
class RolloutRequest:
    """What an actor sends a policy: a batch of observations (seed 004).

    Attributes:
        obs: observations, batched along the first dimension (numpy or torch).
        policy_state: recurrent memory per row (``None`` for feed-forward policies).
        is_evaluation: act deterministically; a bool for the whole batch or one per row.
        exploration: an exploration rate per row (each Ape-X actor's epsilon); ``None``
            leaves the policy's own.
        agent: the agent of each row, its index in the environment's agent list (``None``
            for one agent).
        done: whether each row's episode ended at this observation (terminated or truncated:
            its action is ignored and the env resets next), so that a policy with a memory of
            its own (an ez-greedy option) ends it there (``None``: no row ended).
    """

    obs: Any
    policy_state: Any = None
    is_evaluation: Any = None
    exploration: Any = None
    agent: Any = None
    done: Any = None


@namedarray
class RolloutResult:
    """What a policy answers: actions plus what its trainer needs later (seed 004).

    Attributes:
        action: one action per row.
        policy_state: recurrent memory after this step (``None`` for feed-forward policies).
        log_prob: ``log pi(action | obs)`` (policy-gradient methods).
        value: ``V(obs)`` (actor-critic methods).
    """

    action: Any
    policy_state: Any = None
    log_prob: Any = None
    value: Any = None


def deterministic_rows(request: RolloutRequest) -> bool | torch.Tensor:
    """``request.is_evaluation`` as a bool (every row agrees) or a per-row bool tensor."""
    evaluation = getattr(request, "is_evaluation", None)
    if evaluation is None:
        return False
    if isinstance(evaluation, bool):
        return evaluation
    if isinstance(evaluation, np.ndarray) and evaluation.dtype == bool:
        if not evaluation.any():
            return False
        if evaluation.all():
            return True
    evaluation = torch.as_tensor(evaluation, dtype=torch.bool)
    return bool(evaluation) if evaluation.dim() == 0 else evaluation


@namedarray
class SampleBatch:
    """Time-major trajectory segments ``[T + 1, B, ...]`` sent by actors to trainers (seed 004).

    Row ``t`` of a stream holds what the actor saw and did at step ``t``: the observation,
    the policy's outputs for it, and the ``reward``/``done``/``truncated`` that arrived
    *with* that observation (from the previous action). A stream that ends an episode at row
    ``t`` (``done`` or ``truncated``) holds the final observation there; the row after it
    starts the next episode (reward 0). Consecutive segments of a stream overlap by one row,
    so row ``T`` is the bootstrap row of this segment and row 0 of the next one.

    Attributes:
        obs: ``NamedArray`` of observation fields (the env's obs dict).
        action: the action taken at each row.
        reward, done, truncated: what arrived with each row's observation.
        policy_state: recurrent memory *before* each row (``None`` for feed-forward).
        log_prob, value: the policy's outputs at each row (actor-critic methods).
        policy_version: the ``Policy.version`` that chose each row's action.
        weight: importance weights of the streams ``[T + 1, B]`` (prioritized replay);
            ``None`` weighs every stream 1.
        agent: the agent index of each stream ``[T + 1, B]``; ``None`` for one agent.
        stream: which stream each column continues ``[T + 1, B]`` (distinct over the actors
            that feed one trainer): replay's n-step windows span a stream's segments.

    A one-step replay transition ``(s, a, r, s')`` is a segment with ``T = 1``: row 0 holds
    ``obs=s, action=a``, row 1 ``obs=s', reward=r`` and whether ``s'`` ended the episode.
    """

    obs: Any
    action: Any = None
    reward: Any = None
    done: Any = None
    truncated: Any = None
    policy_state: Any = None
    log_prob: Any = None
    value: Any = None
    policy_version: Any = None
    weight: Any = None
    agent: Any = None
    stream: Any = None


@dataclass(eq=False)
class TrainerStepResult:
    """What ``Trainer.step`` returns in the SRL API (seed 004).

    Attributes:
        stats: scalar statistics to log (floats or 0-d tensors).
        step: the trainer's step count after this step.
        priorities: new replay priorities of the sampled rows (Ape-X style), or ``None``.
    """

    stats: dict[str, Any]
    step: int
    priorities: Any = field(default=None, repr=False)
