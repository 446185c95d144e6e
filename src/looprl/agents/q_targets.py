"""The bootstrap values of the DQN family: the n-step window's return, discount and bootstrap
observations (``bootstrap``), and the rules that value those observations (``UPDATES``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from looprl.agents.losses import clipped_double_q_target, double_q_target, n_step_bootstrap
from looprl.core import SampleBatch
from looprl.core.namedarray import NamedArray, recursive_apply

__all__ = ["UPDATES", "bootstrap"]


def bootstrap(batch: SampleBatch, gamma: float, n_step: int
              ) -> tuple[torch.Tensor, torch.Tensor, Any, torch.Tensor]:
    """Row 0's n-step return, discount (0 if terminal), bootstrap observations and the action
    taken there (``[B]`` each) of ``[T + 1, B]`` windows."""
    if batch.reward.shape[0] == 2:  # one-step windows: no gathering
        discount = torch.where(batch.done[1], 0.0, gamma)
        return batch.reward[1], discount, batch.obs[1], batch.action[1]
    returns, boot, discount = n_step_bootstrap(batch.reward, batch.done, batch.truncated, gamma,
                                               n_step, rows=1)
    row, columns = boot[0], torch.arange(boot.shape[1], device=boot.device)

    def at_boot(leaf: torch.Tensor) -> torch.Tensor:
        return leaf[row.to(leaf.device), columns.to(leaf.device)]

    obs = recursive_apply(batch.obs, at_boot) if isinstance(batch.obs, NamedArray) \
        else at_boot(batch.obs)
    return returns[0], discount[0], obs, at_boot(batch.action)


def _max(q: Any, next_obs: Any, next_actions: Any) -> torch.Tensor:
    return q.target(next_obs).max(dim=-1).values


def _double(target: Callable[..., torch.Tensor], q: Any, next_obs: Any, next_actions: Any
            ) -> torch.Tensor:
    return target(0.0, q.no_grad(next_obs), q.target(next_obs), 1.0, 1.0)


def _sarsa(q: Any, next_obs: Any, next_actions: Any) -> torch.Tensor:
    return q.target(next_obs, next_actions)


#: Bootstrap values of the DQN family by name: ``rule(q, next_obs, next_actions)``, ``q`` the
#: policy's Q approximation, read through ``no_grad`` and ``target`` on the observations
#: ``[B, ...]`` (``looprl.agents.losses.value`` holds their math).
UPDATES: dict[str, Callable[..., torch.Tensor]] = {
    "q_learning": _max,
    "double_q": partial(_double, double_q_target),  # (partials: a checkpoint pickles them)
    "clipped_double_q": partial(_double, clipped_double_q_target),
    "sarsa": _sarsa,
}
