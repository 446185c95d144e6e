"""A policy's actions as an environment copy takes them: clipped into a ``Box`` (as
``GymEnvironment`` clips them) or checked against a ``Discrete`` space (``PolicyActionError``),
for the collector's copies (``collector.copies``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from looprl.core.leaves import as_numpy
from looprl.environments.faults import PolicyActionError
from looprl.environments.gym_helpers import action_to_numpy
from looprl.environments.srl import spaces_of

__all__ = ["action_spaces", "env_action"]

_INTEGERS = (int, np.int64, np.int32)


def action_spaces(env: Any) -> list[gym.spaces.Box | gym.spaces.Discrete | None] | None:
    """Each agent's action space to clip actions into (``Box``) or check them against
    (``Discrete``), else ``None``; ``None`` for all if none is, or the env ``clips_actions``."""
    if getattr(env, "clips_actions", False):
        return None
    try:
        spaces = spaces_of(env, "action_spaces")
    except (AttributeError, NotImplementedError):
        return None
    kept = [space if isinstance(space, gym.spaces.Box | gym.spaces.Discrete) else None
            for space in spaces]
    return kept if any(k is not None for k in kept) else None


def env_action(action: Any, space: gym.spaces.Box | gym.spaces.Discrete, name: str,
               agent: int) -> Any:
    """``action`` of ``agent`` of env copy ``name`` clipped into a ``Box``, or checked against a
    ``Discrete`` space (``PolicyActionError``: an SRL env would take any number silently)."""
    if not isinstance(space, gym.spaces.Discrete):
        return action_to_numpy(action, space)
    low = int(space.start)
    if type(action) in _INTEGERS and low <= action < low + space.n:
        return action  # (a row of a policy's int array: every step)
    try:  # (one whole number, as GymEnvironment takes a Discrete action)
        if low <= action_to_numpy(action, space) < low + space.n:
            return action
    except ValueError:
        pass
    array = np.asarray(as_numpy(action))
    shown = array.tolist() if array.size <= 8 else f"an array of shape {array.shape}"
    raise PolicyActionError(
        f"{name}: the policy gave agent {agent} the action {shown!r}, not one of its "
        f"action space {space} (the whole numbers {low}..{low + space.n - 1}): give the "
        "policy as many actions as the environment has (action_dim), or check the action "
        "your policy's rollout returns")
