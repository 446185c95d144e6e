"""Action distributions as plain functions of network outputs: on a rollout's hot path these
few tensor operations are several times cheaper than ``torch.distributions``."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from looprl.approximation.q_network import check_actions
from looprl.core.suggest import check_count
from looprl.nn.layers import ActionBounds


class CategoricalHead:
    """A categorical distribution over ``n`` discrete actions, parameterized by logits."""

    def __init__(self, n: int):
        check_count(n=n)
        self.n = n

    @staticmethod
    def sample(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Sample one action per row, from ``generator`` if given (``_race``)."""
        return _race(torch.softmax(logits, dim=-1), generator)

    @staticmethod
    def sample_and_log_prob(logits: torch.Tensor, generator: torch.Generator | None = None
                            ) -> tuple[torch.Tensor, torch.Tensor]:
        """``sample`` and ``log_prob`` of its actions, sharing one log-softmax."""
        log_p = logits.log_softmax(-1)
        action = _race(log_p.exp(), generator)
        return action, log_p.gather(-1, action.unsqueeze(-1)).squeeze(-1)

    @staticmethod
    def mode(logits: torch.Tensor) -> torch.Tensor:
        """The most likely action per row."""
        return torch.argmax(logits, dim=-1)

    @staticmethod
    def log_prob(logits: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``log pi(a | s)`` of ``actions`` (one per row)."""
        return _picked(torch.log_softmax(logits, dim=-1), actions)

    @staticmethod
    def log_prob_and_entropy(logits: torch.Tensor, actions: torch.Tensor
                             ) -> tuple[torch.Tensor, torch.Tensor]:
        """``log pi(a | s)`` and the entropy of ``pi(. | s)``, sharing one log-softmax."""
        log_p = torch.log_softmax(logits, dim=-1)
        return _picked(log_p, actions), _entropy(log_p)

    @staticmethod
    def entropy(logits: torch.Tensor) -> torch.Tensor:
        """The entropy of ``pi(. | s)`` per row."""
        return _entropy(torch.log_softmax(logits, dim=-1))


def _picked(log_p: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``log_p[..., actions]`` row by row; an action that is no whole number in ``0 .. n - 1``
    is a one-line ``ValueError`` (checked where it fails, or is fractional: no sync per call)."""
    n = log_p.shape[-1]
    if actions.is_floating_point():
        check_actions(actions, n, "a categorical policy")
    try:
        return log_p.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    except (RuntimeError, IndexError):
        check_actions(actions, n, "a categorical policy")
        raise


def _entropy(log_p: torch.Tensor) -> torch.Tensor:
    """``-sum(p log p)`` over the last dimension, from the log-probabilities."""
    return -(log_p.exp() * log_p).sum(-1)


def _race(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One category per row of ``probs``: ``argmax(probs / E)``, ``E ~ Exp(1)`` i.i.d. (the
    exponential race: category ``i`` wins with probability ``probs[i]``)."""
    wait = torch.empty_like(probs)  # (the keyword only when given: it costs a tenth)
    wait = wait.exponential_() if generator is None else wait.exponential_(generator=generator)
    return (probs.div_(wait) if not probs.requires_grad else probs / wait).argmax(-1)


_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)


def _normal_log_prob(x: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """``sum_i log N(x_i; mean_i, exp(log_std_i))`` over the last dimension."""
    z = (x - mean) * torch.exp(-log_std)
    return (-0.5 * z * z - log_std - _HALF_LOG_2PI).sum(-1)


class GaussianActor(nn.Module):
    """Mean network plus a learned, state-independent log standard deviation: ``forward(obs)``
    returns ``cat(mean(obs), log_std)``, the parameters of ``GaussianHead``."""

    def __init__(self, mean_model: nn.Module, action_dim: int, log_std_init: float = 0.0):
        super().__init__()
        self.mean_model = mean_model
        self.log_std = nn.Parameter(torch.full((action_dim,), float(log_std_init)))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        mean = self.mean_model(observation)
        return torch.cat((mean, self.log_std.expand_as(mean)), dim=-1)


class GaussianHead:
    """A diagonal Gaussian over ``Box`` actions from ``cat(mean, log_std)`` (``log_std`` clamped),
    in normalized units: ``action = center + scale * (mean + std * eps)``, not clipped (envs clip);
    ``log_prob``: the normalized action's density (off by a constant ``sum(log scale)``)."""

    def __init__(self, low: Any, high: Any, log_std_min: float = -20.0, log_std_max: float = 2.0):
        self.bounds = ActionBounds(low, high)
        self.log_std_min = log_std_min
        self.log_std_max = log_std_max

    def split(self, params: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean, log_std)`` from the network output (``log_std`` clamped)."""
        mean, log_std = self.bounds.check(params, 2).chunk(2, dim=-1)
        return mean, log_std.clamp(self.log_std_min, self.log_std_max)

    def sample(self, params: torch.Tensor, generator: torch.Generator | None = None
               ) -> torch.Tensor:
        """One action per row, from ``generator`` if given."""
        return self.sample_and_log_prob(params, generator)[0]

    def sample_and_log_prob(self, params: torch.Tensor, generator: torch.Generator | None = None
                            ) -> tuple[torch.Tensor, torch.Tensor]:
        """``sample`` and ``log_prob`` of its actions (no round trip through the bounds)."""
        mean, log_std, _, unit = self._draw(params, generator)
        return self.bounds.to_env(unit), _normal_log_prob(unit, mean, log_std)

    def _draw(self, params: torch.Tensor, generator: torch.Generator | None
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(mean, log_std, noise, mean + std * noise)``, one draw per row in the params' dtype."""
        mean, log_std = self.split(params)
        noise = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
        return mean, log_std, noise, mean + torch.exp(log_std) * noise

    def mode(self, params: torch.Tensor) -> torch.Tensor:
        """The most likely action per row (the mean, clamped to the bounds)."""
        return self.bounds.clip(self.bounds.to_env(self.split(params)[0]))

    def log_prob(self, params: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``log pi(a | s)`` of the normalized ``actions`` (one per row)."""
        mean, log_std = self.split(params)
        return _normal_log_prob(self.bounds.to_unit(actions), mean, log_std)

    def log_prob_and_entropy(self, params: torch.Tensor, actions: torch.Tensor
                             ) -> tuple[torch.Tensor, torch.Tensor]:
        """``log pi(a | s)`` and the entropy ``sum(log_std + 0.5 + 0.5 log 2 pi)``."""
        mean, log_std = self.split(params)
        return (_normal_log_prob(self.bounds.to_unit(actions), mean, log_std),
                (log_std + 0.5 + _HALF_LOG_2PI).sum(-1))


def tanh_log_det(u: torch.Tensor) -> torch.Tensor:
    """``sum_i log(1 - tanh(u_i)^2)``, computed stably as ``2 (log 2 - u - softplus(-2u))``."""
    return (2.0 * (_LOG_2 - u - nn.functional.softplus(-2.0 * u))).sum(-1)


class TanhGaussianHead(GaussianHead):
    """A Gaussian squashed by ``tanh`` into the bounds (SAC, Haarnoja et al. 2018, App. C):
    ``action = center + scale * tanh(u)``, ``u ~ N(mean, std)``, ``log pi(a | s) = log N(u; mean,
    std) - sum log(1 - tanh(u)^2)``: the normalized action's density (as SB3's)."""

    #: margin that keeps ``atanh`` finite when evaluating given actions
    epsilon = 1e-6

    def rsample(self, params: torch.Tensor, generator: torch.Generator | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterized action per row and its ``log pi`` (both with gradients)."""
        _, log_std, noise, u = self._draw(params, generator)
        log_prob = (-0.5 * noise * noise - log_std - _HALF_LOG_2PI).sum(-1) - tanh_log_det(u)
        return self.bounds.to_env(torch.tanh(u)), log_prob

    sample_and_log_prob = rsample  # ``sample`` and ``log_prob`` of its actions

    def mode(self, params: torch.Tensor) -> torch.Tensor:
        """``center + scale * tanh(mean)`` per row (the deterministic action of SAC)."""
        return self.bounds.to_env(torch.tanh(self.split(params)[0]))

    def log_prob(self, params: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """``log pi(a | s)`` of given ``actions``, inverting the squashing with ``atanh``."""
        mean, log_std = self.split(params)
        u = torch.atanh(self.bounds.to_unit(actions).clamp(-1.0 + self.epsilon, 1.0 - self.epsilon))
        return _normal_log_prob(u, mean, log_std) - tanh_log_det(u)

    def log_prob_and_entropy(self, params: torch.Tensor, actions: torch.Tensor
                             ) -> tuple[torch.Tensor, torch.Tensor]:
        """``log pi(a | s)`` and ``-log pi(a')`` of a fresh reparameterized sample ``a'`` (the
        squashed Gaussian has no closed-form entropy)."""
        return self.log_prob(params, actions), -self.rsample(params)[1]
