"""An agent's hyperparameters as the ``hp/*`` keys of the metrics dictionary.

Each key is declared by the part that owns the value (``hyperparameters()`` of the policy,
trainer, agent, ``Approximation`` or target network) as a ``Hyperparameter`` (getter and
setter); a key several parts declare is read from the first and set on all. The keys:

* ``hp/lr``: every optimizer's learning rate (setting it ends the preset's lr schedule);
  ``hp/lr/<name>``: one optimizer's (``hp/lr/actor``).
* ``hp/epsilon``: epsilon-greedy (a list: one per env copy) and ez-greedy exploration;
  ``hp/temperature``: Boltzmann exploration's.
* ``hp/discount`` (gamma); ``hp/entropy_coef``, ``hp/value_coef``, ``hp/lam``, ``hp/epochs``
  (``OnPolicyTrainer``); ``hp/clip`` (PPO, PPG).
* ``hp/batch_size``: transitions per gradient step (replay) or per minibatch (on-policy);
  ``hp/update_frequency`` and ``hp/gradient_steps``: transitions between training phases and
  gradient steps per phase (``ReplaySchedule``).
* ``hp/tau``: the Polyak rate of soft targets; ``hp/target_period``: updates between hard
  target copies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from looprl.core import Hyperparameter, merge_hyperparameters
from looprl.core.ranges import range_of
from looprl.core.suggest import did_you_mean
from looprl.meta.component import HOOKS

__all__ = ["Hyperparameter", "acting_schedules", "acting_values", "agent_hyperparameters",
           "check_writes", "set_hyperparameter", "unknown_hyperparameter", "worker_keys"]


def agent_hyperparameters(agent: Any) -> dict[str, Hyperparameter]:
    """Every ``hp/*`` key ``agent`` declares, and ``hp/lr`` over all of its optimizers."""
    found = dict(agent.hyperparameters())
    rates = [{"hp/lr": found[key]} for key in merged_keys("hp/lr", found)]
    if rates:
        found["hp/lr"] = merge_hyperparameters(*rates)["hp/lr"]
    return found


def merged_keys(key: str, keys: Any) -> list[str]:
    """The keys of ``keys`` that ``key`` reads and sets together (``hp/lr``: every optimizer's
    ``hp/lr/<name>``)."""
    return [each for each in keys if each.startswith("hp/lr/")] if key == "hp/lr" else []


def acting_values(policy: Any) -> dict[str, Any]:
    """The ``hp/*`` values of ``policy``'s exploration (``hp/epsilon``, ``hp/temperature``):
    they move as the policy acts, so on Ray an actor's copy holds them, not the trainer's.
    Independent learners' (``policies`` and ``names``): each agent's, as ``<key>/<agent>``."""
    names = getattr(policy, "names", None)
    if names is not None and hasattr(policy, "policies"):
        return {f"{key}/{name}": value for agent, name in zip(policy.policies, names)
                for key, value in acting_values(agent).items()}
    exploration = getattr(getattr(policy, "exploration", None), "hyperparameters", None)
    return {} if exploration is None else {key: h.get() for key, h in exploration().items()}


def acting_schedules(policy: Any) -> list[Any]:
    """The schedules of ``policy``'s exploration (a decaying ``hp/epsilon``; each agent's for
    independent learners), whose ``step`` counters move as the policy acts."""
    if getattr(policy, "names", None) is not None and hasattr(policy, "policies"):
        return [schedule for agent in policy.policies for schedule in acting_schedules(agent)]
    exploration = getattr(policy, "exploration", None)  # (``GreedyPolicy.epsilon``: a value)
    epsilon = getattr(exploration, "epsilon_schedule", None) or getattr(exploration, "epsilon",
                                                                        None)
    return [epsilon] if hasattr(type(epsilon), "value") and hasattr(epsilon, "step") else []


def unknown_hyperparameter(key: str, found: dict[str, Any]) -> KeyError:
    """The ``KeyError`` for ``key``, which the agent (keys ``found``) does not have (``lr``:
    "did you mean 'hp/lr'?")."""
    hint = (f" Did you mean 'hp/{key}'?" if f"hp/{key}" in found
            else did_you_mean(key, found))
    return KeyError(f"{key!r} is not a hyperparameter of this agent.{hint} "
                    f"It has: {', '.join(sorted(found))}")


def check_writes(components: Iterable[Any], found: dict[str, Any]) -> None:
    """A one-line ``KeyError`` for a component's ``writes`` key the agent (keys ``found``) does
    not have (was: at its first write, none in a run too short to update)."""
    for component in components:
        for key in component.writes:
            if key not in found:
                hook = next((hook for hook in HOOKS if component.methods(hook)), "its hooks")
                raise KeyError(f"{type(component).__name__} at {hook}: "
                               f"{unknown_hyperparameter(key, found).args[0]}")


def set_hyperparameter(found: dict[str, Hyperparameter], key: str, value: Any) -> None:
    """``found[key].set(value)``, or a one-line ``ValueError`` naming ``key`` for a value it
    cannot take (``HP_RANGES``: text, a NaN, an epsilon above 1, a batch size of 0, ...)."""
    valid = range_of(key)
    values = value if isinstance(value, list | tuple) else (value,)  # (one epsilon per copy)
    if valid is not None and not all(valid.holds(number) and not isinstance(number, bool)
                                     for number in values):  # (True is no learning rate)
        raise ValueError(f"{key} must be {valid.text}, got {value!r}")
    try:
        found[key].set(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{key} cannot be set to {value!r}: {error}") from None


def worker_keys(found: dict[str, Hyperparameter], policy: Any, actor: bool,
                trainer: dict[str, Any], write: Callable[[str, Any], None]
                ) -> dict[str, Hyperparameter]:
    """``found`` as a Ray worker's hooks see them: an ``actor`` holds the exploration's keys
    (how it acts) and reads the others from ``trainer`` (the trainer's values as it published
    them last, its own keys too); the trainer holds the others. A hook's write of the other
    side's key is also handed to ``write(key, value)``: an actor's travels to the trainer with
    its segments (and reads back as written until the trainer publishes), the trainer's is
    published with its parameters, and the other side sets it there."""
    acting = acting_values(policy)

    def other(key: str, own: Hyperparameter | None) -> Hyperparameter:
        parts = merged_keys(key, found)  # (set together, as ``agent_hyperparameters`` sets them)

        def get() -> Any:
            return trainer[key] if actor and (key in trainer or own is None) else own.get()

        def set_(value: Any) -> None:
            if actor:
                for each in (key, *parts):
                    trainer[each] = value
            else:
                own.set(value)  # (the trainer's copy: what it publishes)
            write(key, value)
        return Hyperparameter(get, set_, own.kind if own is not None else float)

    kept = {key: h if (key in acting) == actor else other(key, h) for key, h in found.items()}
    kept.update({key: other(key, None) for key in trainer if actor and key not in kept})
    return kept
