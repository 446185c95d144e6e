"""Rainbow (Hessel et al., 2018, https://arxiv.org/abs/1710.02298).

Rainbow combines six extensions of DQN; here each is a part that a preset switches on or off:

============== ============================================= =============================
extension      where it lives                                switch (classic-control preset)
============== ============================================= =============================
double Q       ``DQNTrainer(double_q=True)``, ``C51Trainer`` ``double``
dueling        ``nn.Dueling`` / ``nn.CategoricalDueling``    ``dueling``
noisy nets     ``nn.NoisyFactorizedLinear`` (epsilon = 0)    ``noisy``
n-step         replay and trainer ``n_step``                 ``n_steps`` (1 = off)
prioritized    ``memory.PrioritizedReplayBuffer``            ``prioritized``
distributional ``QDist`` + ``C51Trainer``                    ``distributional``
============== ============================================= =============================

``rainbow_policy`` picks the policy for a Q approximation, ``rainbow_trainer`` its trainer;
the local agent is ``DQN``.
"""

from __future__ import annotations

from typing import Any

from looprl.agents.c51 import C51Policy, C51Trainer
from looprl.agents.dqn import DQNPolicy, DQNTrainer
from looprl.approximation.q_dist import QDist
from looprl.core import Trainer

__all__ = ["rainbow_policy", "rainbow_trainer"]


def rainbow_policy(q: Any, num_actions: int, epsilon: Any = 0.0) -> DQNPolicy:
    """The Rainbow policy over ``q``: a ``C51Policy`` over a ``QDist`` (distributional),
    else a ``DQNPolicy`` over a ``QNetwork``; ``epsilon`` is 0 with noisy networks."""
    if isinstance(q, QDist):
        return C51Policy(q, num_actions, epsilon)
    return DQNPolicy(q, num_actions, epsilon)


def rainbow_trainer(policy: DQNPolicy, discount_factor: float = 0.99, double: bool = True,
                    huber: bool = True, n_step: int = 1, update: str = "q_learning") -> Trainer:
    """The Rainbow trainer of ``policy``: ``C51Trainer`` for a ``C51Policy``, else
    ``DQNTrainer``; ``double`` picks the bootstrap action with the online network, ``huber``
    is the non-distributional regression's loss, ``n_step`` the replay windows' steps and
    ``update`` ``DQNTrainer``'s bootstrap value (``double`` takes over from it)."""
    if isinstance(policy, C51Policy):
        return C51Trainer(policy, discount_factor, n_step, double=double)
    return DQNTrainer(policy, discount_factor, n_step, update=update, double_q=double,
                      huber=huber)
