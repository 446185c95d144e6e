"""Epsilon-greedy action selection over a ``QNetwork`` (``GreedyPolicy``: a decision per row of a
``StateArray``, a single ``State`` a 0-d batch), the per-row choice every value-based policy shares
(``epsilon_greedy``), and the exploration policies with its interface (``DQNPolicy`` takes any as
its ``exploration``), chosen by name (``EXPLORATION``) as in Mighty. Actions an ``action_mask``
rules out, or valued ``MASKED_Q`` or below, are never chosen."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import torch

from looprl.core.hyperparameter import Hyperparameter
from looprl.core.suggest import check_count, check_positive, check_seed, is_number
from looprl.nn.fields import legal_mask

__all__ = [
    "EXPLORATION", "MASKED_Q", "BoltzmannPolicy", "Coins", "EZGreedyPolicy", "GreedyPolicy",
    "ParallelGreedyPolicy", "apex_epsilons", "epsilon_greedy", "legal_actions", "random_actions",
]

#: The action value (or logit) that networks reading an action mask give the actions it rules out
MASKED_Q = -1e8


def legal_actions(state: Any) -> torch.Tensor:
    """The legal actions of ``state['action_mask']`` as bool (``legal_mask``: all of them where
    the mask rules out every one, an agent whose episode is over)."""
    return legal_mask(state["action_mask"])


def random_actions(values: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """A uniformly random legal action (value above ``MASKED_Q``) per row of values ``[..., n]``."""
    scores = torch.rand(values.shape, generator=generator, device=values.device)
    return scores.masked_fill_(values <= MASKED_Q, -1.0).argmax(dim=-1)


class Coins:
    """Reusable CPU buffers (and NumPy views) for ``epsilon_greedy``'s coins, one per batch shape,
    filled as ``torch.rand`` would (the same numbers) without making a tensor per call."""

    def __init__(self) -> None:
        self._made: dict[tuple[int, ...], tuple[torch.Tensor, np.ndarray]] = {}

    def __reduce__(self) -> tuple[type[Coins], tuple[()]]:
        return Coins, ()  # copies and pickles make their own (a copied view would not follow)

    def draw(self, shape: tuple[int, ...], generator: torch.Generator | None = None
             ) -> tuple[torch.Tensor, np.ndarray]:
        """Uniform ``[0, 1)`` coins of ``shape`` and their NumPy view (overwritten by the next)."""
        made = self._made.get(shape)
        if made is None:
            tensor = torch.empty(shape)
            made = self._made[shape] = (tensor, tensor.numpy())
        made[0].uniform_(generator=generator)  # (``torch.rand``'s kernel and draws)
        return made


def epsilon_greedy(values: torch.Tensor, epsilon: float | torch.Tensor,
                   generator: torch.Generator | None = None, coins: Coins | None = None
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(actions, explored)`` for action values ``[..., n]``: a row explores with probability
    ``epsilon`` (a float or one per row), taking ``random_actions``, else the argmax. Coins (into
    ``coins`` if given) and random actions are drawn on the CPU from ``generator`` (else torch's
    global one), the random actions only when some row explores; ``explored`` stays on the CPU."""
    greedy = values.argmax(dim=-1)
    if coins is None:
        drawn = torch.rand(greedy.shape, generator=generator)
        view = drawn.numpy()
    else:
        drawn, view = coins.draw(tuple(greedy.shape), generator)
    if isinstance(epsilon, (float, int)):  # (compared in float32 on the NumPy view: faster)
        hit = np.asarray(view < np.float32(epsilon))
        explore = torch.from_numpy(hit)
    else:
        explore = drawn < torch.as_tensor(epsilon).cpu()
        hit = explore.numpy()
    count = np.count_nonzero(hit)
    if not count:
        return greedy, explore
    if values.is_cpu:  # (nothing to move: ``cpu`` and each ``to`` cost a call)
        chosen = random_actions(values, generator)  # (every row explores: one env copy's)
        return (chosen if count == hit.size else torch.where(explore, chosen, greedy)), explore
    chosen = random_actions(values.cpu(), generator).to(values.device)
    return torch.where(explore.to(values.device), chosen, greedy), explore


class GreedyPolicy:
    """Epsilon-greedy policy over the action values of ``q`` (a ``QNetwork``); ``epsilon``: a float,
    a schedule with a ``value`` (read once per call) or one rate per env copy (``apex_epsilons``);
    ``seed`` seeds its own generators; ``evaluation``: ``q.eval``'s values."""

    def __init__(self, q: Any, num_actions: int, epsilon: Any = 0.0, seed: int | None = None,
                 evaluation: bool = False):
        check_count(num_actions=num_actions)
        if not callable(getattr(q, "no_grad", None)):
            raise TypeError(f"{type(self).__name__} takes a Q approximation (a QNetwork), got a "
                            f"{type(q).__name__}: wrap the module, QNetwork(model, optimizer)")
        self.q = q
        self._values = q.eval if evaluation else q.no_grad
        self.num_actions = int(num_actions)
        self.device = getattr(q, "device", torch.device("cpu"))
        self.epsilon = epsilon
        self._seed = check_seed(type(self).__name__, seed)
        self._generator: torch.Generator | None = None
        self._explored: Any = None  # (``explored``)

    @cached_property
    def _coins(self) -> Coins:  # (``choose``'s, made at its first call: also after unpickling)
        return Coins()

    @property
    def explored(self) -> torch.Tensor | None:
        """Which rows of the latest call explored (a bool per row; ``None`` before the first)."""
        explored = self._explored
        if isinstance(explored, tuple):  # a shape: none explored (made only when asked)
            return torch.zeros(explored, dtype=torch.bool)
        return explored

    @explored.setter
    def explored(self, rows: torch.Tensor) -> None:  # (``DQNPolicy.rollout``'s coins)
        self._explored = rows

    @property
    def epsilon(self) -> Any:
        """The exploration probability: a float (a schedule's current value, as ALL's
        ``Schedulable`` reads it, without advancing it) or one per env copy (a tensor)."""
        return float(self._epsilon.current) if self._scheduled else self._epsilon

    @property
    def epsilon_schedule(self) -> Any:
        """The schedule ``epsilon`` reads its values from (``None``: a fixed rate)."""
        return self._epsilon if self._scheduled else None

    @epsilon.setter
    def epsilon(self, epsilon: Any) -> None:
        # look the property up on the type: reading it would advance the schedule
        self._scheduled = hasattr(type(epsilon), "value")
        self._per_env = False
        if not self._scheduled and not isinstance(epsilon, int | float):
            kinds = "epsilon must be a float, a schedule or one float per env copy, got"
            try:
                epsilon = torch.as_tensor(epsilon, dtype=torch.float32, device=self.device)
            except (TypeError, ValueError, RuntimeError):
                raise TypeError(f"{kinds} {epsilon!r}") from None
            if epsilon.dim() > 1:
                raise ValueError(f"{kinds} shape {tuple(epsilon.shape)}")
            self._per_env = epsilon.dim() == 1
            epsilon = epsilon if self._per_env else float(epsilon)
        if self._scheduled:  # (a LinearScheduler's values lie between its ends; others' their own)
            ends = [getattr(epsilon, end, 0.0) for end in ("initial_value", "final_value")]
            in_range = all(0.0 <= end <= 1.0 for end in ends)
            shown = f"a schedule from {ends[0]!r} to {ends[1]!r}"
        elif isinstance(epsilon, int | float):
            in_range, shown = 0.0 <= epsilon <= 1.0, repr(epsilon)
        else:  # (one per copy)
            in_range, shown = bool(((epsilon >= 0) & (epsilon <= 1)).all()), repr(epsilon)
        if not in_range:
            raise ValueError(f"epsilon is a probability in [0, 1], got {shown}")
        self._epsilon = epsilon

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """``hp/epsilon``: a float (a schedule's current value) or one per env copy."""
        return {"hp/epsilon": Hyperparameter(self._current_epsilon, self._set_epsilon, float)}

    def _current_epsilon(self) -> float | list[float]:
        if self._scheduled:
            return float(self._epsilon.current)
        return self._epsilon.tolist() if self._per_env else float(self._epsilon)

    def _set_epsilon(self, value: Any) -> None:
        many = isinstance(value, list | tuple)
        self.epsilon = [float(v) for v in value] if many else float(value)

    def next_epsilon(self, steps: int = 1) -> float:
        """The exploration rate of the next action (advances a schedule ``steps`` steps)."""
        if not self._scheduled:
            return self._epsilon
        value = self._epsilon.value
        for _ in range(steps - 1):  # (any schedule's ``value``: each read is a step)
            self._epsilon.value  # noqa: B018
        return value

    def no_grad(self, state: Any) -> torch.Tensor:
        """Epsilon-greedy actions for ``state`` (``choose``; no gradients are tracked)."""
        return self.choose(state)

    __call__ = no_grad

    def eval(self, state: Any) -> torch.Tensor:
        """Greedy actions for ``state``, with the Q network in eval mode."""
        return self._action_values(state, self.q.eval).argmax(dim=-1)

    def _action_values(self, state: Any, forward: Any = None) -> torch.Tensor:
        """The Q-values of ``state`` by ``forward`` (default: training's), masked (``MASKED_Q``)."""
        values = (forward or self._values)(state)
        if values.shape[-1] != self.num_actions:  # (else a random action could be out of range)
            raise ValueError(f"{type(self).__name__}(q, num_actions={self.num_actions}) over a q "
                             f"that gives {values.shape[-1]} action values per state: pass "
                             "the number of actions of q's model")
        if isinstance(state, dict) and "action_mask" in state:
            values = values.masked_fill(~legal_actions(state).to(values.device), MASKED_Q)
        return values

    def choose(self, state: Any, values: torch.Tensor | None = None) -> torch.Tensor:
        """Per-row epsilon-greedy actions for a batch (from masked ``values`` if given)."""
        epsilon = self.next_epsilon()
        values = self._action_values(state) if values is None else values
        if not self._per_env and epsilon <= 0:
            greedy = values.argmax(dim=-1)
            self._explored = tuple(greedy.shape)
            return greedy
        if self._per_env and epsilon.shape != values.shape[:-1]:
            raise ValueError(f"{len(epsilon)} epsilons (one per env copy) for a batch of "
                             f"{tuple(values.shape[:-1])} states")
        actions, self._explored = epsilon_greedy(
            values, epsilon, self._torch_generator(torch.device("cpu")), self._coins)
        return actions

    def _torch_generator(self, device: torch.device) -> torch.Generator | None:
        if self._seed is None:
            return None
        if self._generator is None or self._generator.device != device:
            self._generator = torch.Generator(device=device).manual_seed(self._seed)
        return self._generator


def apex_epsilons(n: int, epsilon: float = 0.4, alpha: float = 7.0) -> list[float]:
    """Ape-X's per-actor exploration rates (Horgan et al., 2018): ``epsilon ** (1 + alpha * i /
    (n - 1))`` for copy ``i``."""
    check_count(n=n)
    return [epsilon ** (1 + alpha * i / max(n - 1, 1)) for i in range(n)]


def check_explorations(rates: Any, actors: int | None = None) -> None:
    """A one-line ``ValueError`` unless ``rates`` (``AlgorithmSpec.explorations``; ``None``
    passes) is a list of probabilities, at most one per actor worker of ``actors``."""
    if rates is None:
        return
    if not isinstance(rates, list | tuple):
        raise ValueError(f"AlgorithmSpec's explorations are a list (or tuple) of probabilities, "
                         f"one per actor, got a {type(rates).__name__}: give list(...) of it")
    if not all(is_number(rate) and 0 <= rate <= 1 for rate in rates):
        raise ValueError(f"AlgorithmSpec's explorations are probabilities in [0, 1], one per "
                         f"actor, got {rates!r}")
    if actors is not None and len(rates) > actors:
        raise ValueError(f"AlgorithmSpec's explorations are one rate per actor worker, got "
                         f"{len(rates)} for runtime.actors={actors}: give {actors} (e.g. "
                         f"apex_epsilons({actors})), or set runtime.actors={len(rates)}")


#: ALL's name for the per-row policy, which ``GreedyPolicy`` is (single states: 0-d batches)
ParallelGreedyPolicy = GreedyPolicy


#: Exploration names accepted by the value-based presets (``exploration`` hyperparameter).
EXPLORATION = ("epsilon_greedy", "decaying_epsilon_greedy", "ez_greedy", "stochastic")


class EZGreedyPolicy(GreedyPolicy):
    """Temporally extended epsilon-greedy (Dabney et al., 2021): with probability ``epsilon`` a
    random action is repeated ``n ~ zeta(mu)`` steps (``mu > 1``; at most ``max_duration``), until
    the episode ends or the action turns illegal (one option per row)."""

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
    """Boltzmann exploration: one action per row sampled from ``softmax(Q / temperature)``."""

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
