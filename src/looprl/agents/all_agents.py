"""ALL's on-policy agent classes (seed 003): ``A2C``, ``PPO`` and ``VAC`` of ALL's ``(features, v,
policy, ...)``, an ``ActorCriticPolicy`` over those networks and looprl's trainer (``VPG`` too);
``policy`` a ``SoftmaxPolicy`` or, for ``Box`` actions, a ``GaussianPolicy``."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from looprl.agents.a2c import A2CTrainer
from looprl.agents.actor_critic import ActorCriticPolicy
from looprl.agents.on_policy import OnPolicyAgent
from looprl.agents.ppo import PPOTrainer
from looprl.agents.vac import VACTrainer
from looprl.approximation import FeatureNetwork, Identity, JointApproximation, VNetwork
from looprl.core.suggest import check_count
from looprl.nn import SharedActorCritic
from looprl.policies import GaussianPolicy, SoftmaxPolicy
from looprl.policies.distributions import CategoricalHead, GaussianHead

__all__ = ["A2C", "PPO", "VAC", "all_actor_critic"]


def all_actor_critic(agent: Any, features: Any, v: Any, policy: Any) -> ActorCriticPolicy:
    """ALL's ``features``, ``v`` and ``policy`` as an ``ActorCriticPolicy`` over their networks,
    each stepped by its own optimizer; ``agent`` gets ALL's attributes ``features`` and ``v``.
    ``agent`` a name and ``v`` ``None``: a test agent's policy, whose values are zeros."""
    test_agent = isinstance(agent, str)
    name = agent if test_agent else type(agent).__name__
    if not (isinstance(features, FeatureNetwork | Identity)
            and (v is None if test_agent else isinstance(v, VNetwork))
            and isinstance(policy, SoftmaxPolicy | GaussianPolicy)):
        wanted = ("(features, policy): a FeatureNetwork and" if test_agent
                  else "(features, v, policy, ...): a FeatureNetwork, a VNetwork and")
        given = [type(part).__name__ for part in ((features, policy) if test_agent
                                                  else (features, v, policy))]
        raise TypeError(f"{name} takes ALL's {wanted} a SoftmaxPolicy or GaussianPolicy, got "
                        f"{', '.join(given[:-1])} and {given[-1]}")
    if isinstance(policy, GaussianPolicy):
        bounds = policy.model.bounds
        policy_model, head = (_AllsGaussian(policy.model.model, bounds.scale),
                              GaussianHead(bounds.low, bounds.high))
    else:
        logits = [m.out_features for m in policy.model.model.modules()
                  if isinstance(m, nn.Linear)]
        if not logits:
            raise ValueError(f"{name}'s SoftmaxPolicy has no nn.Linear layer to count its "
                             "actions by: end its model with nn.Linear(features, n_actions)")
        policy_model, head = policy.model.model, CategoricalHead(logits[-1])
    model = SharedActorCritic(getattr(features.model, "model", features.model), policy_model,
                              _NoValue() if v is None else v.model.model)
    parts = [part for part in (features, v, policy)
             if part is not None and not isinstance(part, Identity)]
    if not test_agent:
        agent.features, agent.v = features, v
    return ActorCriticPolicy(JointApproximation(model, parts, "actor_critic"), head)


class _NoValue(nn.Module):
    """A test agent's value head: zeros (it acts only)."""

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return features.new_zeros(*features.shape[:-1], 1)


class _AllsGaussian(nn.Module):
    """ALL's ``GaussianPolicy`` model, whose ``cat(mean, log_variance)`` draws ``center + mean +
    scale * exp(log_variance / 2) * noise``, as ``GaussianHead``'s ``cat(mean / scale,
    log_std)``: the same distribution (``GaussianHead`` clamps ``log_std`` to [-20, 2])."""

    def __init__(self, model: nn.Module, scale: torch.Tensor):
        super().__init__()
        self.model = model  # (the bounds' scale is on the CPU: moved to the model's device)
        device = next((param.device for param in model.parameters()), scale.device)
        self.register_buffer("inverse_scale", (1.0 / scale).to(device))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        mean, log_variance = self.model(features).chunk(2, dim=-1)
        return torch.cat((mean * self.inverse_scale, 0.5 * log_variance), dim=-1)


def _n_envs(agent: Any, n_envs: Any) -> int:
    """ALL's required ``n_envs`` (``None``: one ``ValueError`` line, as ALL refuses it)."""
    if n_envs is None:
        raise ValueError(f"{type(agent).__name__} needs n_envs, the number of parallel "
                         "environments whose StateArray it acts on (ALL: 'Must specify n_envs')")
    check_count(n_envs=n_envs)
    return n_envs


class A2C(OnPolicyAgent):
    """ALL's ``A2C``: one ``A2CTrainer`` step of n-step advantages per ``n_steps`` acts on the
    ``StateArray`` of ``n_envs`` environments."""

    def __init__(self, features: Any, v: Any, policy: Any, discount_factor: float = 0.99,
                 entropy_loss_scaling: float = 0.01, n_envs: int | None = None,
                 n_steps: int = 4, logger: Any = None):
        acting = all_actor_critic(self, features, v, policy)
        trainer = A2CTrainer(acting, value_coef=1.0, entropy_coef=entropy_loss_scaling,
                             discount_factor=discount_factor)
        super().__init__(acting, trainer, _n_envs(self, n_envs), n_steps, logger)


class PPO(OnPolicyAgent):
    """ALL's ``PPO``: a ``PPOTrainer`` update (advantages not normalized, as ALL's) per ``n_steps``
    acts on ``n_envs`` environments; ``compute_batch_size`` changes no result."""

    def __init__(self, features: Any, v: Any, policy: Any, discount_factor: float = 0.99,
                 entropy_loss_scaling: float = 0.01, epochs: int = 4, epsilon: float = 0.2,
                 lam: float = 0.95, minibatches: int = 4, compute_batch_size: int = 256,
                 n_envs: int | None = None, n_steps: int = 4, logger: Any = None):
        acting = all_actor_critic(self, features, v, policy)
        n_envs = _n_envs(self, n_envs)
        check_count(minibatches=minibatches, compute_batch_size=compute_batch_size)
        if minibatches > n_envs * n_steps:
            raise ValueError(f"PPO splits its n_envs * n_steps = {n_envs * n_steps} rows into "
                             f"minibatches, got minibatches={minibatches}: give at most "
                             f"{n_envs * n_steps}")
        trainer = PPOTrainer(acting, epochs, n_envs * n_steps // minibatches, clip=epsilon,
                             normalize_advantages=False, entropy_coef=entropy_loss_scaling,
                             value_coef=1.0, discount_factor=discount_factor, gae_lambda=lam)
        super().__init__(acting, trainer, n_envs, n_steps, logger)


class VAC(OnPolicyAgent):
    """ALL's ``VAC``: one ``VACTrainer`` step (the TD error as advantage) per ``act``, on a
    ``State`` or a ``StateArray``."""

    def __init__(self, features: Any, v: Any, policy: Any, discount_factor: float = 1):
        acting = all_actor_critic(self, features, v, policy)
        trainer = VACTrainer(acting, value_coef=1.0, discount_factor=discount_factor)
        super().__init__(acting, trainer, n_envs=1, n_steps=1)
