"""Noisy linear layers (Fortunato et al., 2018)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["NoisyFactorizedLinear"]


class NoisyFactorizedLinear(nn.Module):
    """A linear layer with learned factorized Gaussian noise ``W = mu_W + sigma_W * f(eps_out)
    f(eps_in)^T``, ``f(x) = sign(x) sqrt(|x|)``, drawn at every forward pass in training mode
    (eval mode: the mean). Every sigma starts at ``sigma_init / sqrt(in_features)``; the means
    uniform in ``+-1 / sqrt(in_features)``, or as ALL's ``init_scale`` says, in ``+-sqrt(init_scale
    / in_features)`` (0: zeros)."""

    def __init__(self, in_features: int, out_features: int, sigma_init: float = 0.5,
                 init_scale: float | None = None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bound = (1.0 / math.sqrt(in_features) if init_scale is None
                 else math.sqrt(init_scale / in_features))
        sigma = sigma_init / math.sqrt(in_features)
        weight = torch.empty(out_features, in_features).uniform_(-bound, bound)
        self.weight_mu = nn.Parameter(weight)
        self.weight_sigma = nn.Parameter(torch.full((out_features, in_features), sigma))
        self.bias_mu = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.bias_sigma = nn.Parameter(torch.full((out_features,), sigma))

    @staticmethod
    def _scaled_noise(n: int, like: torch.Tensor) -> torch.Tensor:
        noise = torch.randn(n, device=like.device, dtype=like.dtype)
        return noise.sign() * noise.abs().sqrt()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = F.linear(x, self.weight_mu, self.bias_mu)
        if not self.training:
            return mean
        eps_in = self._scaled_noise(self.in_features, x)
        eps_out = self._scaled_noise(self.out_features, x)
        # sigma_W (eps_out eps_in^T) x + sigma_b eps_out == eps_out * (sigma_W (eps_in * x) +
        # sigma_b): no n x m noise matrix
        return mean + F.linear(x * eps_in, self.weight_sigma, self.bias_sigma) * eps_out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"
