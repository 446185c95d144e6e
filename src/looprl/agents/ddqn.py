"""Double DQN (van Hasselt et al., 2016, https://arxiv.org/abs/1509.06461).

DQN with one change to the target: the online network picks the next action and the target
network evaluates it, which removes Q-learning's overestimation bias. Acting is DQN's.

* ``DDQNTrainer`` -- ``DQNTrainer`` with a chosen update rule (``UPDATES``: ``q_learning``,
  ``double_q``, the default, or ``clipped_double_q``). It reads ``next_states['discount']``
  (``gamma^k`` from n-step replay) when present, weights the loss by the batch's importance
  weights and returns per-sample TD errors for prioritized replay.
* ``DDQN`` -- ``DQN``'s local agent that also feeds the trainer's TD errors back to the
  buffer's ``update_priorities`` (a no-op for uniform replay).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from looprl.agents.dqn import DQN, DQNPolicy, DQNTrainer, discount_of
from looprl.agents.losses import dqn_loss, td_target
from looprl.agents.losses.value import clipped_double_q_target, double_q_target
from looprl.core.suggest import did_you_mean

__all__ = ["DDQN", "DDQNTrainer", "UPDATES", "discount_of"]


def _q_learning(q: Any, rewards: torch.Tensor, next_states: Any, discount: Any) -> torch.Tensor:
    return td_target(rewards, q.target(next_states).max(dim=-1).values, next_states.mask, discount)


def _double(target: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def update(q: Any, rewards: torch.Tensor, next_states: Any, discount: Any) -> torch.Tensor:
        online = q.no_grad(next_states)
        return target(rewards, online, q.target(next_states), next_states.mask, discount)

    return update


#: Update rules of the DQN family by name: ``rule(q, rewards, next_states, discount)`` gives
#: the TD targets (``looprl.agents.losses.value`` holds their math).
UPDATES: dict[str, Callable[..., torch.Tensor]] = {
    "q_learning": _q_learning,
    "double_q": _double(double_q_target),
    "clipped_double_q": _double(clipped_double_q_target),
}


def check_update(update: str) -> str:
    """``update`` if it names one of ``UPDATES``, else a one-line ``ValueError``."""
    if update not in UPDATES:
        hint = did_you_mean(update, list(UPDATES))
        raise ValueError(
            f"Unknown update {update!r} for the DQN family.{hint} Valid: {', '.join(UPDATES)}"
        )
    return update


class DDQNTrainer(DQNTrainer):
    """One gradient step of (double) Q-learning per ``step`` call.

    Args:
        policy: the ``DQNPolicy`` whose ``QNetwork`` (and target network) is trained.
        discount_factor: gamma (for transitions without a stored ``discount``).
        huber: Huber loss (default) or mean squared error.
        update: the target's rule, a name in ``UPDATES`` (``"q_learning"`` gives DQN's
            ``max`` target).
    """

    def __init__(
        self,
        policy: DQNPolicy,
        discount_factor: float = 0.99,
        huber: bool = True,
        update: str = "double_q",
    ):
        super().__init__(policy, discount_factor, huber)
        self.update = check_update(update)
        self._rule = UPDATES[update]

    def targets(self, rewards: torch.Tensor, next_states: Any) -> torch.Tensor:
        """TD targets of a batch (no gradients)."""
        discount = discount_of(next_states, self.discount_factor)
        return self._rule(self._policy.q, rewards, next_states, discount)

    def step(self, batch: tuple) -> dict[str, torch.Tensor]:
        """``batch`` is ``(states, actions, rewards, next_states, weights)`` from replay.

        Returns the loss and ``td_error`` (per sample, detached) for priority updates.
        """
        states, actions, rewards, next_states, weights = batch
        q = self._policy.q
        values = q(states, actions)
        targets = self.targets(rewards, next_states)
        loss = dqn_loss(values, targets, weights, huber=self.huber)
        q.reinforce(loss)
        self._policy.version += 1
        self.predictions = {"q_values": values.detach()}
        return {"loss": loss.detach(), "td_error": (targets - values).detach()}


class DDQN(DQN):
    """Local replay agent that updates the buffer's priorities after every gradient step.

    Same arguments as ``DQN``; with a ``PrioritizedReplayBuffer`` (or an
    ``NStepReplayBuffer`` around one) the trainer's ``td_error`` becomes the new priority
    of the sampled transitions.
    """

    def _train(self) -> None:
        if self._should_train():
            for _ in range(self.gradient_steps):
                stats = self.trainer.step(self.replay_buffer.sample(self.minibatch_size))
                self.replay_buffer.update_priorities(stats["td_error"])
