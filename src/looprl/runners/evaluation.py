"""Evaluation on a held-out set of instances (``context.test``), each played at least once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from looprl.environments.contextual import ContextualEnvironment

__all__ = ["SETS", "held_out_returns", "instance_plan"]

#: The names of the two evaluated sets (in ``results.json``, TensorBoard and CSV files).
SETS = ("train_set", "test_set")


def instance_plan(env: Any, episodes: int) -> list[tuple[Any, int]]:
    """``(environment, episodes)`` pairs that evaluate ``env``: one per instance of a
    ``ContextualEnvironment`` (``max(episodes, instances)`` episodes in all), else ``env``."""
    if not isinstance(env, ContextualEnvironment):
        return [(env, episodes)]
    wrapper = env.contextual
    contexts = wrapper.contexts
    total = max(int(episodes), len(contexts))
    share, extra = divmod(total, len(contexts))
    return [(ContextualEnvironment(wrapper.env_id, {key: context}, wrapper.hide_context,
                                   seed=env.seed, device=env.device, name=env.name,
                                   **wrapper.make_kwargs), share + (i < extra))
            for i, (key, context) in enumerate(contexts.items())]


def held_out_returns(test: Callable[..., list[float]], env: Any, episodes: int) -> list[float]:
    """The returns of ``test(episodes=n, env=e)`` over ``instance_plan(env, episodes)``."""
    returns: list[float] = []
    for single, n in instance_plan(env, episodes):
        returns += test(episodes=n, env=single)
        if single is not env:
            single.close()
    return returns
