"""Actor-critic networks: ``ActorCriticModel`` and the presets' networks."""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.nn.fields import single_field

__all__ = ["ActorCritic", "ActorCriticModel", "PPGNetwork", "SharedActorCritic"]


class ActorCriticModel(nn.Module):
    """Base of the networks of ``ActorCriticPolicy``: ``forward(obs, hx=None, reset=None)``
    returns ``(params, value, aux_value, next_hx)``: distribution parameters (logits, or
    ``cat(mean, log_std)``), ``V(obs)``, PPG's auxiliary values (or ``None``) and the next
    recurrent memory (or ``None``)."""

    def initial_state(self) -> Any:
        """Recurrent memory of one stream at an episode start (``None``: feed-forward)."""
        return None


class ActorCritic(ActorCriticModel):
    """Separate ``actor`` (distribution parameters) and ``critic`` (one value) networks."""

    def __init__(self, actor: nn.Module, critic: nn.Module):
        super().__init__()
        self.actor = actor
        self.critic = critic

    def forward(self, obs: Any, hx: Any = None, reset: Any = None) -> tuple:
        x = single_field(obs)
        return self.actor(x), self.critic(x).squeeze(-1), None, None


class SharedActorCritic(ActorCriticModel):
    """A shared ``body`` with a ``policy_head`` and a ``value_head`` (one value)."""

    def __init__(self, body: nn.Module, policy_head: nn.Module, value_head: nn.Module):
        super().__init__()
        self.body = body
        self.policy_head = policy_head
        self.value_head = value_head

    def forward(self, obs: Any, hx: Any = None, reset: Any = None) -> tuple:
        features = self.body(single_field(obs))
        return self.policy_head(features), self.value_head(features).squeeze(-1), None, None


class PPGNetwork(ActorCriticModel):
    """PPG's networks (Cobbe et al., 2021): a ``trunk`` with a ``policy_head`` (logits) and an
    ``aux_head`` (one auxiliary value), and a separate ``critic``."""

    def __init__(self, trunk: nn.Module, policy_head: nn.Module, aux_head: nn.Module,
                 critic: nn.Module):
        super().__init__()
        self.trunk = trunk
        self.policy_head = policy_head
        self.aux_head = aux_head
        self.critic = critic

    def forward(self, obs: Any, hx: Any = None, reset: Any = None) -> tuple:
        x = single_field(obs)
        features = self.trunk(x)
        aux_value = self.aux_head(features).squeeze(-1)
        return self.policy_head(features), self.critic(x).squeeze(-1), aux_value, None
