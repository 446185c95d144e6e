"""ALL 0.9's continuous-control models (``all.presets.continuous.models``), the defaults of
the ``continuous`` presets' model-constructor hyperparameters when some are given:

    from functools import partial
    from looprl.presets import continuous
    from looprl.presets.continuous.models import fc_q
    continuous.sac.hyperparameters(q1_model_constructor=partial(fc_q, hidden1=64, hidden2=64))

``fc_q`` maps ``cat(observation, action)`` to one value; ``fc_v`` an observation to one
value; ``fc_deterministic_policy`` to the action pre-activations (DDPG and TD3 squash them
into the bounds); ``fc_soft_policy`` and ``fc_policy`` to ``cat(mean, log variance)``, ALL's
policy outputs (SAC's and PPO's presets halve the log variance into a log std).
"""

from __future__ import annotations

from typing import Any

import torch

from looprl import nn

__all__ = ["fc_deterministic_policy", "fc_policy", "fc_q", "fc_soft_policy", "fc_v"]


def _fc(inputs: int, outputs: int, hidden1: int, hidden2: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Float(),
        nn.Linear(inputs, hidden1),
        nn.ReLU(),
        nn.Linear(hidden1, hidden2),
        nn.ReLU(),
        nn.Linear0(hidden2, outputs),
    )


def fc_q(env: Any, hidden1: int = 400, hidden2: int = 300) -> nn.Sequential:
    """``Q(cat(s, a))``: one value."""
    return _fc(env.state_space.shape[0] + env.action_space.shape[0], 1, hidden1, hidden2)


def fc_v(env: Any, hidden1: int = 400, hidden2: int = 300) -> nn.Sequential:
    """``V(s)``: one value."""
    return _fc(env.state_space.shape[0], 1, hidden1, hidden2)


def fc_deterministic_policy(env: Any, hidden1: int = 400, hidden2: int = 300) -> nn.Sequential:
    """An action's pre-activations."""
    return _fc(env.state_space.shape[0], env.action_space.shape[0], hidden1, hidden2)


def fc_soft_policy(env: Any, hidden1: int = 400, hidden2: int = 300) -> nn.Sequential:
    """``cat(mean, log variance)`` of a tanh-Gaussian (SAC)."""
    return _fc(env.state_space.shape[0], env.action_space.shape[0] * 2, hidden1, hidden2)


class fc_policy(nn.Module):  # noqa: N801 -- ALL's name
    """``cat(mean, log variance)`` of a Gaussian (PPO): a tanh MLP's mean and a learned,
    state-independent log variance (``log_stds``, as ALL names it)."""

    def __init__(self, env: Any, hidden1: int = 400, hidden2: int = 300):
        super().__init__()
        self.model = nn.Sequential(
            nn.Float(),
            nn.Linear(env.state_space.shape[0], hidden1),
            nn.Tanh(),
            nn.Linear(hidden1, hidden2),
            nn.Tanh(),
            nn.Linear(hidden2, env.action_space.shape[0]),
        )
        self.log_stds = nn.Parameter(torch.zeros(env.action_space.shape[0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        means = self.model(x)
        stds = self.log_stds.expand(*means.shape)
        return torch.cat((means, stds), 1)
