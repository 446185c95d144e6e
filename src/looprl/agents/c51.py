"""C51, distributional DQN (Bellemare et al., 2017, https://arxiv.org/abs/1707.06887): categorical
return distributions, trained by cross-entropy against the projected ``r + gamma * Z(s', a*)``."""

from __future__ import annotations

from typing import Any

import torch

from looprl.agents.dqn import DQNPolicy, DQNTrainer, bootstrap, row_weights
from looprl.agents.losses.value import c51_loss, categorical_kl_divergence, categorical_projection
from looprl.agents.segments import on_device
from looprl.agents.shell import ReplayAgent, all_replay
from looprl.approximation.q_dist import QDist
from looprl.approximation.schedules import Warmup
from looprl.core import Logger, SampleBatch, TrainerStepResult
from looprl.nn import single_field

__all__ = ["C51", "C51Policy", "C51Trainer", "Rainbow"]


class C51Policy(DQNPolicy):
    """Epsilon-greedy policy over the expected values of the ``QDist`` ``dist`` (``DQNPolicy``)."""

    def __init__(self, dist: QDist, num_actions: int, epsilon: Any = 0.0,
                 evaluation_epsilon: float = 0.0):
        super().__init__(dist.expectation, num_actions, epsilon,
                         evaluation_epsilon=evaluation_epsilon)
        self.dist = self.approximation = dist  # (the optimized one: what DDP wraps)

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> torch.Tensor:
        """Distributions ``[..., num_actions, num_atoms]`` of ``sample.obs`` (as ``DQNPolicy``)."""
        return self._on_rows(self.dist, sample)


class C51Trainer(DQNTrainer):
    """C51 Q-learning of ``policy.dist`` (``double``: online network picks the next action)."""

    def __init__(self, policy: C51Policy, discount_factor: float = 0.99, n_step: int = 1,
                 double: bool = False):
        super().__init__(policy, discount_factor, n_step)
        self.double = double

    def step(self, batch: SampleBatch) -> TrainerStepResult:
        """One update on ``[T + 1, B]`` windows; priorities are the KL divergences (Rainbow's)."""
        batch = on_device(batch, self._policy.device)
        dist = self._policy.dist
        probs = dist(single_field(batch.obs[0], strict=False), batch.action[0])
        targets = self.targets(batch)
        loss = c51_loss(probs, targets, row_weights(batch))
        dist.reinforce(loss)
        kl = categorical_kl_divergence(probs.detach(), targets)
        return self._finish(loss, (probs.detach() * dist.atoms).sum(-1), kl)

    def targets(self, batch: SampleBatch) -> torch.Tensor:
        """Projected target distributions ``(B, num_atoms)`` (no gradients)."""
        dist = self._policy.dist
        returns, discount, next_obs, _ = bootstrap(batch, self.discount_factor, self.n_step)
        next_obs, atoms = single_field(next_obs, strict=False), dist.atoms
        next_probs = dist.target(next_obs)
        chooser = dist.no_grad(next_obs) if self.double else next_probs
        best = (chooser * atoms).sum(-1).argmax(-1)
        next_probs = next_probs[torch.arange(len(best), device=best.device), best]
        return categorical_projection(returns, 1.0, discount, next_probs, atoms)


class C51(ReplayAgent):
    """ALL's ``C51``: random actions for ``replay_start_size`` steps, then epsilon-greedy at
    ``exploration`` (a float, or a schedule such as ALL's presets' ``LinearScheduler``, read from
    there on); the online network picks the target's next action (ALL's)."""

    def __init__(self, q_dist: QDist, replay_buffer: Any, discount_factor: float = 0.99,
                 eps: float = 1e-5, exploration: float = 0.02, minibatch_size: int = 32,
                 replay_start_size: int = 5000, update_frequency: int = 1,
                 logger: Logger | None = None):
        name = type(self).__name__
        if not isinstance(q_dist, QDist):
            raise TypeError(f"{name} takes ALL's (q_dist, replay_buffer, ...): a QDist(model, "
                            f"optimizer, n_actions, n_atoms, v_min, v_max), got "
                            f"{type(q_dist).__name__}")
        if eps != 1e-5:
            raise ValueError(f"{name}'s eps is ALL's default (1e-5) only, got {eps!r}: looprl "
                             "clamps the probabilities of its loss at 1e-6; leave eps out")
        buffer, n_step, gamma = all_replay(name, replay_buffer, discount_factor)
        epsilon = Warmup(replay_start_size, exploration, name="epsilon")
        policy = C51Policy(q_dist, q_dist.num_actions, epsilon)
        super().__init__(policy, C51Trainer(policy, gamma, n_step, double=True), buffer,
                         minibatch_size, replay_start_size, update_frequency, logger=logger)
        self.q_dist, self.replay_buffer = q_dist, replay_buffer  # (ALL's attributes)


class Rainbow(C51):
    """ALL's ``Rainbow(q_dist, replay_buffer, ...)``: ``C51`` whose parts hold the rest (dueling,
    noisy networks; a prioritized ``NStepReplayBuffer`` with ``discount_factor=gamma ** n``)."""
