"""Phasic Policy Gradient (Cobbe et al., 2021, https://arxiv.org/abs/2009.04416).

Training alternates two phases, as in SRL's PPG:

* the *policy phase*: ``n_policy`` ordinary PPO iterations (clipped surrogate on the
  policy network, value regression on a separate value network);
* the *auxiliary phase*: ``aux_epochs`` passes over all states of those iterations,
  distilling the value targets into an auxiliary value head of the policy network while a
  KL term clones the policy as it was at the start of the phase (``ppg_aux_loss``), and
  training the value network further on the same targets.

* ``PPGNetwork`` -- policy trunk with logits and auxiliary value heads, plus a value net.
* ``PPGPolicy`` -- PPO's policy; ``analyze(sample, target='aux')`` adds the aux head.
* ``PPGTrainer`` -- ``PPOTrainer`` plus the auxiliary phase every ``n_policy`` steps.
* ``PPG`` -- the local ``ParallelAgent`` (PPO's rollout loop).
* ``PPGTestAgent`` -- the most likely action, no training.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from looprl.agents.losses.policy_gradient import ppg_aux_loss, value_loss
from looprl.agents.ppo import PPO, PPOPolicy, PPOTestAgent, PPOTrainer
from looprl.core.namedarray import NamedArray


class PPGNetwork(nn.Module):
    """The policy network (a trunk with policy and auxiliary value heads) and a value net.

    Args:
        trunk: maps observations to features.
        policy_head: maps features to action logits.
        aux_head: maps features to one auxiliary value.
        critic: maps observations to one value (the true value network).
    """

    def __init__(
        self, trunk: nn.Module, policy_head: nn.Module, aux_head: nn.Module, critic: nn.Module
    ):
        super().__init__()
        self.trunk = trunk
        self.policy_head = policy_head
        self.aux_head = aux_head
        self.critic = critic

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action logits and values ``V(s)`` of the value network (``ActorCritic``'s API)."""
        return self.policy_head(self.trunk(observation)), self.critic(observation).squeeze(-1)

    def aux(self, observation: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Action logits, auxiliary values and values of the value network."""
        features = self.trunk(observation)
        aux_value = self.aux_head(features).squeeze(-1)
        value = self.critic(observation).squeeze(-1)
        return self.policy_head(features), aux_value, value


class PPGPolicy(PPOPolicy):
    """``PPOPolicy`` over a ``PPGNetwork``.

    ``analyze(sample)`` gives ``(log_prob, entropy, value)`` as for PPO;
    ``analyze(sample, target='aux')`` gives ``(logits, aux_value, value)`` for the
    auxiliary phase.
    """

    def analyze(self, sample: NamedArray, target: str | None = None, **kwargs: Any):
        if target == "aux":
            return self.approximation.model.aux(sample.observation)
        return super().analyze(sample, target, **kwargs)


class PPGTrainer(PPOTrainer):
    """PPO updates, with an auxiliary phase after every ``n_policy`` of them.

    Args:
        policy: a ``PPGPolicy``.
        n_policy: PPO iterations (``step`` calls) per phase (the paper's ``N_pi``).
        aux_epochs: passes over the phase's states in the auxiliary phase (``E_aux``).
        beta_clone: weight of the behaviour-cloning KL term.
        aux_minibatch_size: samples per auxiliary gradient step (default: ``minibatch_size``).
        **ppo_kwargs: the ``PPOTrainer`` arguments of the policy phase.
    """

    def __init__(
        self,
        policy: PPGPolicy,
        n_policy: int = 32,
        aux_epochs: int = 6,
        beta_clone: float = 1.0,
        aux_minibatch_size: int | None = None,
        **ppo_kwargs: Any,
    ):
        super().__init__(policy, **ppo_kwargs)
        self.n_policy = n_policy
        self.aux_epochs = aux_epochs
        self.beta_clone = beta_clone
        self.aux_minibatch_size = aux_minibatch_size or self.minibatch_size
        self.aux_phases = 0
        self._memory: list[NamedArray] = []

    def step(self, batch: NamedArray) -> dict[str, torch.Tensor]:
        """A PPO iteration on ``batch``; then the auxiliary phase if the phase is over."""
        clip = self._clip()
        self._memory.append(NamedArray(observation=batch.observation, returns=batch.returns))
        aux = len(self._memory) >= self.n_policy
        steps = self._policy_steps(batch.advantage.shape[0])
        self._begin_update(steps + (self._aux_steps() if aux else 0))
        stats = {**self._policy_phase(batch, clip), "clip": clip}
        if aux:
            stats.update(self.auxiliary_phase())
        return self._end_update(stats)

    def _aux_steps(self) -> int:
        """Optimizer steps of an auxiliary phase over the stored memory."""
        n = sum(m.returns.shape[0] for m in self._memory)
        return self.aux_epochs * math.ceil(n / self.aux_minibatch_size)

    def auxiliary_phase(self) -> dict[str, torch.Tensor]:
        """Distil the stored value targets into the policy network; clear the memory."""
        observation = torch.cat([m.observation for m in self._memory])
        returns = torch.cat([m.returns for m in self._memory])
        self._memory.clear()
        with torch.no_grad():  # in minibatches: a phase may hold tens of thousands of frames
            chunks = observation.split(self.aux_minibatch_size)
            old_logits = torch.cat([self._policy.module(chunk)[0] for chunk in chunks])
        parts: dict[str, torch.Tensor] = {}
        for _ in range(self.aux_epochs):
            order = torch.randperm(returns.shape[0], generator=self.generator)
            for index in order.split(self.aux_minibatch_size):
                sample = NamedArray(observation=observation[index], returns=returns[index])
                parts = self._aux_minibatch_step(sample, old_logits[index])
        self.aux_phases += 1
        self._policy.version += 1
        return parts

    def _aux_minibatch_step(
        self, sample: NamedArray, old_logits: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        logits, aux_value, value = self._policy.analyze(sample, target="aux")
        joint, parts = ppg_aux_loss(aux_value, sample.returns, old_logits, logits, self.beta_clone)
        critic = 0.5 * value_loss(value, sample.returns)
        self._schedule_lr()
        self._policy.approximation.reinforce(joint + critic)
        return {f"aux/{k}": v for k, v in parts.items()} | {"aux/value": critic.detach()}


class PPG(PPO):
    """Local PPG agent: PPO's rollout loop over ``n_envs`` environments (see ``PPO``);
    the phases are the ``PPGTrainer``'s business."""


class PPGTestAgent(PPOTestAgent):
    """Evaluation agent: the most likely action under the policy (see ``PPOTestAgent``)."""
