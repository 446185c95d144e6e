"""Epsilon-greedy action selection over a ``QNetwork``.

* ``GreedyPolicy(q, num_actions, epsilon)`` -- for a single ``State`` it returns a 0-d
  ``LongTensor``: with probability ``epsilon`` a uniformly random action (drawn with
  Python's ``random``, without running the Q network), else ``argmax_a q(s, a)``. For a
  ``StateArray`` it behaves like ``ParallelGreedyPolicy``.
* ``ParallelGreedyPolicy(q, num_actions, epsilon)`` -- for a ``StateArray``: one
  exploration decision per row, all in torch ops (no Python loop); returns a
  ``LongTensor`` of shape ``state.shape``.

``epsilon`` is a float or a schedule with a ``value`` property (e.g.
``LinearScheduler``), read once per call -- once per action for a single state, once
per batch for a ``StateArray``. ``eval`` always acts greedily.

With ``evaluation=True`` the action values come from the network in eval mode (the mean
weights of noisy layers, no dropout): evaluation agents use it, so that epsilon applies on
top of the noise-free network.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from looprl.core.state import StateArray

__all__ = ["GreedyPolicy", "ParallelGreedyPolicy"]


class GreedyPolicy:
    """Epsilon-greedy policy over the action values of ``q`` (see the module docstring).

    Args:
        q: a ``QNetwork`` (anything with ``no_grad``/``eval`` returning action values).
        num_actions: number of discrete actions.
        epsilon: exploration probability, a float or a schedule with a ``value``.
        seed: seeds the policy's own random generators; ``None`` uses the global ``random``
            module (and torch's global generator for batches).
        evaluation: compute action values with the network in eval mode (``q.eval``).
    """

    def __init__(
        self,
        q: Any,
        num_actions: int,
        epsilon: Any = 0.0,
        seed: int | None = None,
        evaluation: bool = False,
    ):
        self.q = q
        self._values = q.eval if evaluation else q.no_grad
        self.num_actions = num_actions
        self.epsilon = epsilon
        self.device = getattr(q, "device", torch.device("cpu"))
        self._rng = random.Random(seed) if seed is not None else None
        self._seed = seed
        self._generator: torch.Generator | None = None

    @property
    def epsilon(self) -> Any:
        """The exploration probability (a float or a schedule)."""
        return self._epsilon

    @epsilon.setter
    def epsilon(self, epsilon: Any) -> None:
        self._epsilon = epsilon
        # look the property up on the type: reading it would advance the schedule
        self._scheduled = hasattr(type(epsilon), "value")

    def _next_epsilon(self) -> float:
        return self._epsilon.value if self._scheduled else self._epsilon

    def __call__(self, state: Any) -> torch.Tensor:
        """Epsilon-greedy actions for ``state`` (no gradients are tracked)."""
        return self.no_grad(state)

    def no_grad(self, state: Any) -> torch.Tensor:
        """Epsilon-greedy actions for ``state`` under ``torch.no_grad()``."""
        if isinstance(state, StateArray):
            return self._batch(state)
        epsilon = self._next_epsilon()
        if epsilon > 0:
            rng = self._rng or random
            if rng.random() < epsilon:
                return torch.tensor(rng.randrange(self.num_actions), device=self.device)
        return self._values(state).argmax(dim=-1)

    def eval(self, state: Any) -> torch.Tensor:
        """Greedy actions for ``state``, with the Q network in eval mode."""
        return self.q.eval(state).argmax(dim=-1)

    def _batch(self, state: Any) -> torch.Tensor:
        """Per-row epsilon-greedy actions for a batch of states."""
        epsilon = self._next_epsilon()
        greedy = self._values(state).argmax(dim=-1)
        if epsilon <= 0:
            return greedy
        generator = self._torch_generator(greedy.device)
        shape = greedy.shape
        explore = torch.rand(shape, device=greedy.device, generator=generator) < epsilon
        actions = torch.randint(self.num_actions, shape, device=greedy.device, generator=generator)
        return torch.where(explore, actions, greedy)

    def _torch_generator(self, device: torch.device) -> torch.Generator | None:
        if self._seed is None:
            return None
        if self._generator is None or self._generator.device != device:
            self._generator = torch.Generator(device=device).manual_seed(self._seed)
        return self._generator


class ParallelGreedyPolicy(GreedyPolicy):
    """Epsilon-greedy policy with one exploration decision per row, in torch ops.

    Same arguments as ``GreedyPolicy``; single states are treated as 0-d batches.
    """

    def no_grad(self, state: Any) -> torch.Tensor:
        """Per-row epsilon-greedy actions for ``state`` under ``torch.no_grad()``."""
        return self._batch(state)
