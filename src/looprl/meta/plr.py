"""Curricula over the instance set of a ``ContextualEnvironment``: ``PLR`` and ``SPaCE``.

Prioritized Level Replay (Jiang, Grefenstette and Rocktäschel, ICML 2021,
https://arxiv.org/abs/2010.03934) scores every level (instance id) by how much the agent can
still learn on it. At each episode end it updates the level's score and picks the copy's
``next_instance``: with probability ``replay_prob`` (once ``min_seen`` levels were seen;
always when every level was) it replays a seen level with probability

    P = (1 - rho) * P_S + rho * P_C,
    P_S(i) ∝ (1 / rank(S_i)) ** (1 / beta)  (rank 1: the highest score),
    P_C(i) ∝ c - C_i                (c: episodes scored so far, C_i: c when i was last scored),

else an unseen level. The scores (``STRATEGIES``) are means over the episode's steps, from
``metrics['policy'].logits_and_values``; ``random`` picks every level uniformly (domain
randomization: the baseline of the paper's code and Mighty's ``sample_strategy='random'``).
Logs ``log/plr/mean_score``, ``log/plr/seen`` and ``log/plr/replay_share``. On Ray every
strategy but ``random`` needs ``runtime.policy_workers=0``.

Self-Paced Context Evaluation (Eimer et al., ICML 2021, https://arxiv.org/abs/2106.05009)
trains first on the instances the agent values most. Every ``check_every`` ended episodes it
measures ``P``: the mean ``V(s_0)`` over the current set (``measure='value'``; start states
reset with ``seed``) or the mean return of the window's episodes (``'return'``). If it changed
by at most ``eta`` of itself, ``|P_now - P_before| <= eta * |P_before|`` (Mighty's relative
criterion), the set grows by ``increment`` instances, highest ``V(s_0)`` first. Logs
``log/space/instance_set_size``.
"""

from __future__ import annotations

import copy
import logging
import math
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from looprl.core.ranges import NON_NEGATIVE, POSITIVE, SHARE, UNIT
from looprl.core.suggest import (
    check_choice,
    check_count,
    check_seed,
    is_number,
    is_whole,
    warn_once,
)
from looprl.environments.contextual import Context, contextual_envs
from looprl.memory.returns import generalized_advantage_estimate
from looprl.meta.component import MetaComponent
from looprl.policies.distributions import CategoricalHead

VALUE_STRATEGIES = ("one_step_td_error", "gae", "value_l1")
#: The strategies that score with the action probabilities ``p``, by name: one value per step
#: (a row of logits): the entropy, ``1 - max_a p``, ``1 - (p_1 - p_2)`` (the two largest).
PROBABILITY_SCORES = {
    "policy_entropy": CategoricalHead.entropy,
    "least_confidence": lambda logits: 1 - torch.softmax(logits, dim=-1).max(-1).values,
    "min_margin": lambda logits: 1 + torch.softmax(logits, dim=-1).topk(2).values.diff()[:, 0],
}
STRATEGIES = ("random", *PROBABILITY_SCORES, *VALUE_STRATEGIES)
_PLR_STREAM = 0x91A  # (PLR's draws apart from the other users of the run's seed)
#: How many of the latest level choices ``PLR.choices`` keeps (a long run makes millions).
KEPT_CHOICES = 1000

log = logging.getLogger(__name__)


def episode_score(strategy: str, rewards: torch.Tensor, logits: torch.Tensor | None = None,
                  values: torch.Tensor | None = None, last_value: float = 0.0,
                  gamma: float = 0.99, lam: float = 0.95,
                  rng: np.random.Generator | None = None) -> float:
    """The score of one episode by ``strategy``; ``last_value``: ``V(s_T)`` (0 if terminated)."""
    check_choice("PLR scoring strategy", strategy, STRATEGIES)
    if strategy == "random":
        return float((rng or np.random.default_rng()).random())
    if strategy in PROBABILITY_SCORES:  # (the mean over steps)
        return float(PROBABILITY_SCORES[strategy](logits).mean())
    rewards, values = rewards.float(), values.float()
    next_values = torch.cat([values[1:], torch.tensor([float(last_value)])])  # V(s_T): last
    if strategy == "one_step_td_error":
        return float((rewards + gamma * next_values - values).abs().mean())
    ones = torch.ones_like(rewards)  # within one episode: bootstrap every step, no reset
    advantages = generalized_advantage_estimate(rewards, values, next_values, ones, 1 - ones,
                                                gamma, lam)
    return float(advantages.mean() if strategy == "gae" else advantages.abs().mean())


class _Step(NamedTuple):
    """One row of a running episode."""

    reward: torch.Tensor
    terminated: bool
    logits: torch.Tensor | None
    value: torch.Tensor | None


def logits_and_values(policy: Any, obs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``policy.logits_and_values(obs)``: action logits ``[n, actions]`` and values ``[n]``;
    ``ValueError`` for a policy without it."""
    method = getattr(policy, "logits_and_values", None)
    if method is None:
        raise ValueError(
            f"{type(policy).__name__} gives no action logits and values: PLR and SPaCE score "
            "with an actor-critic policy (PPO, A2C, ...) or a Q policy (the DQN family)")
    return method(obs)


class PLR(MetaComponent):
    """Prioritized Level Replay (see the module's docstring); ``score_ema``: weight of a new
    score, ``levels``: the level ids (``None``: the environment's)."""

    needs_contexts = True
    _placed = False  # ``setup`` took the levels, or gave them to the environment

    shown = ("strategy", "replay_prob", "beta", "rho")
    state_attributes = ("levels", "scores", "seen", "last_played", "episodes", "rng")

    def __init__(self, strategy: str = "value_l1", replay_prob: float = 0.5, beta: float = 0.1,
                 rho: float = 0.1, gamma: float = 0.99, lam: float = 0.95,
                 score_ema: float = 1.0, min_seen: int = 1,
                 levels: Sequence[int] | None = None, seed: int | None = None):
        super().__init__()
        self.strategy = check_choice("PLR scoring strategy", strategy, STRATEGIES)
        if not is_whole(min_seen) or min_seen < 0:
            raise ValueError(f"PLR's min_seen must be a whole number >= 0, got {min_seen!r}")
        for name, value, valid in (("replay_prob", replay_prob, UNIT), ("rho", rho, UNIT),
                                   ("gamma", gamma, UNIT), ("lam", lam, UNIT),
                                   ("score_ema", score_ema, SHARE), ("beta", beta, POSITIVE)):
            setattr(self, name, float(valid.check(name, value, "PLR")))
        self.min_seen = int(min_seen)
        self.rng = np.random.default_rng(check_seed("PLR", seed))
        self._own_seed = seed is not None
        self.levels: list[int] = []
        self.scores, self.seen = np.zeros(0), np.zeros(0, dtype=bool)
        self.last_played = np.zeros(0, dtype=np.int64)
        self.episodes = 0  # c: episodes scored so far
        # the latest level choices (copy, level, replayed), for inspection
        self.choices: deque[tuple[int, int, bool]] = deque(maxlen=KEPT_CHOICES)
        if levels is not None:
            self.set_levels(levels)
        self._running: dict[int, list[_Step]] = {}  # env copy -> its running episode
        self._last_obs: dict[int, torch.Tensor] = {}  # env copy -> its latest next_state
        self._replays = [0, 0]  # replays and level choices since the last logging
        self.pre_episode_methods.append(self.setup)
        self.post_step_methods.append(self.record)
        self.post_episode_methods.append(self.score_and_choose)

    def seed_run(self, seed: int) -> None:
        """Draw levels from ``seed`` (the run's), unless PLR was given a ``seed``."""
        if not self._own_seed:
            self.rng = np.random.default_rng([seed, _PLR_STREAM])

    def set_levels(self, levels: Sequence[int]) -> None:
        """Start over with the level ids ``levels`` (all unseen)."""
        given = list(levels) if isinstance(levels, Iterable) and not isinstance(levels, str) \
            else None
        if given is None or not all(is_whole(level) for level in given):
            raise ValueError(f"PLR levels are instance ids (a list of integers), got {levels!r}")
        self.levels = [int(level) for level in given]
        if not self.levels:
            raise ValueError("PLR needs at least one level")
        if len(set(self.levels)) < len(self.levels):
            raise ValueError(f"PLR levels must be distinct, got {self.levels}: each level "
                             "is scored once")
        n = len(self.levels)
        self.scores, self.seen = np.zeros(n), np.zeros(n, dtype=bool)
        self.last_played = np.zeros(n, dtype=np.int64)

    def update_score(self, level: int, score: float) -> None:
        """Record ``score`` for ``level`` (EMA with weight ``score_ema``) and mark it played
        (``FloatingPointError`` for no finite number: it would rank its level for good)."""
        if not is_whole(level) or int(level) not in self.levels:
            raise ValueError(f"PLR has no level {level!r}: its levels are {self.levels} "
                             "(set_levels, or PLR(levels=...))")
        if not is_number(score) or not math.isfinite(score):  # (of a run that diverges)
            raise FloatingPointError(f"PLR's score of level {level} is {score!r}, no finite "
                                     "number")
        i = self.levels.index(int(level))
        old = self.scores[i] if self.seen[i] else score
        self.scores[i] = (1 - self.score_ema) * old + self.score_ema * score
        self.seen[i] = True
        self.episodes += 1
        self.last_played[i] = self.episodes

    def score_weights(self) -> np.ndarray:
        """``P_S``: rank prioritization over the seen levels (0 for the unseen)."""
        weights = np.zeros(len(self.levels))
        seen = np.flatnonzero(self.seen)
        if len(seen) == 0:
            return weights
        order = seen[np.argsort(-self.scores[seen], kind="stable")]
        weights[order] = (1.0 / np.arange(1, len(order) + 1)) ** (1.0 / self.beta)
        return weights / weights.sum()

    def staleness_weights(self) -> np.ndarray:
        """``P_C``: proportional to ``c - C_i`` over the seen levels (uniform if all 0)."""
        weights = np.where(self.seen, self.episodes - self.last_played, 0).astype(float)
        if weights.sum() <= 0:
            weights = self.seen.astype(float)
        total = weights.sum()
        return weights / total if total > 0 else weights

    def replay_distribution(self) -> np.ndarray:
        """``P = (1 - rho) P_S + rho P_C`` over ``levels``."""
        return (1 - self.rho) * self.score_weights() + self.rho * self.staleness_weights()

    def sample_level(self) -> tuple[int, bool]:
        """The next level and whether it is a replay (the paper's Algorithm 1)."""
        if self.strategy == "random":  # (uniform: no score decides)
            index = int(self.rng.integers(len(self.levels)))
            return self.levels[index], bool(self.seen[index])
        unseen = np.flatnonzero(~self.seen)
        n_seen = len(self.levels) - len(unseen)
        replay = n_seen > 0 and (len(unseen) == 0 or (
            n_seen >= self.min_seen and self.rng.random() < self.replay_prob))
        if replay:
            return self.levels[int(self.rng.choice(len(self.levels),
                                                   p=self.replay_distribution()))], True
        return self.levels[int(unseen[self.rng.integers(len(unseen))])], False

    def setup(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Take the environment's levels, or have its copies play only the levels given (once)."""
        if self._placed:
            return metrics
        wrappers = contextual_envs(metrics["env"])
        if not self.levels:
            self.set_levels(wrappers[0].instance_ids)
        else:
            contexts = wrappers[0].contexts
            missing = [level for level in self.levels if level not in contexts]
            if missing:
                raise ValueError(f"PLR levels {missing} are not instances of the environment "
                                 f"(ids {', '.join(map(str, list(contexts)[:10]))}"
                                 f"{', ...' if len(contexts) > 10 else ''}): give levels among "
                                 "them, or levels=None for all of them")
            for wrapper in wrappers:
                wrapper.set_instance_set({level: contexts[level] for level in self.levels})
        self._placed = True
        return metrics

    def record(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Add each row to its env copy's running episode."""
        transition = metrics["transition"]
        reward = transition["reward"].detach().float().cpu()
        terminated = transition["terminated"].tolist()
        logits = values = [None] * len(terminated)
        if self.strategy != "random":
            logits, values = logits_and_values(self._policy(metrics), transition["state"])
        next_state = transition["next_state"]
        for row, i in enumerate(transition["env_index"].tolist()):
            self._running.setdefault(i, []).append(
                _Step(reward[row], terminated[row], logits[row], values[row]))
            self._last_obs[i] = next_state[row].clone()
        return metrics

    def score_and_choose(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Score the episodes that ended and choose their copies' next levels."""
        self.setup(metrics)
        wrappers = contextual_envs(metrics["env"])
        if "log/plr/replay_share" not in metrics:  # logged: a new interval
            self._replays = [0, 0]  # replays, choices
        for i in metrics["ended"].nonzero().flatten().tolist():
            score = self._score(i, self._running.pop(i, []), metrics)
            self.update_score(wrappers[i].instance_id, score)
            level, replayed = self.sample_level()
            wrappers[i].next_instance = level
            self.choices.append((i, level, replayed))
            self._replays = [self._replays[0] + replayed, self._replays[1] + 1]
        seen = self.seen.any()
        metrics["log/plr/mean_score"] = float(self.scores[self.seen].mean()) if seen else 0.0
        metrics["log/plr/seen"] = int(self.seen.sum())
        metrics["log/plr/replay_share"] = self._replays[0] / max(self._replays[1], 1)
        return metrics

    def _policy(self, metrics: dict[str, Any]) -> Any:
        policy = metrics.get("policy")
        if policy is None:
            raise ValueError(f"PLR(strategy={self.strategy!r}) scores with the policy's "
                             "outputs but metrics['policy'] is None; use strategy='random' "
                             "without a policy")
        if self.strategy in PROBABILITY_SCORES and getattr(policy, "continuous_action", False):
            raise ValueError(f"PLR(strategy={self.strategy!r}) scores with action "
                             "probabilities, which a policy over continuous actions does not "
                             f"give; use {', '.join(VALUE_STRATEGIES)} or random")
        return policy

    def _score(self, i: int, steps: list[_Step], metrics: dict[str, Any]) -> float:
        """The strategy's score of copy ``i``'s episode (``steps``: its rows, in order)."""
        if not steps:
            return 0.0
        rewards = torch.stack([step.reward for step in steps])
        logits = values = None
        last_value = 0.0
        if steps[0].logits is not None:
            logits = torch.stack([step.logits for step in steps])
            values = torch.stack([step.value for step in steps])
            if self.strategy in VALUE_STRATEGIES and not steps[-1].terminated:
                last_obs = self._last_obs[i][None]  # truncated: bootstrap
                last_value = float(logits_and_values(self._policy(metrics), last_obs)[1][0])
        return episode_score(self.strategy, rewards, logits, values, last_value, self.gamma,
                             self.lam, self.rng)


class SPaCE(MetaComponent):
    """Self-Paced Context Evaluation (see the module's docstring)."""

    needs_contexts = True

    shown = ("initial_size", "increment", "eta", "check_every", "measure")
    state_attributes = ("contexts", "current", "history", "last", "_window", "_episodes")
    _placed = False  # ``_write`` gave the environment's copies the set (not a state attribute)

    def __init__(self, initial_size: int = 1, increment: int = 1, eta: float = 0.1,
                 check_every: int = 10, measure: str = "value", seed: int | None = 0):
        super().__init__()
        check_count(initial_size=initial_size, increment=increment, check_every=check_every)
        NON_NEGATIVE.check("eta", eta, "SPaCE")  # (a relative change)
        self.initial_size, self.increment = int(initial_size), int(increment)
        self.eta, self.check_every = float(eta), int(check_every)
        self.measure = check_choice("SPaCE measure", measure, ("value", "return"))
        self.seed = check_seed("SPaCE", seed)
        self.contexts: dict[int, Context] = {}
        self.current: list[int] = []  # the training set, in the order instances were added
        self.history: list[float] = []  # the performance at each check
        self.last: float | None = None
        self._window: list[float] = []
        self._episodes = 0
        self._start_obs: dict[int, torch.Tensor] = {}
        self.pre_episode_methods.append(self.setup)
        self.post_episode_methods.append(self.evaluate)

    @property
    def size(self) -> int:
        """Instances in the training set."""
        return len(self.current)

    def start_states(self, env: Any) -> dict[int, torch.Tensor]:
        """Instance id -> the start observation of that instance (computed once)."""
        if not self._start_obs:
            probe = copy.deepcopy(contextual_envs(env)[0])
            probe.set_instance_set(self.contexts)
            for instance in self.contexts:
                probe.next_instance = instance
                obs, _ = probe.reset(seed=self.seed)
                self._start_obs[instance] = torch.as_tensor(np.asarray(obs))
            probe.close()
        return self._start_obs

    def values(self, metrics: dict[str, Any], instances: list[int]) -> np.ndarray | None:
        """``V(s_0)`` of ``instances`` from ``metrics['policy']``; ``None`` without a policy."""
        policy = metrics.get("policy")
        if policy is None or not instances:
            return None
        starts = self.start_states(metrics["env"])
        obs = torch.stack([starts[i] for i in instances])
        return logits_and_values(policy, obs)[1].numpy().astype(float)

    def _by_value(self, metrics: dict[str, Any], instances: list[int]) -> list[int]:
        values = self.values(metrics, instances)
        if values is None:
            return list(instances)
        return [instances[j] for j in np.argsort(-values, kind="stable")]

    def setup(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """At the first call: the initial set (or the one a checkpoint's state loaded: a Ray
        actor's new copies hold every instance), written to every copy."""
        if not self.contexts:
            self.contexts = contextual_envs(metrics["env"])[0].contexts
            if self.initial_size > len(self.contexts):
                warn_once(log, "SPaCE initial_size=%d is more than the environment's %d context "
                          "instances: it starts with all %d (pass initial_size <= %d to start "
                          "with fewer)", self.initial_size, *[len(self.contexts)] * 3)
            self.current = self._by_value(metrics, list(self.contexts))[: self.initial_size]
        if not self._placed:
            self._write(metrics)
        metrics["log/space/instance_set_size"] = self.size
        return metrics

    def evaluate(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Count the ended episodes; at each check, grow the set if ``P`` changed by at most
        ``eta`` of itself."""
        self.setup(metrics)
        self._window += [float(r) for r in metrics["episode_returns"]]
        self._episodes += int(metrics["ended"].sum())
        if self._episodes >= self.check_every:
            self._episodes = 0
            self._check(metrics)
        metrics["log/space/instance_set_size"] = self.size
        return metrics

    def performance(self, metrics: dict[str, Any]) -> float:
        """The measured performance ``P`` now."""
        if self.measure == "value":
            values = self.values(metrics, self.current)
            if values is None:
                raise ValueError("SPaCE(measure='value') needs metrics['policy'] with values; "
                                 "use measure='return' without one")
            return float(values.mean())
        return float(np.mean(self._window)) if self._window else float("nan")

    def _check(self, metrics: dict[str, Any]) -> None:
        now = self.performance(metrics)
        self._window = []
        self.history.append(now)
        before, self.last = self.last, now
        if before is not None and abs(now - before) <= self.eta * abs(before) and (
                self.size < len(self.contexts)):
            rest = [i for i in self.contexts if i not in self.current]
            self.current += self._by_value(metrics, rest)[: self.increment]
            self._write(metrics)
            if self.measure == "value":
                self.last = self.performance(metrics)

    def _write(self, metrics: dict[str, Any]) -> None:
        subset = {i: self.contexts[i] for i in self.current}
        for wrapper in contextual_envs(metrics["env"]):
            wrapper.set_instance_set(subset)
        self._placed = True
