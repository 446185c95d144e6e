"""An agent's hyperparameters as the ``hp/*`` keys of the metrics dictionary.

Each key is declared by the part that owns the value, through its ``hyperparameters()``
method (``looprl.core``: ``Policy``, ``Trainer``, the local agents, ``Approximation`` and
the target networks), as a ``Hyperparameter`` (a getter and a setter). A local agent's keys
are its policy's, its trainer's and its own; bodies and other wrappers forward them.
``agent_hyperparameters(agent)`` returns them, plus ``hp/lr`` over every optimizer:

======================= ==================================== ===============================
key                     what it changes                      declared by
======================= ==================================== ===============================
``hp/lr``               the learning rate of every           (all the ``hp/lr/<name>``
                        optimizer; setting it takes over     keys together, here)
                        from the preset's lr schedule
``hp/lr/<name>``        one optimizer's (``hp/lr/actor``)    ``Approximation`` (with an
                                                             optimizer), through the policy
                                                             or trainer that owns it; the
                                                             on-policy trainers' ``lr``
                                                             schedule ends when it is set
``hp/epsilon``          the exploration rate of epsilon-     ``GreedyPolicy`` (and
                        greedy policies (DQN family, VQN,    ``EZGreedyPolicy``), through
                        VSarsa; a list with one epsilon per  ``DQNPolicy``
                        env copy) and of ez-greedy
``hp/temperature``      the temperature of Boltzmann         ``BoltzmannPolicy``, through
                        exploration                          ``DQNPolicy``
                        (``exploration='stochastic'``)
``hp/discount``         gamma, in the trainer and            ``OnPolicyTrainer``,
                        (on-policy) the advantage estimation ``DQNTrainer``,
                                                             ``DDPGTrainer``, ``SACTrainer``
``hp/batch_size``       transitions per gradient step        ``ReplaySchedule`` of a
                        (replay) or per minibatch (PPO, PPG) ``Learner`` (DQN family, DDPG,
                                                             TD3, SAC; on every runtime);
                                                             ``OnPolicyTrainer`` with a
                                                             ``minibatch_size``
``hp/clip``             PPO's ratio clipping range           ``PPOTrainer`` (PPO, PPG)
``hp/entropy_coef``     the entropy bonus of actor-critic    ``OnPolicyTrainer``
                        losses
``hp/value_coef``       the value-loss weight of             ``OnPolicyTrainer``
                        actor-critic losses
``hp/lam``              GAE's lambda                         ``OnPolicyTrainer``
``hp/epochs``           passes over each rollout (PPO, PPG)  ``OnPolicyTrainer``
``hp/tau``              the Polyak rate of soft target       ``PolyakTarget``, through its
                        networks (DDPG, TD3, SAC)            ``Approximation``
``hp/target_period``    updates between hard target-network  ``FixedTarget``, through its
                        copies (DQN family)                  ``Approximation``
``hp/update_frequency`` transitions between training phases ``ReplaySchedule``
                        (replay)
``hp/gradient_steps``   gradient steps per training phase    ``ReplaySchedule``
                        (replay)
======================= ==================================== ===============================

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
