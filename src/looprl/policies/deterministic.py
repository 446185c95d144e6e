"""ALL's policy approximations: ``SoftmaxPolicy`` (a ``Categorical``), ``GaussianPolicy`` and,
over ``Box`` actions, ``DeterministicPolicy`` (DDPG, TD3) and ``SoftDeterministicPolicy`` (SAC).
Each takes a ``State``/``StateArray`` (the model's output zeroed where ``mask == 0``) or
observations."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.distributions import Categorical, Independent, Normal

from looprl.approximation import Approximation
from looprl.core import State
from looprl.core.ranges import check_ranges
from looprl.nn import RLNetwork
from looprl.nn.layers import box_space, checked_model
from looprl.policies.distributions import ActionBounds, TanhGaussianHead

__all__ = ["DeterministicActor", "DeterministicPolicy", "GaussianPolicy", "GaussianPolicyNetwork",
           "SoftDeterministicActor", "SoftDeterministicPolicy", "SoftmaxPolicy",
           "SoftmaxPolicyNetwork", "model_outputs"]


def model_outputs(model: nn.Module, x: Any) -> torch.Tensor:
    """``model`` on a ``State``/``StateArray`` (``State.apply``: zeroed where ``mask == 0``) or on a
    tensor of observations."""
    return x.apply(model, "observation") if isinstance(x, State) else model(x)


class SoftmaxPolicyNetwork(RLNetwork):
    """Maps a ``State``/``StateArray`` to a ``Categorical`` over its logits (not validated)."""

    def forward(self, state: Any) -> Categorical:
        return Categorical(logits=super().forward(state), validate_args=False)


class SoftmaxPolicy(Approximation):
    """Softmax (categorical) policy; ``model`` maps observations to ``(batch, n)`` logits."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 name: str = "policy", **kwargs: Any):
        super().__init__(SoftmaxPolicyNetwork(model), optimizer, name=name, **kwargs)


class GaussianPolicyNetwork(RLNetwork):
    """ALL's Gaussian: ``Independent(Normal(center + mean, exp(log_variance / 2) * scale), 1)`` from
    the model's ``cat(mean, log_variance)`` (the mean shifted, not scaled; samples not clipped)."""

    def __init__(self, model: nn.Module, space: Any):
        box_space(space, "GaussianPolicy")
        super().__init__(model)
        self.bounds = ActionBounds(space.low, space.high)

    def forward(self, state: Any) -> Independent:
        outputs = model_outputs(self.model, state)
        center, scale, _, _ = self.bounds.on(outputs.device)
        means, log_variances = self.bounds.check(outputs, 2).chunk(2, dim=-1)
        return Independent(Normal(means + center, (0.5 * log_variances).exp() * scale), 1)


class GaussianPolicy(Approximation):
    """ALL's Gaussian stochastic policy (``GaussianPolicyNetwork``)."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 space: Any = None, name: str = "policy", **kwargs: Any):
        super().__init__(GaussianPolicyNetwork(model, space), optimizer, name=name, **kwargs)


class DeterministicActor(nn.Module):
    """``center + scale * tanh(model(obs))``: actions within the bounds of ``space`` (a ``Box``)."""

    def __init__(self, model: nn.Module, space: Any):
        super().__init__()
        self.model = checked_model(model)
        box_space(space, "DeterministicPolicy")
        self.bounds = ActionBounds(space.low, space.high)

    def forward(self, observation: Any) -> torch.Tensor:
        outputs = self.bounds.check(model_outputs(self.model, observation))
        return self.bounds.to_env(torch.tanh(outputs))


class _BoxPolicy(Approximation):
    """An ``Approximation`` of a policy whose actions lie within ``self.bounds``."""

    bounds: ActionBounds

    def uniform(self, n: int) -> torch.Tensor:
        """``n`` actions drawn uniformly within the (finite) bounds."""
        unit = torch.rand((n, self.bounds.action_dim), device=self.device) * 2.0 - 1.0
        return self.bounds.to_env(unit)


class DeterministicPolicy(_BoxPolicy):
    """Deterministic policy (DDPG, TD3): ``policy(obs)`` is ``DeterministicActor``'s ``mu(obs)``;
    ``noise``: the Gaussian exploration noise's standard deviation in half ranges."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 space: Any = None, name: str = "policy", noise: float = 0.1, **kwargs: Any):
        check_ranges({"noise": noise}, type(self).__name__)
        actor = model if isinstance(model, DeterministicActor) else DeterministicActor(model, space)
        super().__init__(actor, optimizer, name=name, **kwargs)
        self.bounds = actor.bounds
        self.noise = noise

    def mode(self, observation: Any) -> torch.Tensor:
        """``mu(obs)`` without gradients."""
        return self.no_grad(observation)

    def explore(self, observation: Any) -> torch.Tensor:
        """``clip(mu(obs) + noise * scale * eps)`` with ``eps ~ N(0, I)``, without gradients."""
        action = self.no_grad(observation)
        if self.noise <= 0:
            return action
        _, scale, _, _ = self.bounds.on(action.device)
        return self.bounds.clip(action + self.noise * scale * torch.randn_like(action))


class SoftDeterministicActor(nn.Module):
    """A tanh-Gaussian actor: ``forward(obs)`` returns a reparameterized ``(action, log_prob)`` of
    ``model``'s ``cat(mean, log_std)`` (``TanhGaussianHead``)."""

    def __init__(self, model: nn.Module, space: Any, log_std_min: float = -20.0,
                 log_std_max: float = 2.0):
        super().__init__()
        self.model = checked_model(model)
        box_space(space, "SoftDeterministicPolicy")
        self.head = TanhGaussianHead(space.low, space.high, log_std_min, log_std_max)

    def forward(self, observation: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return self.head.rsample(model_outputs(self.model, observation))

    def mode(self, observation: Any) -> torch.Tensor:
        """``center + scale * tanh(mean(obs))``."""
        return self.head.mode(model_outputs(self.model, observation))


class SoftDeterministicPolicy(_BoxPolicy):
    """Stochastic tanh-Gaussian policy of SAC: ``policy(obs)`` is ``SoftDeterministicActor``'s
    ``(action, log_prob)`` with gradients; ``sample`` (``explore``) and ``mode`` give actions."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 space: Any = None, name: str = "policy", log_std_min: float = -20.0,
                 log_std_max: float = 2.0, **kwargs: Any):
        if not isinstance(model, SoftDeterministicActor):
            if not log_std_min < log_std_max:  # (the clamp would pin every log std to the max)
                raise ValueError(f"SoftDeterministicPolicy needs log_std_min < log_std_max, got "
                                 f"{log_std_min!r} and {log_std_max!r}")
            model = SoftDeterministicActor(model, space, log_std_min, log_std_max)
        super().__init__(model, optimizer, name=name, **kwargs)
        self.bounds = model.head.bounds

    def sample(self, observation: Any) -> torch.Tensor:
        """A sampled action per row, without gradients."""
        return self.no_grad(observation)[0]

    explore = sample  # (SAC explores by sampling)

    def mode(self, observation: Any) -> torch.Tensor:
        """The deterministic action ``center + scale * tanh(mean)`` per row."""
        with torch.no_grad():
            return self.model.mode(observation)
