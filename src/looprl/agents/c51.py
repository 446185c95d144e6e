"""C51, distributional DQN (Bellemare et al., 2017, https://arxiv.org/abs/1707.06887).

The network predicts, for every action, a categorical distribution of the return over fixed
atoms ``z_1 .. z_N``; the target distribution ``r + gamma * Z(s', a*)`` is projected back
onto the atoms and the prediction is trained by cross-entropy.

* ``C51Policy`` -- ``DQNPolicy`` over the expected values ``sum_i z_i p_i(s, a)`` of a
  ``QDist``.
* ``C51Trainer`` -- one cross-entropy step on the projected targets; ``a*`` is the greedy
  action of the target network, or of the online network with ``double=True`` (Rainbow).
* The local agent is ``DDQN`` (replay with priority updates; the per-sample
  cross-entropy is the priority, as in Rainbow).
"""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.ddqn import DDQN, discount_of
from looprl.agents.dqn import DQNPolicy, DQNTestAgent
from looprl.agents.losses.value import c51_loss, categorical_cross_entropy, categorical_projection
from looprl.approximation.q_dist import QDist
from looprl.core import Trainer

__all__ = ["C51", "C51Policy", "C51TestAgent", "C51Trainer"]


class C51Policy(DQNPolicy):
    """Epsilon-greedy policy over the expected values of a ``QDist``.

    Args:
        dist: the ``QDist``.
        num_actions: size of the discrete action space.
        epsilon: exploration rate, a float or a schedule.
    """

    def __init__(self, dist: QDist, num_actions: int, epsilon: Any = 0.0):
        super().__init__(dist.expectation, num_actions, epsilon)
        self.dist = dist

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> torch.Tensor:
        """Return distributions of the stored ``(states, actions)``, with gradients."""
        return self.dist(sample[0], sample[1])


class C51Trainer(Trainer):
    """One gradient step of categorical (C51) Q-learning per ``step`` call.

    Args:
        policy: the ``C51Policy`` whose ``QDist`` is trained.
        discount_factor: gamma (for transitions without a stored ``discount``).
        double: choose the bootstrap action with the online network (Rainbow).
    """

    def __init__(self, policy: C51Policy, discount_factor: float = 0.99, double: bool = False):
        self._policy = policy
        self.discount_factor = discount_factor
        self.double = double

    @property
    def policy(self) -> C51Policy:
        return self._policy

    def targets(self, rewards: torch.Tensor, next_states: Any) -> torch.Tensor:
        """Projected target distributions ``(batch, num_atoms)`` (no gradients)."""
        dist = self._policy.dist
        atoms = dist.atoms
        next_probs = dist.target(next_states)
        chooser = dist.no_grad(next_states) if self.double else next_probs
        best = (chooser * atoms).sum(-1).argmax(-1)
        index = best.view(-1, 1, 1).expand(-1, 1, atoms.shape[0])
        next_probs = next_probs.gather(1, index).squeeze(1)
        discount = discount_of(next_states, self.discount_factor)
        return categorical_projection(rewards, next_states.mask, discount, next_probs, atoms)

    def step(self, batch: tuple) -> dict[str, torch.Tensor]:
        """``batch`` is ``(states, actions, rewards, next_states, weights)`` from replay.

        Returns the loss and per-sample cross-entropies as ``td_error`` (priorities).
        """
        states, actions, rewards, next_states, weights = batch
        probs = self._policy.analyze((states, actions))
        targets = self.targets(rewards, next_states)
        loss = c51_loss(probs, targets, weights)
        self._policy.dist.reinforce(loss)
        self._policy.version += 1
        cross_entropy = categorical_cross_entropy(probs.detach(), targets)
        self.predictions = {"q_values": (probs.detach() * self._policy.dist.atoms).sum(-1)}
        return {"loss": loss.detach(), "td_error": cross_entropy}


class C51(DDQN):
    """Local C51 agent: ``DDQN``'s replay loop (see ``looprl.agents.ddqn``)."""


class C51TestAgent(DQNTestAgent):
    """Evaluation agent: greedy on expected values (with a small ``epsilon``), no training."""
