"""Swappable algorithm parts chosen by name (seed 000): a preset's ``exploration``, ``buffer``
and ``update`` hyperparameters name its parts (``looprl.policies.greedy``,
``looprl.memory``, ``looprl.agents.dqn.UPDATES``, the PPO, PPG and SAC trainers); each preset
takes those that fit its policy (``parts``), and ``choose`` names the valid ones otherwise."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from looprl.agents.dqn import UPDATES as Q_UPDATES
from looprl.approximation import LinearScheduler
from looprl.core.suggest import did_you_mean
from looprl.policies import EXPLORATION, BoltzmannPolicy, EZGreedyPolicy, GreedyPolicy

__all__ = ["BUFFERS", "EXPLORATION", "EXPLORATION_SETTINGS", "MIGHTY_PARTS", "PARTS", "UPDATES",
           "beta_schedule", "check_parts", "choose", "epsilon_schedule", "exploration_policy",
           "idle_exploration", "replay_updates"]

BUFFERS = ("uniform", "prioritized", "nstep", "rollout")
UPDATES = (*tuple(Q_UPDATES)[:3], "ppo", "ppg", "sac")  # sarsa: VSarsa's own
PARTS: dict[str, Sequence[str]] = {"exploration": EXPLORATION, "buffer": BUFFERS,
                                   "update": UPDATES}

#: the hyperparameters each exploration reads (``exploration_policy``)
EXPLORATION_SETTINGS: dict[str, tuple[str, ...]] = {
    "epsilon_greedy": ("epsilon",),
    "decaying_epsilon_greedy": ("initial_exploration", "final_exploration",
                                "final_exploration_step"),
    "ez_greedy": ("epsilon", "ez_mu"), "stochastic": ("temperature",)}


#: Mighty's class names of its parts (``mighty.mighty_update.DoubleQLearning``) -> looprl's
MIGHTY_PARTS = {
    "EpsilonGreedy": "epsilon_greedy", "DecayingEpsilonGreedy": "decaying_epsilon_greedy",
    "EZGreedy": "ez_greedy", "StochasticPolicy": "stochastic", "MightyReplay": "uniform",
    "PrioritizedReplay": "prioritized", "MightyRolloutBuffer": "rollout",
    "QLearning": "q_learning", "DoubleQLearning": "double_q",
    "ClippedDoubleQLearning": "clipped_double_q", "PPOUpdate": "ppo", "SACUpdate": "sac"}


def choose(kind: str, name: str, valid: Sequence[str], algorithm: str) -> str:
    """``name`` if ``algorithm`` takes it as its ``kind`` part, else a one-line ``ValueError``
    (naming looprl's name of a Mighty class)."""
    if name in valid:
        return name
    choices = ", ".join(valid)
    if name in PARTS[kind]:
        raise ValueError(f"{algorithm} cannot use the {kind} {name!r}; it takes: {choices}")
    mighty = MIGHTY_PARTS.get(str(name).rpartition(".")[2])
    hint = (f" Did you mean {mighty!r} (Mighty's {str(name).rpartition('.')[2]})?"
            if mighty in PARTS[kind] else did_you_mean(name, list(PARTS[kind])))
    raise ValueError(f"Unknown {kind} {name!r}.{hint} {algorithm} takes: {choices}")


def check_parts(hp: dict[str, Any], algorithm: str, parts: dict[str, Sequence[str]]) -> None:
    """``choose`` for each kind of ``parts`` (kind -> valid names) that ``hp`` names."""
    for kind, valid in parts.items():
        if kind in hp:
            choose(kind, hp[kind], valid, algorithm)


def epsilon_schedule(hp: dict[str, Any]) -> LinearScheduler:
    """Epsilon at ``initial_exploration`` until ``replay_start_size`` steps (no update before:
    ALL's), then linear to ``final_exploration`` at ``final_exploration_step`` (ALL's ends at
    ``final_exploration_step - replay_start_size``)."""
    end = hp["final_exploration_step"]
    return LinearScheduler(hp["initial_exploration"], hp["final_exploration"],
                           min(hp.get("replay_start_size", 0), end), end, name="epsilon")


def exploration_policy(hp: dict[str, Any], q: Any, num_actions: int, algorithm: str) -> Any:
    """The exploration policy ``hp['exploration']`` names, over the Q approximation ``q``."""
    name = choose("exploration", hp["exploration"], EXPLORATION, algorithm)
    if name == "decaying_epsilon_greedy":
        return GreedyPolicy(q, num_actions, epsilon_schedule(hp))
    if name == "epsilon_greedy":
        return GreedyPolicy(q, num_actions, hp["epsilon"])
    if name == "ez_greedy":
        return EZGreedyPolicy(q, num_actions, hp["epsilon"], mu=hp["ez_mu"])
    return BoltzmannPolicy(q, num_actions, hp["temperature"])


def idle_exploration(hp: dict[str, Any]) -> dict[str, str]:
    """The settings of ``EXPLORATION_SETTINGS`` that ``hp['exploration']`` leaves unused -> the
    explorations that read them (``idle``); with Ape-X's rates (``apex``), all of them."""
    if hp.get("apex"):
        keys = {"exploration"}.union(*EXPLORATION_SETTINGS.values())
        return dict.fromkeys(sorted(keys), "apex=False (Ape-X's rates explore instead)")
    used = EXPLORATION_SETTINGS[hp["exploration"]]
    readers: dict[str, list[str]] = {}
    for name, keys in EXPLORATION_SETTINGS.items():
        for key in keys:
            if key not in used:
                readers.setdefault(key, []).append(repr(name))
    return {key: "exploration=" + " or ".join(names) for key, names in readers.items()}


def replay_updates(hp: dict[str, Any], train_steps: float) -> float:
    """The trainer steps of a replay preset in ``train_steps`` env steps: ``gradient_steps``
    per ``update_frequency`` steps after ``replay_start_size`` (at least 1; ``inf``: unknown)."""
    if not math.isfinite(train_steps):
        return math.inf
    steps = max(train_steps - hp["replay_start_size"], 1)
    return max(int(steps / hp["update_frequency"] * hp["gradient_steps"]), 1)


def beta_schedule(hp: dict[str, Any], train_steps: float) -> Any:
    """Prioritized replay's ``hp['beta']``, annealed linearly to 1 over the gradient steps of
    ``train_steps`` steps (constant for an unknown budget)."""
    samples = replay_updates(hp, train_steps)
    if samples == math.inf:
        return hp["beta"]
    return LinearScheduler(hp["beta"], 1.0, 0, samples, name="beta")
