"""Exploration policies over Q-values with ``GreedyPolicy``'s interface (``DQNPolicy`` takes any
as its ``exploration``), chosen by name (``EXPLORATION``) as in Mighty."""

from __future__ import annotations

from typing import Any

import torch

from looprl.core.hyperparameter import Hyperparameter
from looprl.core.suggest import check_positive
from looprl.policies.greedy import MASKED_Q, GreedyPolicy, random_actions

__all__ = ["EXPLORATION", "BoltzmannPolicy", "EZGreedyPolicy"]

#: Exploration names accepted by the value-based presets (``exploration`` hyperparameter).
EXPLORATION = ("epsilon_greedy", "decaying_epsilon_greedy", "ez_greedy", "stochastic")


class EZGreedyPolicy(GreedyPolicy):
    """Temporally extended epsilon-greedy (Dabney et al., 2021): with probability ``epsilon`` an
    *option* starts, one random action repeated ``n ~ zeta(mu)`` steps (``mu > 1``; at most
    ``max_duration``), until the episode ends or the action turns illegal (one per env copy;
    a single state is a 0-d batch)."""

    def __init__(self, q: Any, num_actions: int, epsilon: Any = 0.01, mu: float = 2.0,
                 max_duration: int = 100, seed: int | None = None):
        super().__init__(q, num_actions, epsilon, seed)
        if mu <= 1 or max_duration < 1:
            raise ValueError(f"ez-greedy needs mu > 1 and max_duration >= 1, got {mu}, "
                             f"{max_duration}")
        lengths = torch.arange(1, max_duration + 1, dtype=torch.float64)
        self._probs = (lengths ** -mu / (lengths ** -mu).sum()).float()
        self._left: torch.Tensor | None = None  # steps left of the running option per row
        self._repeat: torch.Tensor | None = None  # the repeated action per row

    def choose(self, state: Any, values: torch.Tensor | None = None) -> torch.Tensor:
        epsilon = self.next_epsilon()
        values = self._action_values(state) if values is None else values
        greedy = values.argmax(dim=-1)
        shape, device = greedy.shape, greedy.device
        generator = self._torch_generator(device)
        if self._left is None or self._left.shape != shape:
            self._left = torch.zeros(shape, dtype=torch.long, device=device)
            self._repeat = torch.zeros(shape, dtype=torch.long, device=device)
        illegal = values.gather(-1, self._repeat.unsqueeze(-1)).squeeze(-1) <= MASKED_Q
        done = torch.as_tensor(state["done"], device=device)
        left = self._left.masked_fill(done | illegal, 0)  # (options of illegal actions end)
        explore = torch.rand(shape, device=device, generator=generator) < epsilon
        start = (left == 0) & explore & ~done
        durations = torch.multinomial(self._probs.to(device), greedy.numel(), True,
                                      generator=generator)
        left = torch.where(start, durations.view(shape) + 1, left)
        self._repeat = torch.where(start, random_actions(values, generator), self._repeat)
        acting = left > 0
        self._left = left - acting.long()
        self._explored = acting
        return torch.where(acting, self._repeat, greedy)


class BoltzmannPolicy(GreedyPolicy):
    """Stochastic (Boltzmann) exploration: one action per row sampled from
    ``softmax(Q / temperature)``, ``temperature > 0`` (a single state is a 0-d batch)."""

    def __init__(self, q: Any, num_actions: int, temperature: float = 1.0, seed: int | None = None):
        super().__init__(q, num_actions, 0.0, seed)
        check_positive(temperature=temperature)
        self.temperature = temperature

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """``hp/temperature`` (it explores by temperature, not by an epsilon)."""
        return {"hp/temperature": Hyperparameter.attribute(self, "temperature", float)}

    def choose(self, state: Any, values: torch.Tensor | None = None) -> torch.Tensor:
        values = self._action_values(state) if values is None else values
        generator = self._torch_generator(values.device)
        # (the best value at 0 first: a tiny temperature gives -inf, not inf - inf = NaN)
        probs = torch.softmax((values - values.amax(-1, keepdim=True)) / self.temperature, dim=-1)
        actions = torch.multinomial(probs.reshape(-1, self.num_actions), 1, generator=generator)
        actions = actions.view(values.shape[:-1])
        self._explored = (actions != values.argmax(dim=-1)).reshape(-1)
        return actions
