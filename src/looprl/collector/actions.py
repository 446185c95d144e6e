"""What the collector does to a policy's action before an environment copy takes it: clipped
into a ``Box`` (as ``GymEnvironment`` clips it), checked against a ``Discrete`` space."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from looprl.core.leaves import as_numpy
from looprl.environments.faults import PolicyActionError
from looprl.environments.gym_helpers import action_to_numpy

__all__ = ["action_spaces", "env_action"]

_INTEGERS = (int, np.int64, np.int32)


def action_spaces(env: Any) -> list[gym.spaces.Box | gym.spaces.Discrete | None] | None:
    """Each agent's action space that the collector clips actions into (``Box``) or checks
    them against (``Discrete``); ``None`` for another space; ``None`` for all: none of those,
    no spaces given, or an environment that clips and checks them itself, ``clips_actions``."""
    if getattr(env, "clips_actions", False):
        return None
    try:
        spaces = list(env.action_spaces)
    except (AttributeError, NotImplementedError):
        return None
    kept = [space if isinstance(space, gym.spaces.Box | gym.spaces.Discrete) else None
            for space in spaces]
    return kept if len(kept) == env.agent_count and any(k is not None for k in kept) else None


def env_action(action: Any, space: gym.spaces.Box | gym.spaces.Discrete, name: str,
               agent: int) -> Any:
    """``action`` of ``agent`` of env copy ``name`` as the copy takes it: clipped into a
    ``Box``, or checked against a ``Discrete`` space (``PolicyActionError``)."""
    if isinstance(space, gym.spaces.Discrete):
        _check_discrete(action, space, name, agent)
        return action
    return action_to_numpy(action, space)


def _check_discrete(action: Any, space: gym.spaces.Discrete, name: str, agent: int) -> None:
    """A ``PolicyActionError`` unless ``action`` (as it goes to the environment) is one of
    ``space``'s: an environment of your own (SRL's) took any number (a policy's
    ``action_dim`` above its actions, a fraction) without a word."""
    low = int(space.start)
    if type(action) in _INTEGERS and low <= action < low + space.n:
        return  # (a row of a policy's int array: every step)
    try:  # (one whole number, as GymEnvironment takes a Discrete action)
        if low <= action_to_numpy(action, space) < low + space.n:
            return
    except ValueError:
        pass
    array = np.asarray(as_numpy(action))
    shown = array.tolist() if array.size <= 8 else f"an array of shape {array.shape}"
    raise PolicyActionError(
        f"{name}: the policy gave agent {agent} the action {shown!r}, not one of its "
        f"action space {space} (the whole numbers {low}..{low + space.n - 1}): give the "
        "policy as many actions as the environment has (action_dim), or check the action "
        "your policy's rollout returns")
