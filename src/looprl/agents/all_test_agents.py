"""ALL's test agents (``DQNTestAgent(policy)``, ``A2CTestAgent(features, policy)``...), as an ALL
preset's ``test_agent()`` builds them: each is the ``Actor`` in evaluation mode over the policy
the matching ALL agent class makes of the same objects, so a hand-built test agent acts as
``preset.test_agent()`` does."""

from __future__ import annotations

from typing import Any

from looprl.agents.actor import Actor
from looprl.agents.all_agents import all_actor_critic
from looprl.agents.c51 import C51Policy
from looprl.agents.ddpg import DDPGPolicy
from looprl.agents.dqn import DQNPolicy
from looprl.agents.sac import SACPolicy
from looprl.approximation import QDist
from looprl.policies import DeterministicPolicy, GreedyPolicy, SoftDeterministicPolicy

__all__ = ["A2CTestAgent", "C51TestAgent", "DDPGTestAgent", "DDQNTestAgent", "DQNTestAgent",
           "PPOTestAgent", "RainbowTestAgent", "SACTestAgent", "VACTestAgent", "VPGTestAgent",
           "VQNTestAgent", "VSarsaTestAgent"]


def _check(name: str, arguments: str, value: Any, kind: type | tuple[type, ...]) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name} takes ALL's {arguments}, got {type(value).__name__}")


def DQNTestAgent(policy: Any) -> Actor:  # noqa: N802 -- ALL's class name
    """ALL's ``DQNTestAgent(policy)`` (also ``DDQN``, ``VQN``, ``VSarsa``): greedy actions of
    ``policy.q``, random ones at the ``GreedyPolicy``'s epsilon (ALL's ``test_exploration``)."""
    _check("DQNTestAgent", "(policy): a GreedyPolicy(q, n_actions, epsilon)", policy, GreedyPolicy)
    return Actor(DQNPolicy(policy.q, policy.num_actions, evaluation_epsilon=float(policy.epsilon)),
                 evaluation=True)


def C51TestAgent(q_dist: Any, n_actions: int, exploration: float = 0.0) -> Actor:  # noqa: N802
    """ALL's ``C51TestAgent(q_dist, n_actions, exploration=0.)`` (also ``Rainbow``): the best
    expected return of ``q_dist``, a random action at rate ``exploration``."""
    _check("C51TestAgent", "(q_dist, n_actions, exploration): a QDist", q_dist, QDist)
    return Actor(C51Policy(q_dist, n_actions, evaluation_epsilon=exploration), evaluation=True)


def DDPGTestAgent(policy: Any) -> Actor:  # noqa: N802 -- ALL's class name
    """ALL's ``DDPGTestAgent(policy)``: the ``DeterministicPolicy``'s actions, without noise."""
    _check("DDPGTestAgent", "(policy): a DeterministicPolicy", policy, DeterministicPolicy)
    return Actor(DDPGPolicy(policy), evaluation=True)


def SACTestAgent(policy: Any) -> Actor:  # noqa: N802 -- ALL's class name
    """ALL's ``SACTestAgent(policy)``: the ``SoftDeterministicPolicy``'s evaluation actions."""
    _check("SACTestAgent", "(policy): a SoftDeterministicPolicy", policy,
           SoftDeterministicPolicy)
    return Actor(SACPolicy(policy), evaluation=True)


def A2CTestAgent(features: Any, policy: Any) -> Actor:  # noqa: N802 -- ALL's class name
    """ALL's ``A2CTestAgent(features, policy)`` (also ``PPO``, ``VAC``, ``VPG``): actions sampled
    from ``policy`` (a ``SoftmaxPolicy`` or ``GaussianPolicy``) on ``features``, as ALL's."""
    acting = all_actor_critic("A2CTestAgent", features, None, policy)
    acting.sample_evaluation = True
    return Actor(acting, evaluation=True)


DDQNTestAgent = VQNTestAgent = VSarsaTestAgent = DQNTestAgent
RainbowTestAgent = C51TestAgent
PPOTestAgent = VACTestAgent = VPGTestAgent = A2CTestAgent
