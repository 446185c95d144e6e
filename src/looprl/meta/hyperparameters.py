"""An agent's hyperparameters as the ``hp/*`` keys of the metrics dictionary.

``agent_hyperparameters(agent)`` finds, through the agent's public parts (its ``policy``,
``trainer`` and their approximations), every hyperparameter it can read and change while
training, and returns one ``Hyperparameter`` (a getter and a setter) per ``hp/*`` key:

================== ========================================================================
key                what it changes
================== ========================================================================
``hp/lr``          the learning rate of every optimizer (``hp/lr/<name>`` of one, e.g.
                   ``hp/lr/actor``); setting it takes over from the preset's lr schedule
``hp/epsilon``     the exploration rate of epsilon-greedy policies (DQN family, VQN, VSarsa;
                   a list with one epsilon per env copy) and of ez-greedy
``hp/temperature`` the temperature of Boltzmann exploration (``exploration='stochastic'``)
``hp/discount``    gamma, in the trainer and (on-policy) the advantage estimation
``hp/batch_size``  transitions per gradient step (replay) or per minibatch (PPO, PPG)
``hp/clip``        PPO's ratio clipping range
``hp/entropy_coef`` the entropy bonus of actor-critic losses
``hp/value_coef``  the value-loss weight of actor-critic losses
``hp/lam``         GAE's lambda
``hp/epochs``      passes over each rollout (PPO, PPG)
``hp/tau``         the Polyak rate of soft target networks (DDPG, TD3, SAC)
``hp/target_period`` updates between hard target-network copies (DQN family)
``hp/update_frequency`` env steps between training phases (replay agents)
``hp/gradient_steps`` gradient steps per training phase (replay agents)
================== ========================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from looprl.approximation import Approximation
from looprl.approximation.target import FixedTarget, PolyakTarget

#: ``hp/<name>`` -> attribute paths on the (innermost) agent, first match wins.
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "discount": ("trainer.discount_factor", "discount_factor"),
    "batch_size": ("minibatch_size", "trainer.minibatch_size"),
    "clip": ("trainer.clip",),
    "entropy_coef": ("trainer.entropy_coef",),
    "value_coef": ("trainer.value_coef",),
    "lam": ("trainer.gae_lambda", "lam"),
    "epochs": ("trainer.epochs",),
    "update_frequency": ("update_frequency",),
    "gradient_steps": ("gradient_steps",),
}


@dataclass
class Hyperparameter:
    """One ``hp/*`` key: how to read its current value and how to change it."""

    get: Callable[[], Any]
    set: Callable[[Any], None]


def inner_agent(agent: Any) -> Any:
    """The agent inside any bodies (``Body.agent`` chains): the one holding the trainer."""
    while "trainer" not in vars(agent) and hasattr(agent, "agent"):
        agent = agent.agent
    return agent


def _resolve(root: Any, path: str) -> tuple[Any, str] | None:
    """``(owner, attribute)`` of a dotted ``path`` under ``root`` if every part exists."""
    *parents, name = path.split(".")
    for part in parents:
        root = getattr(root, part, None)
        if root is None:
            return None
    if not hasattr(root, name):
        return None
    value = getattr(root, name)
    return (root, name) if isinstance(value, int | float) or callable(value) else None


def approximations(agent: Any) -> dict[str, Approximation]:
    """The ``Approximation`` objects of the agent's policy and trainer, by name."""
    found: dict[int, Approximation] = {}
    for part in (getattr(agent, "policy", None), getattr(agent, "trainer", None)):
        for value in _attributes(part):
            if isinstance(value, Approximation):
                found[id(value)] = value
            for nested in _attributes(value):
                if isinstance(nested, Approximation):
                    found[id(nested)] = nested
    return {approximation.name: approximation for approximation in found.values()}


def _attributes(obj: Any) -> list[Any]:
    return list(vars(obj).values()) if hasattr(obj, "__dict__") else []


def agent_hyperparameters(agent: Any) -> dict[str, Hyperparameter]:
    """Every ``hp/*`` key of ``agent`` (see the module docstring) with its getter and setter."""
    agent = inner_agent(agent)
    found: dict[str, Hyperparameter] = {}
    _learning_rates(agent, found)
    greedy = getattr(getattr(agent, "policy", None), "greedy", None)
    if hasattr(greedy, "temperature"):
        found["hp/temperature"] = _attribute(greedy, "temperature")
    elif greedy is not None:
        found["hp/epsilon"] = Hyperparameter(lambda: _current(greedy.epsilon),
                                             lambda v: setattr(greedy, "epsilon", _epsilon(v)))
    for name, paths in ATTRIBUTES.items():
        for path in paths:
            owner = _resolve(agent, path)
            if owner is not None:
                found[f"hp/{name}"] = _attribute(*owner)
                break
    _targets(agent, found)
    return found


def _current(value: Any) -> float | list[float]:
    """A float, a schedule's current value (without advancing it), or one float per env copy."""
    if hasattr(type(value), "current"):
        return float(value.current)
    if isinstance(value, torch.Tensor) and value.dim() == 1:
        return value.tolist()
    return float(value)


def _epsilon(value: Any) -> float | list[float]:
    return [float(v) for v in value] if isinstance(value, list | tuple) else float(value)


def _attribute(owner: Any, name: str) -> Hyperparameter:
    kind = type(getattr(owner, name))
    cast = int if kind is int else float

    def get() -> Any:
        value = getattr(owner, name)
        return value(getattr(owner, "progress", 0.0)) if callable(value) else value

    return Hyperparameter(get, lambda v: setattr(owner, name, cast(v)))


def _learning_rates(agent: Any, found: dict[str, Hyperparameter]) -> None:
    approximations_by_name = approximations(agent)
    with_optimizer = [a for a in approximations_by_name.values() if a.optimizer is not None]
    if not with_optimizer:
        return
    trainer = getattr(agent, "trainer", None)

    def setter(targets: list[Approximation]) -> Callable[[Any], None]:
        def set_lr(value: Any) -> None:
            if trainer is not None and callable(getattr(trainer, "lr", None)):
                trainer.lr = None  # the component now drives the learning rate
            for approximation in targets:
                approximation._lr_scheduler = None
                for group in approximation.optimizer.param_groups:
                    group["lr"] = float(value)

        return set_lr

    def getter(approximation: Approximation) -> Callable[[], float]:
        return lambda: float(approximation.optimizer.param_groups[0]["lr"])

    found["hp/lr"] = Hyperparameter(getter(with_optimizer[0]), setter(with_optimizer))
    for approximation in with_optimizer:
        found[f"hp/lr/{approximation.name}"] = Hyperparameter(
            getter(approximation), setter([approximation])
        )


def _targets(agent: Any, found: dict[str, Hyperparameter]) -> None:
    targets = [a._target for a in approximations(agent).values()]
    for key, kind, name in (("hp/tau", PolyakTarget, "_rate"),
                            ("hp/target_period", FixedTarget, "_update_frequency")):
        owners = [t for t in targets if isinstance(t, kind)]
        if owners:
            cast = float if kind is PolyakTarget else int
            found[key] = Hyperparameter(
                lambda o=owners[0], n=name: getattr(o, n),
                lambda v, os=owners, n=name, c=cast: [setattr(o, n, c(v)) for o in os],
            )
