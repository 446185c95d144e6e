"""Rainbow (Hessel et al., 2018, https://arxiv.org/abs/1710.02298).

Rainbow combines six extensions of DQN; here each is a part that a preset switches on or off:

============== ============================================= =============================
extension      where it lives                                switch (classic-control preset)
============== ============================================= =============================
double Q       ``DDQNTrainer`` / ``C51Trainer(double=True)`` ``double``
dueling        ``nn.Dueling`` / ``nn.CategoricalDueling``    ``dueling``
noisy nets     ``nn.NoisyFactorizedLinear`` (epsilon = 0)    ``noisy``
n-step         ``memory.NStepReplayBuffer``                  ``n_steps`` (1 = off)
prioritized    ``memory.PrioritizedReplayBuffer``            ``prioritized``
distributional ``QDist`` + ``C51Trainer``                    ``distributional``
============== ============================================= =============================

``rainbow_policy_and_trainer`` picks the policy and trainer for a Q approximation; the local
agent is ``DDQN``'s replay loop, which feeds TD errors (or, when distributional, the
cross-entropies) back to the buffer as priorities.
"""

from __future__ import annotations

from typing import Any

from looprl.agents.c51 import C51Policy, C51Trainer
from looprl.agents.ddqn import DDQN, DDQNTrainer
from looprl.agents.dqn import DQNPolicy, DQNTestAgent
from looprl.approximation.q_dist import QDist
from looprl.core import Policy, Trainer

__all__ = ["Rainbow", "RainbowTestAgent", "rainbow_policy_and_trainer"]


def rainbow_policy_and_trainer(
    q: Any,
    num_actions: int,
    epsilon: Any = 0.0,
    discount_factor: float = 0.99,
    double: bool = True,
    huber: bool = True,
) -> tuple[Policy, Trainer]:
    """The Rainbow policy and trainer for ``q``.

    Args:
        q: a ``QDist`` (distributional) or a ``QNetwork`` (expected values).
        num_actions: size of the action space.
        epsilon: exploration rate (``0`` with noisy networks).
        discount_factor: gamma (n-step transitions carry their own ``gamma^k``).
        double: use the double-Q bootstrap action.
        huber: Huber loss for the non-distributional regression.
    """
    if isinstance(q, QDist):
        policy = C51Policy(q, num_actions, epsilon)
        return policy, C51Trainer(policy, discount_factor, double=double)
    policy = DQNPolicy(q, num_actions, epsilon)
    update = "double_q" if double else "q_learning"
    return policy, DDQNTrainer(policy, discount_factor, huber=huber, update=update)


class Rainbow(DDQN):
    """Local Rainbow agent: ``DDQN``'s replay loop with priority updates."""


class RainbowTestAgent(DQNTestAgent):
    """Evaluation agent: greedy on (expected) values of the mean (noise-free) network."""
