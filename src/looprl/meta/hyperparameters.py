"""An agent's hyperparameters as the ``hp/*`` keys of the metrics dictionary.

Each key is declared by the part that owns the value, through its ``hyperparameters()``
method (``looprl.core``: ``Policy``, ``Trainer``, the local agents, ``Approximation`` and
the target networks), as a ``Hyperparameter`` (a getter and a setter). A local agent's keys
are its policy's, its trainer's and its own; bodies and other wrappers forward them.
``agent_hyperparameters(agent)`` returns them, plus ``hp/lr`` over every optimizer:

* ``hp/lr``: every optimizer's learning rate (all ``hp/lr/<name>`` keys together; setting it
  ends the preset's lr schedule); ``hp/lr/<name>``: one optimizer's (``hp/lr/actor``),
  declared by its ``Approximation`` through the policy or trainer that owns it.
* ``hp/epsilon``: the rate of epsilon-greedy (a list: one per env copy) and ez-greedy
  exploration (``GreedyPolicy``, ``EZGreedyPolicy``, through ``DQNPolicy``);
  ``hp/temperature``: Boltzmann exploration's (``BoltzmannPolicy``).
* ``hp/discount`` (gamma; ``OnPolicyTrainer``, ``DQNTrainer``, ``DDPGTrainer``,
  ``SACTrainer``); ``hp/entropy_coef``, ``hp/value_coef``, ``hp/lam``, ``hp/epochs``
  (``OnPolicyTrainer``); ``hp/clip`` (``PPOTrainer``: PPO, PPG).
* ``hp/batch_size``: transitions per gradient step (the ``ReplaySchedule`` of a
  ``Learner``: DQN family, DDPG, TD3, SAC) or per minibatch (``OnPolicyTrainer`` with a
  ``minibatch_size``); ``hp/update_frequency`` and ``hp/gradient_steps``: transitions
  between training phases and gradient steps per phase (``ReplaySchedule``).
* ``hp/tau``: the Polyak rate of soft targets (``PolyakTarget``); ``hp/target_period``:
  updates between hard target copies (``FixedTarget``), both through their ``Approximation``.

A key that several parts declare (``hp/tau`` of an actor's and a critic's target) is read
from the first and set on all (``looprl.core.merge_hyperparameters``).
"""

from __future__ import annotations

from typing import Any

from looprl.core import Hyperparameter, merge_hyperparameters
from looprl.core.suggest import did_you_mean

__all__ = ["Hyperparameter", "agent_hyperparameters", "unknown_hyperparameter"]


def agent_hyperparameters(agent: Any) -> dict[str, Hyperparameter]:
    """Every ``hp/*`` key ``agent`` declares (an ``Agent``/``ParallelAgent``, bodies
    included, or a Ray worker's ``Parts``), and ``hp/lr`` over all of its optimizers."""
    found = dict(agent.hyperparameters())
    rates = [{"hp/lr": rate} for key, rate in found.items() if key.startswith("hp/lr/")]
    if rates:
        found["hp/lr"] = merge_hyperparameters(*rates)["hp/lr"]
    return found


def unknown_hyperparameter(key: str, found: dict[str, Any]) -> KeyError:
    """The one-line ``KeyError`` for ``key``, which the agent (keys ``found``) does not have."""
    return KeyError(f"{key!r} is not a hyperparameter of this agent.{did_you_mean(key, found)} "
                    f"It has: {', '.join(sorted(found))}")
