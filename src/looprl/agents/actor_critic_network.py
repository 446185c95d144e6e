"""``ActorCriticNetwork``: the field-reading actor-critic network of ``actor_critic_policy``.

Actor and critic ``Backbone``s (one, if shared) over the observation fields the policy
declares (``obs_dim``/``state_dim``), with policy, value and auxiliary heads and optional GRU
memories (``GRUPolicyState``, ``SeparateGRUPolicyState``: the seed's ``policy_state``). It
follows ``looprl.nn.ActorCriticModel``'s contract, as the local presets' networks do.

An obs field ``action_mask`` (one 0/1 per action, not declared in ``obs_dim``) masks
invalid discrete actions: their logits become ``looprl.policies.MASKED_Q`` (finite, so that
products with a zero terminal mask and ``0 * log_softmax`` in entropies stay 0, not NaN), so
they are never sampled.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from looprl.core.namedarray import NamedArray, as_tensor, namedarray
from looprl.nn import ActorCriticModel, orthogonal_init
from looprl.nn.fields import Backbone, observation_fields
from looprl.policies import MASKED_Q
from looprl.policies.distributions import GaussianActor

__all__ = ["ActorCriticNetwork", "GRUPolicyState", "SeparateGRUPolicyState"]


@namedarray
class GRUPolicyState:
    """GRU memory of a shared-backbone recurrent policy: ``hx`` ``(layers, 1, hidden)``."""

    hx: Any


@namedarray
class SeparateGRUPolicyState:
    """GRU memories of a separate recurrent policy: the actor's ``hx``, the critic's
    ``critic_hx``, each ``(layers, 1, hidden)``."""

    hx: Any
    critic_hx: Any


class ActorCriticNetwork(ActorCriticModel):
    """Actor and critic backbones (one, if shared) with policy, value and auxiliary heads.

    ``forward(obs, hx=None, reset=None)`` returns ``(params, value, aux_value, next_hx)``:
    distribution parameters (logits, or ``cat(mean, log_std)``) ``[*lead, P]``, values
    ``[*lead]``, auxiliary values (or ``None``) and the next GRU memories (a tuple
    ``(actor [L, B, H], critic or None)``, ``None`` without GRU). ``obs`` is what
    ``observation_fields`` takes; recurrent networks take ``[B]`` (one step) or ``[T, B]``.
    ``hx=None`` starts from zeros; ``reset`` (``[T, B]`` bool) zeroes memories before rows.

    Args:
        actor: the actor backbone.
        critic: the critic backbone (``None``: the critic reads the actor's features).
        action_dim: number of actions (discrete) or the action size (continuous).
        continuous: Gaussian actions with a state-independent log-std.
        auxiliary_head: add PPG's auxiliary value head on the actor backbone.
        init_log_std: initial log-std of Gaussian actions.
    """

    def __init__(
        self,
        actor: Backbone,
        critic: Backbone | None,
        action_dim: int,
        continuous: bool = False,
        auxiliary_head: bool = False,
        init_log_std: float = 0.0,
    ):
        super().__init__()
        self.actor, self.critic, self.continuous = actor, critic, continuous
        self.shapes = {**actor.encoder.shapes, **(critic.encoder.shapes if critic else {})}
        logits = orthogonal_init(nn.Linear(actor.out_features, action_dim), 0.01)
        self.policy_head = GaussianActor(logits, action_dim, init_log_std) if continuous else logits
        value_in = (critic or actor).out_features
        self.value_head = orthogonal_init(nn.Linear(value_in, 1), 1.0)
        self.aux_head = (orthogonal_init(nn.Linear(actor.out_features, 1), 1.0)
                         if auxiliary_head else None)

    @property
    def recurrent(self) -> bool:
        return self.actor.rnn is not None

    def initial_state(self) -> NamedArray | None:
        """Zeros of shape ``(num_rnn_layers, 1, rnn_hidden_dim)`` per GRU, or ``None``."""
        if not self.recurrent:
            return None
        rnn = self.actor.rnn
        hx = np.zeros((rnn.num_layers, 1, rnn.hidden_size), dtype=np.float32)
        if self.critic is None:
            return GRUPolicyState(hx=hx)
        return SeparateGRUPolicyState(hx=hx, critic_hx=hx.copy())

    def memory_in(self, state: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``[B, L, 1, H]`` leaves of a request's ``policy_state`` as GRU memories ``[L, B, H]``.

        Raises:
            ValueError: a leaf is missing or has another shape than ``initial_state``'s rows.
        """
        names = ("hx",) if self.critic is None else ("hx", "critic_hx")
        layers, hidden = self.actor.rnn.num_layers, self.actor.rnn.hidden_size
        device = self.value_head.weight.device
        memories = []
        for name in names:
            leaf = state[name] if name in state else None
            if leaf is None:
                raise ValueError(
                    f"policy_state has no {name!r}; pass rows of "
                    f"default_policy_state ({', '.join(names)})"
                )
            x = as_tensor(leaf, device).float()
            if x.dim() != 4 or tuple(x.shape[1:]) != (layers, 1, hidden):
                raise ValueError(
                    f"policy_state.{name} has shape {tuple(x.shape)}, expected "
                    f"[B, {layers}, 1, {hidden}] (default_policy_state per row)"
                )
            memories.append(x.squeeze(2).transpose(0, 1).contiguous())
        return memories[0], memories[1] if len(memories) > 1 else None

    def memory_out(self, hx: tuple) -> NamedArray:
        """GRU memories ``[L, B, H]`` as rows of a ``policy_state`` (``memory_in``'s inverse)."""
        leaves = [h.transpose(0, 1).unsqueeze(2) for h in hx if h is not None]
        return (GRUPolicyState if self.critic is None else SeparateGRUPolicyState)(*leaves)

    def forward(self, obs: Any, hx: tuple | None = None, reset: torch.Tensor | None = None):
        device = self.value_head.weight.device
        fields, lead, mask = observation_fields(obs, self.shapes, device)
        actor = self.actor.features(fields)
        critic = self.critic.features(fields) if self.critic is not None else None
        next_hx = None
        if self.recurrent:
            actor, critic, next_hx = self._recur(actor, critic, lead, hx, reset)
        params = self.policy_head(actor)
        if mask is not None and not self.continuous:
            params = params.masked_fill(~mask, MASKED_Q)
        value = self.value_head(actor if critic is None else critic).squeeze(-1)
        aux = self.aux_head(actor).squeeze(-1).reshape(lead) if self.aux_head is not None else None
        return params.reshape(*lead, -1), value.reshape(lead), aux, next_hx

    def _recur(self, actor, critic, lead, hx, reset):
        if len(lead) not in (1, 2):
            raise ValueError(
                f"recurrent policies take [B] (rollout) or [T, B] (analyze) rows, "
                f"got leading shape {lead}"
            )
        steps, batch = (1, lead[0]) if len(lead) == 1 else lead
        if reset is not None and tuple(reset.shape) != (steps, batch):
            raise ValueError(f"done/truncated have shape {tuple(reset.shape)}, obs {lead}")
        hx = hx or (None, None)
        outs, memories = [], []
        for backbone, x, h in ((self.actor, actor, hx[0]), (self.critic, critic, hx[1])):
            if backbone is None:
                outs.append(None)
                memories.append(None)
                continue
            if h is None:
                rnn = backbone.rnn
                h = x.new_zeros(rnn.num_layers, batch, rnn.hidden_size)
            elif h.shape[1] != batch:
                raise ValueError(f"policy_state has {h.shape[1]} rows, obs {batch}")
            out, h = backbone.unroll(x.reshape(steps, batch, -1), h, reset)
            outs.append(out.reshape(steps * batch, -1))
            memories.append(h)
        return outs[0], outs[1], tuple(memories)
