"""Twin Delayed DDPG (Fujimoto et al., 2018, https://arxiv.org/abs/1802.09477): ``DDPGTrainer``
with twin critics, target-policy smoothing and delayed actor and target updates."""

from __future__ import annotations

import torch

from looprl.agents.ddpg import DDPGPolicy, DDPGTrainer
from looprl.agents.losses.continuous import smoothed_target_action, td3_target
from looprl.agents.shell import ReplayAgent
from looprl.approximation import Approximation, PolyakTarget
from looprl.core.ranges import check_ranges
from looprl.core.suggest import check_count


class DelayedPolyakTarget(PolyakTarget):
    """A ``PolyakTarget`` (``rate``: tau) that moves only at every ``every``-th update."""

    def __init__(self, rate: float, every: int = 2):
        super().__init__(rate)
        check_count(every=every)
        self.every = every
        self._calls = 0

    def update(self) -> None:
        self._calls += 1
        if self._calls % self.every == 0:
            super().update()


class TD3Trainer(DDPGTrainer):
    """TD3's update: twin critics (``q`` of a ``TwinQ``) every step, the actor every
    ``policy_delay``; ``target_noise``, ``noise_clip``: the smoothing's, in half action ranges."""

    def __init__(self, policy: DDPGPolicy, q: Approximation, discount_factor: float = 0.99,
                 policy_delay: int = 2, target_noise: float = 0.2, noise_clip: float = 0.5):
        super().__init__(policy, q, discount_factor)
        check_ranges({"policy_delay": policy_delay, "target_noise": target_noise,
                      "noise_clip": noise_clip}, type(self).__name__)
        self.policy_delay = policy_delay
        self.target_noise = target_noise
        self.noise_clip = noise_clip

    def _targets(self, rewards: torch.Tensor, next_obs: torch.Tensor, masks: torch.Tensor
                 ) -> torch.Tensor:
        """``r + gamma * mask * min(Q1', Q2')(s', smoothed mu'(s'))``."""
        actor = self._policy.actor
        next_actions = actor.target(next_obs)
        _, scale, low, high = actor.bounds.on(next_actions.device)
        noise = torch.randn_like(next_actions)
        next_actions = smoothed_target_action(next_actions, noise, self.target_noise,
                                              self.noise_clip, scale, low, high)
        next_q1, next_q2 = self.q.target(next_obs, next_actions)
        return td3_target(rewards, next_q1, next_q2, masks, self.discount_factor)

    def _should_update_actor(self) -> bool:
        return self.steps % self.policy_delay == 0

    def _actor_values(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``Q1(s, mu(s))``, as in the paper."""
        return self.q.model.q1(obs, actions)


class TD3(ReplayAgent):
    """Local TD3 agent (single environment; ``ReplayAgent``'s arguments)."""
