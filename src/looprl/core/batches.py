"""What flows between actors, policies and trainers (seed 004)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from looprl.core.namedarray import namedarray


@namedarray
class RolloutRequest:
    """What an actor sends a policy: a batch of observations (``obs``) and per-row fields."""

    obs: Any
    policy_state: Any = None  # the recurrent memory
    is_evaluation: Any = None  # whether to act deterministically (or one bool for all rows)
    exploration: Any = None  # an exploration rate (Ape-X)
    agent: Any = None  # the agent index
    done: Any = None  # the episode ended here: the action is ignored


@namedarray
class RolloutResult:
    """What a policy answers: actions, the memory after this step, ``log_prob``, ``value``."""

    action: Any
    policy_state: Any = None
    log_prob: Any = None
    value: Any = None


def deterministic_rows(request: RolloutRequest, rows: int | None = None) -> bool | torch.Tensor:
    """``request.is_evaluation`` as a bool (every row agrees) or a per-row bool tensor ``[B]``
    (SRL's ``[B, 1]`` flattened); a one-line ``ValueError`` if it has not ``rows`` rows."""
    evaluation = getattr(request, "is_evaluation", None)
    if evaluation is None:
        return False
    if isinstance(evaluation, bool):
        return evaluation
    if isinstance(evaluation, np.ndarray) and evaluation.dtype == bool and (
            rows is None or evaluation.size == rows):
        count = np.count_nonzero(evaluation)  # (one call, a third of ``any()``'s cost)
        if count == 0:
            return False
        if count == evaluation.size:
            return True
    evaluation = torch.as_tensor(evaluation, dtype=torch.bool)
    if evaluation.dim() == 0:
        return bool(evaluation)
    if rows is not None and evaluation.numel() != rows:
        raise ValueError(f"is_evaluation has {evaluation.numel()} rows, obs {rows}")
    return evaluation.reshape(-1)


@namedarray
class SampleBatch:
    """Time-major trajectory segments ``[T + 1, B, ...]`` sent by actors to trainers.

    Row ``t`` holds the observation, the policy's outputs for it (``policy_state`` *before*
    it) and the ``reward``/``done``/``truncated`` that arrived *with* it; an episode's final
    observation is followed by the next episode's first (reward 0). A stream's consecutive
    segments overlap by one row (row ``T`` bootstraps); a replay transition is ``T = 1``.
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
    weight: Any = None  # importance weights (None: 1)
    agent: Any = None
    stream: Any = None  # which stream each column continues (n-step windows span segments)


@dataclass(eq=False)
class TrainerStepResult:
    """What ``Trainer.step`` returns: ``stats`` to log (floats or 0-d tensors), the step count,
    whether to publish the parameters now (``agree_pushing``, as in SRL; ``False``: a Ray
    trainer publishes them later, when idle) and the sampled rows' new replay ``priorities``."""

    stats: dict[str, Any]
    step: int
    agree_pushing: bool | None = True
    priorities: Any = field(default=None, repr=False)
