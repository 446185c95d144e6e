"""Ready-made actor-critic policies of the SRL API (seed 004), for PPO and PPG.

``Policy(type_="actor-critic-separate", args=dict(obs_dim={"obs": 187},
state_dim={"state": 623}, action_dim=16))`` builds one, as the seed shows. Variants:

====================================================  ========================================
name                                                  backbones and actions
====================================================  ========================================
``actor-critic`` (``shared_backbone`` kwarg)          separate by default
``actor-critic-separate``                             separate actor and critic, discrete
``actor-critic-shared``                               one backbone, two heads, discrete
``actor-critic-auxiliary``                            separate, plus a PPG auxiliary value head
``actor-critic-separate-continuous-action``           separate, Gaussian actions
``actor-critic-shared-continuous-action``             shared, Gaussian actions
====================================================  ========================================

*Separate* means separate: the actor and the critic each encode their own inputs, with no
layer in common (SRL shared a pre-processing layer between them, a bug fixed here).

A backbone encodes each observation field it reads (flat fields as they are, ``(C, H, W)``
images with the Nature CNN, or a small CNN below 36x36), concatenates them, runs an MLP of
``num_layers`` x ``hidden_dim`` and, with ``rnn_type="gru"``, a GRU whose memory is the
policy's ``policy_state`` (seed convention: ``hx`` of shape ``(num_rnn_layers, 1,
rnn_hidden_dim)``; separate recurrent policies also carry the critic's ``critic_hx``).

An obs field ``action_mask`` (one 0/1 per action, not declared in ``obs_dim``) masks
invalid discrete actions: their logits become ``MASKED_LOGIT``, so they are never sampled.

The same classes serve the local agents: they are ``PPOPolicy`` s with an ``approximation``
(Adam), so ``PPO(policy, PPOTrainer(policy), n_envs=8)`` trains one on a vector env.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import torch
from torch import nn

from looprl.agents.ppo import PPOPolicy
from looprl.approximation import Approximation
from looprl.core import RolloutRequest, RolloutResult, deterministic_rows
from looprl.core.namedarray import NamedArray, namedarray
from looprl.nn import orthogonal_init
from looprl.nn.fields import Backbone, as_tensor, field_shapes, observation_fields
from looprl.policies.distributions import CategoricalHead, GaussianActor, GaussianHead

__all__ = [
    "ActorCriticAnalysis",
    "ActorCriticNetwork",
    "ActorCriticPolicy",
    "AuxiliaryActorCriticPolicy",
    "GRUPolicyState",
    "SeparateActorCriticPolicy",
    "SeparateContinuousActorCriticPolicy",
    "SeparateGRUPolicyState",
    "SharedActorCriticPolicy",
    "SharedContinuousActorCriticPolicy",
]

logger = logging.getLogger(__name__)

#: The logit of an action masked out by the obs field ``action_mask``.
MASKED_LOGIT = -1e8


@namedarray
class ActorCriticAnalysis:
    """What ``analyze(sample, target="ppo")`` returns; every field is ``[T, B]``, with gradients.

    Attributes:
        log_prob: ``log pi(action | obs)`` of the stored actions (``None`` for target ``value``).
        entropy: entropy of ``pi(. | obs)`` (``None`` for target ``value``).
        value: ``V(obs)`` (of the critic's inputs).
        aux_value: the auxiliary value head on the actor backbone (``None`` without one).
    """

    log_prob: Any
    entropy: Any
    value: Any
    aux_value: Any = None


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


class ActorCriticNetwork(nn.Module):
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
        aux = orthogonal_init(nn.Linear(actor.out_features, 1), 1.0) if auxiliary_head else None
        self.aux_head = aux

    @property
    def recurrent(self) -> bool:
        return self.actor.rnn is not None

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
            params = params.masked_fill(~mask, MASKED_LOGIT)
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


# -- the policy ----------------------------------------------------------------------------------


class ActorCriticPolicy(PPOPolicy):
    """Actor-critic policy of the SRL API (see the module docstring); also a ``PPOPolicy``.

    ``rollout`` takes a ``RolloutRequest`` batched along dim 0 (``obs`` a ``NamedArray``/dict
    of fields or one array; ``policy_state`` leaves ``[B, *default leaf shape]``) and returns
    ``action`` (``[B]`` int64, or ``[B, action_dim]`` float32), ``log_prob``, ``value`` and
    the next ``policy_state`` (``None`` without GRU). Rows marked by ``is_evaluation`` take
    the most likely action.

    ``analyze(sample, target)`` has two forms:

    * SRL: ``sample`` has ``obs`` and ``action`` (and, for GRU policies, ``policy_state``,
      ``done``, ``truncated``), time-major ``[T, B, ...]``; ``target="ppo"`` (default) gives an
      ``ActorCriticAnalysis``, ``target="value"`` one with only ``value``/``aux_value``.
      Feed-forward policies accept any leading shape. GRU policies unroll over ``T`` from
      ``policy_state[0]``, resetting the memory to the default after rows that are ``done``
      or ``truncated``, so that log-probs equal those of the rollout.
    * Local (``looprl.agents.ppo``): ``sample`` has ``observation`` and ``action`` (a flat
      ``RolloutBuffer`` batch); it gives the tuple ``(log_prob, entropy, value)`` that
      ``PPOTrainer`` expects, and ``target="aux"`` gives ``(params, aux_value, value)`` for
      ``PPGTrainer`` (with ``auxiliary_head=True``). Feed-forward policies only.

    Args:
        obs_dim: ``{field: dim or shape}`` the actor reads; an int or a shape is ``{"obs": ...}``.
        action_dim: number of discrete actions, or the action size with ``continuous_action``.
        state_dim: the fields the critic reads instead (centralized critic; separate only).
        hidden_dim, num_layers, activation: the MLP of each backbone.
        rnn_type: ``None`` or ``"gru"``.
        num_rnn_layers, rnn_hidden_dim: the GRU (``rnn_hidden_dim`` defaults to ``hidden_dim``).
        shared_backbone: one backbone for both heads.
        continuous_action: Gaussian actions with a state-independent log-std.
        auxiliary_head: an extra value head on the actor backbone (PPG).
        init_log_std: initial log-std of Gaussian actions.
        action_low, action_high: bounds the Gaussian is mapped onto (default: unbounded).
        lr: Adam's learning rate (the ``approximation``'s optimizer).
        clip_grad: maximum gradient norm of the approximation's updates (0: off).
        device: where the parameters live.
        seed: seeds the initial weights and the action sampling (``None``: torch's global RNG).
    """

    def __init__(
        self,
        obs_dim: Any,
        action_dim: int,
        state_dim: Any = None,
        hidden_dim: int = 64,
        num_layers: int = 2,
        activation: str = "tanh",
        rnn_type: str | None = None,
        num_rnn_layers: int = 1,
        rnn_hidden_dim: int | None = None,
        shared_backbone: bool = False,
        continuous_action: bool = False,
        auxiliary_head: bool = False,
        init_log_std: float = 0.0,
        action_low: Any = None,
        action_high: Any = None,
        lr: float = 3e-4,
        clip_grad: float = 0.0,
        device: str | torch.device = "cpu",
        seed: int | None = None,
    ):
        _check_options(action_dim, hidden_dim, num_layers, rnn_type, num_rnn_layers)
        if shared_backbone and state_dim is not None:
            logger.warning("state_dim has no effect on a shared backbone: the critic reads obs")
            state_dim = None
        rnn = (rnn_hidden_dim or hidden_dim) if rnn_type else 0
        options = dict(
            hidden_dim=hidden_dim,
            num_layers=num_layers,
            activation=activation,
            rnn_hidden_dim=rnn,
            num_rnn_layers=num_rnn_layers,
        )
        with torch.random.fork_rng(devices=[], enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            actor = Backbone(field_shapes(obs_dim), **options)
            critic = (
                None
                if shared_backbone
                else Backbone(
                    field_shapes(obs_dim if state_dim is None else state_dim, "state_dim"),
                    **options,
                )
            )
            model = ActorCriticNetwork(
                actor, critic, action_dim, continuous_action, auxiliary_head, init_log_std
            )
        device = torch.device(device)
        model = model.to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr, eps=1e-5)
        approximation = Approximation(
            model, optimizer, clip_grad=clip_grad, device=device, name="actor_critic"
        )
        super().__init__(
            approximation, _head(action_dim, continuous_action, action_low, action_high)
        )
        self.shared_backbone = shared_backbone
        self.continuous_action = continuous_action
        self._rnn = (num_rnn_layers, rnn)
        self._generator = None
        if seed is not None:
            self._generator = torch.Generator(device).manual_seed(seed)

    @property
    def recurrent(self) -> bool:
        """Whether the policy has a GRU (and so a ``policy_state``)."""
        return self._rnn[1] > 0

    @property
    def default_policy_state(self) -> NamedArray | None:
        """Zeros of shape ``(num_rnn_layers, 1, rnn_hidden_dim)`` per GRU, or ``None``."""
        if not self.recurrent:
            return None
        hx = np.zeros((self._rnn[0], 1, self._rnn[1]), dtype=np.float32)
        if self.shared_backbone:
            return GRUPolicyState(hx=hx)
        return SeparateGRUPolicyState(hx=hx, critic_hx=hx.copy())

    def parameters(self) -> Any:
        """The parameters of ``module``."""
        return self.module.parameters()

    def rollout(self, request: RolloutRequest, **kwargs: Any) -> RolloutResult:
        """Actions, log-probs, values and next policy states for a batch (no gradients)."""
        hx = self._hx_in(getattr(request, "policy_state", None))
        with torch.no_grad():
            params, value, _, next_hx = self.module(request.obs, hx)
            if value.dim() != 1:
                raise ValueError(
                    f"rollout takes obs batched along dim 0 only, got leading "
                    f"shape {tuple(value.shape)}"
                )
            action = self._act(params, deterministic_rows(request))
            log_prob = self.head.log_prob(params, action)
        return RolloutResult(
            action=action, policy_state=self._hx_out(next_hx), log_prob=log_prob, value=value
        )

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> Any:
        """Re-evaluate stored ``sample`` rows with gradients (see the class docstring).

        Raises:
            ValueError: unknown ``target``, or a sample a GRU policy cannot unroll.
        """
        if "obs" not in sample and "observation" in sample:
            return self._analyze_local(sample, target)
        target = target or "ppo"
        if target not in ("ppo", "value"):
            raise ValueError(
                f"unknown analyze target {target!r}; {type(self).__name__} "
                "supports 'ppo' and 'value'"
            )
        hx, reset = self._unroll_inputs(sample) if self.recurrent else (None, None)
        params, value, aux, _ = self.approximation(sample.obs, hx, reset)
        if target == "value":
            return ActorCriticAnalysis(log_prob=None, entropy=None, value=value, aux_value=aux)
        action = as_tensor(sample.action, self.device)
        action = action.float() if self.continuous_action else action
        log_prob, entropy = self.head.log_prob_and_entropy(params, action)
        return ActorCriticAnalysis(log_prob=log_prob, entropy=entropy, value=value, aux_value=aux)

    def _analyze_local(self, sample: Any, target: str | None) -> tuple[torch.Tensor, ...]:
        if self.recurrent:
            raise ValueError(
                "a recurrent actor-critic policy analyzes time-major samples with "
                "obs and policy_state (the SRL trainers), not flat local batches"
            )
        if target not in (None, "ppo", "aux"):
            raise ValueError(
                f"unknown analyze target {target!r} for a local batch; use None/'ppo' or 'aux'"
            )
        params, value, aux, _ = self.approximation(sample.observation)
        if target == "aux":
            if aux is None:
                raise ValueError("analyze target 'aux' needs a policy with auxiliary_head=True")
            return params, aux, value
        log_prob, entropy = self.head.log_prob_and_entropy(params, sample.action)
        return log_prob, entropy, value

    # -- actions -------------------------------------------------------------------------

    def _act(self, params: torch.Tensor, deterministic: bool | torch.Tensor) -> torch.Tensor:
        if deterministic is True:
            return self.head.mode(params)
        sample = self._sample(params)
        if not isinstance(deterministic, torch.Tensor):
            return sample
        if deterministic.numel() != len(sample):
            raise ValueError(f"is_evaluation has {deterministic.numel()} rows, obs {len(sample)}")
        rows = deterministic.to(params.device).view(-1, *([1] * (sample.dim() - 1)))
        return torch.where(rows, self.head.mode(params), sample)

    def _sample(self, params: torch.Tensor) -> torch.Tensor:
        """One action per row, from the policy's own generator when seeded."""
        if self.continuous_action:
            mean, log_std = self.head.split(params)
            noise = torch.randn(mean.shape, generator=self._generator, device=mean.device)
            return self.head.bounds.to_env(mean + torch.exp(log_std) * noise)
        u = torch.rand(params.shape, generator=self._generator, device=params.device)
        return torch.argmax(params - u.clamp_min(1e-20).log().neg().log(), dim=-1)

    # -- recurrent memory ----------------------------------------------------------------

    def _hx_in(self, state: Any) -> tuple[torch.Tensor, torch.Tensor | None] | None:
        """``[B, L, 1, H]`` leaves of a request's ``policy_state`` as GRU memories ``[L, B, H]``."""
        if not self.recurrent or state is None:
            return None
        names = ("hx",) if self.shared_backbone else ("hx", "critic_hx")
        layers, hidden = self._rnn
        memories = []
        for name in names:
            leaf = state[name] if name in state else None
            if leaf is None:
                raise ValueError(
                    f"policy_state has no {name!r}; pass rows of "
                    f"default_policy_state ({', '.join(names)})"
                )
            x = as_tensor(leaf, self.device).float()
            if x.dim() != 4 or tuple(x.shape[1:]) != (layers, 1, hidden):
                raise ValueError(
                    f"policy_state.{name} has shape {tuple(x.shape)}, expected "
                    f"[B, {layers}, 1, {hidden}] (default_policy_state per row)"
                )
            memories.append(x.squeeze(2).transpose(0, 1).contiguous())
        return memories[0], memories[1] if len(memories) > 1 else None

    def _hx_out(self, hx: tuple | None) -> NamedArray | None:
        if hx is None:
            return None
        leaves = [h.transpose(0, 1).unsqueeze(2) for h in hx if h is not None]
        state_class = GRUPolicyState if self.shared_backbone else SeparateGRUPolicyState
        return state_class(*leaves)

    def _unroll_inputs(self, sample: Any) -> tuple[tuple | None, torch.Tensor | None]:
        """The memory before row 0 and the resets ``[T, B]`` after ``done``/``truncated`` rows."""
        state = sample["policy_state"] if "policy_state" in sample else None
        if state is None:
            raise ValueError("a recurrent policy analyzes samples with policy_state [T, B, ...]")
        first = {name: state[name][0] for name in state}
        ends = None
        for name in ("done", "truncated"):
            flag = sample[name] if name in sample else None
            if flag is not None:
                flag = as_tensor(flag, self.device).bool()
                ends = flag if ends is None else ends | flag
        if ends is None:
            return self._hx_in(first), None
        if ends.dim() != 2:
            raise ValueError(
                f"a recurrent policy analyzes [T, B] samples; done/truncated have "
                f"shape {tuple(ends.shape)}"
            )
        reset = torch.zeros_like(ends)
        reset[1:] = ends[:-1]
        return self._hx_in(first), reset


def _head(action_dim: int, continuous: bool, low: Any, high: Any) -> Any:
    if not continuous:
        return CategoricalHead(action_dim)
    low = torch.full((action_dim,), -math.inf) if low is None else low
    high = torch.full((action_dim,), math.inf) if high is None else high
    return GaussianHead(low, high)


def _check_options(
    action_dim: Any, hidden_dim: int, num_layers: int, rnn_type: Any, num_rnn_layers: int
) -> None:
    if not isinstance(action_dim, int | np.integer) or action_dim <= 0:
        raise ValueError(f"action_dim must be a positive int, got {action_dim!r}")
    if hidden_dim <= 0 or num_layers < 0 or num_rnn_layers <= 0:
        raise ValueError(
            f"hidden_dim and num_rnn_layers must be positive and num_layers >= 0, "
            f"got {hidden_dim}, {num_rnn_layers}, {num_layers}"
        )
    if rnn_type not in (None, "gru"):
        raise ValueError(f"rnn_type must be None or 'gru', got {rnn_type!r}")


class SeparateActorCriticPolicy(ActorCriticPolicy):
    """``actor-critic-separate``: separate actor and critic backbones, discrete actions."""

    def __init__(self, obs_dim: Any, action_dim: int, **kwargs: Any):
        super().__init__(obs_dim, action_dim, shared_backbone=False, **kwargs)


class SharedActorCriticPolicy(ActorCriticPolicy):
    """``actor-critic-shared``: one backbone with policy and value heads, discrete actions."""

    def __init__(self, obs_dim: Any, action_dim: int, **kwargs: Any):
        super().__init__(obs_dim, action_dim, shared_backbone=True, **kwargs)


class AuxiliaryActorCriticPolicy(ActorCriticPolicy):
    """``actor-critic-auxiliary``: separate backbones plus PPG's auxiliary value head."""

    def __init__(self, obs_dim: Any, action_dim: int, **kwargs: Any):
        super().__init__(obs_dim, action_dim, shared_backbone=False, auxiliary_head=True, **kwargs)


class SeparateContinuousActorCriticPolicy(ActorCriticPolicy):
    """``actor-critic-separate-continuous-action``: separate backbones, Gaussian actions."""

    def __init__(self, obs_dim: Any, action_dim: int, **kwargs: Any):
        super().__init__(
            obs_dim, action_dim, shared_backbone=False, continuous_action=True, **kwargs
        )


class SharedContinuousActorCriticPolicy(ActorCriticPolicy):
    """``actor-critic-shared-continuous-action``: one backbone, Gaussian actions."""

    def __init__(self, obs_dim: Any, action_dim: int, **kwargs: Any):
        super().__init__(
            obs_dim, action_dim, shared_backbone=True, continuous_action=True, **kwargs
        )
