"""Rainbow (Hessel et al., 2018, https://arxiv.org/abs/1710.02298).

Rainbow combines six extensions of DQN; here each is a part that a preset switches on or off:

============== ============================================= =============================
extension      where it lives                                switch (classic-control preset)
============== ============================================= =============================
double Q       ``DQNTrainer(double_q=True)``, ``C51Trainer`` ``double``
dueling        ``nn.Dueling`` / ``nn.CategoricalDueling``    ``dueling``
noisy nets     ``nn.NoisyFactorizedLinear`` (epsilon = 0)    ``noisy``
n-step         ``memory.NStepReplayBuffer`` + ``n_step``      ``n_steps`` (1 = off)
prioritized    ``memory.PrioritizedReplayBuffer``            ``prioritized``
distributional ``QDist`` + ``C51Trainer``                    ``distributional``
============== ============================================= =============================

``rainbow_policy_and_trainer`` picks the policy and trainer for a Q approximation; the local
agent is ``DQN``, which feeds the trainer's priorities (TD errors or, when distributional,
the cross-entropies) back to the buffer.
"""

from __future__ import annotations

from typing import Any

from looprl.agents.c51 import C51Policy, C51Trainer
from looprl.agents.dqn import DQNPolicy, DQNTrainer
from looprl.approximation.q_dist import QDist
from looprl.core import Policy, Trainer

__all__ = ["rainbow_policy_and_trainer"]


def rainbow_policy_and_trainer(
    q: Any,
    num_actions: int,
    epsilon: Any = 0.0,
    discount_factor: float = 0.99,
    double: bool = True,
    huber: bool = True,
    n_step: int = 1,
) -> tuple[Policy, Trainer]:
    """The Rainbow policy and trainer for ``q``.

    Args:
        q: a ``QDist`` (distributional) or a ``QNetwork`` (expected values).
        num_actions: size of the action space.
        epsilon: exploration rate (``0`` with noisy networks).
        discount_factor: gamma.
        double: use the double-Q bootstrap action.
        huber: Huber loss for the non-distributional regression.
        n_step: steps per return (the replay's windows).
    """
    if isinstance(q, QDist):
        policy = C51Policy(q, num_actions, epsilon)
        return policy, C51Trainer(policy, discount_factor, n_step, double=double)
    policy = DQNPolicy(q, num_actions, epsilon)
    return policy, DQNTrainer(policy, discount_factor, n_step, double_q=double, huber=huber)
