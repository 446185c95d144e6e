"""Self-Paced Context Evaluation: a training instance set that grows as learning stalls.

SPaCE (Eimer et al., ICML 2021, https://arxiv.org/abs/2106.05009) trains first on the
instances the agent values most. Every ``check_every`` ended episodes it measures ``P``: the
mean ``V(s_0)`` over the current set (``measure='value'``; start states reset with ``seed``)
or the mean return of the window's episodes (``'return'``). If it changed by at most ``eta``
of itself, ``|P_now - P_before| <= eta * |P_before|`` (Mighty's relative criterion), the set
grows by ``increment`` instances, highest ``V(s_0)`` first. Logs
``log/space/instance_set_size``.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

import numpy as np
import torch

from looprl.core.suggest import check_choice, check_count, check_seed, is_number
from looprl.environments.contextual import Context, contextual_envs
from looprl.meta.component import MetaComponent
from looprl.meta.plr import logits_and_values


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
        if not (is_number(eta) and math.isfinite(eta) and eta >= 0):
            raise ValueError(f"eta must be a finite number >= 0 (a relative change), got {eta!r}")
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
                warnings.warn(f"SPaCE initial_size={self.initial_size} is more than the "
                              f"environment's {len(self.contexts)} context instances: it starts "
                              f"with all {len(self.contexts)} (pass initial_size <= "
                              f"{len(self.contexts)} to start with fewer)", stacklevel=2)
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
