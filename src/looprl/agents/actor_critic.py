"""The actor-critic policy of PPO, PPG, A2C, VAC and VPG, on every runtime (seed 004 API), and
its network; *separate* actor and critic backbones share no layer."""

from __future__ import annotations

import functools
import logging
import math
from typing import Any

import numpy as np
import torch
from torch import nn

from looprl.agents.segments import ApproximationPolicy
from looprl.approximation import Approximation
from looprl.core import RolloutRequest, RolloutResult, deterministic_rows
from looprl.core.leaves import as_tensor
from looprl.core.namedarray import NamedArray, namedarray
from looprl.core.ranges import check_arguments
from looprl.core.suggest import check_device, check_seed
from looprl.nn import ActorCritic, ActorCriticModel, SharedActorCritic, orthogonal_init
from looprl.nn.fields import Backbone, field_shapes, observation_fields, observation_tensor
from looprl.policies import MASKED_Q
from looprl.policies.distributions import CategoricalHead, GaussianActor, GaussianHead

__all__ = [
    "ActorCriticAnalysis", "ActorCriticNetwork", "ActorCriticPolicy",
    "GRUPolicyState", "SeparateGRUPolicyState", "actor_critic_policy",
]

logger = logging.getLogger(__name__)


@namedarray
class ActorCriticAnalysis:
    """What ``analyze(sample, target="ppo")`` returns: ``[T, B]`` fields, with gradients
    (``None`` where not computed; ``logits`` ``[T, B, A]`` of discrete policies only)."""

    log_prob: Any
    entropy: Any
    value: Any
    aux_value: Any = None
    logits: Any = None


@namedarray
class GRUPolicyState:
    """GRU memory of a shared-backbone policy: ``hx`` ``(layers, 1, hidden)``."""

    hx: Any


@namedarray
class SeparateGRUPolicyState:
    """GRU memories of a separate policy: ``hx`` (actor), ``critic_hx``; ``(layers, 1, hidden)``."""

    hx: Any
    critic_hx: Any


class ActorCriticNetwork(ActorCriticModel):
    """Actor and critic backbones (one, if ``critic`` is ``None``) with policy, value and
    auxiliary heads; GRU memories ``(actor [L, B, H], critic or None)``."""

    def __init__(self, actor: Backbone, critic: Backbone | None, action_dim: int,
                 continuous: bool = False, auxiliary_head: bool = False,
                 init_log_std: float = 0.0):
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
        """Zeros ``(num_rnn_layers, 1, rnn_hidden_dim)`` per GRU, or ``None``."""
        if not self.recurrent:
            return None
        rnn = self.actor.rnn
        hx = np.zeros((rnn.num_layers, 1, rnn.hidden_size), dtype=np.float32)
        if self.critic is None:
            return GRUPolicyState(hx=hx)
        return SeparateGRUPolicyState(hx=hx, critic_hx=hx.copy())

    def memory_in(self, state: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``[B, L, 1, H]`` leaves of a ``policy_state`` as GRU memories ``[L, B, H]``."""
        names = ("hx",) if self.critic is None else ("hx", "critic_hx")
        layers, hidden = self.actor.rnn.num_layers, self.actor.rnn.hidden_size
        device = self.value_head.weight.device
        memories = []
        for name in names:
            leaf = state[name] if name in state else None
            if leaf is None:
                raise ValueError(f"policy_state has no {name!r}; pass rows of "
                                 f"default_policy_state ({', '.join(names)})")
            x = as_tensor(leaf, device).float()
            if x.dim() != 4 or tuple(x.shape[1:]) != (layers, 1, hidden):
                raise ValueError(f"policy_state.{name} has shape {tuple(x.shape)}, expected "
                                 f"[B, {layers}, 1, {hidden}] (default_policy_state per row)")
            memories.append(x.squeeze(2).transpose(0, 1).contiguous())
        return memories[0], memories[1] if len(memories) > 1 else None

    def memory_out(self, hx: tuple) -> NamedArray:
        """GRU memories ``[L, B, H]`` as rows of a ``policy_state`` (``memory_in``'s inverse)."""
        leaves = [h.transpose(0, 1).unsqueeze(2) for h in hx if h is not None]
        return (GRUPolicyState if self.critic is None else SeparateGRUPolicyState)(*leaves)

    def forward(self, obs: Any, hx: tuple | None = None, reset: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, tuple | None]:
        """``(policy parameters, values, auxiliary values, next GRU memories)`` of ``obs`` rows
        ``[B]`` or ``[T, B]`` (``reset`` ``[T, B]``: zero the memories before those rows)."""
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
            raise ValueError(f"recurrent policies take [B] (rollout) or [T, B] (analyze) rows, "
                             f"got leading shape {lead}")
        steps, batch = (1, lead[0]) if len(lead) == 1 else lead
        if reset is not None and tuple(reset.shape) != (steps, batch):
            raise ValueError(f"done/truncated have shape {tuple(reset.shape)}, obs {lead}")
        outs = []  # (features, memory) of the actor and the critic (``None``: no own backbone)
        for backbone, x, h in zip((self.actor, self.critic), (actor, critic), hx or (None, None)):
            if backbone is not None:
                if h is not None and h.shape[1] != batch:
                    raise ValueError(f"policy_state has {h.shape[1]} rows, obs {batch}")
                x, h = backbone.unroll(x.reshape(steps, batch, -1), h, reset)
                x = x.reshape(steps * batch, -1)
            outs.append((x, h))
        (actor, actor_hx), (critic, critic_hx) = outs
        return actor, critic, (actor_hx, critic_hx)


class ActorCriticPolicy(ApproximationPolicy):
    """Stochastic actor-critic policy over ``approximation`` (of an ``ActorCriticModel``), ``head``
    a ``CategoricalHead`` or ``GaussianHead``. ``rollout`` takes rows ``[B, ...]`` (evaluation
    rows: the mode, SRL's; with ``sample_evaluation`` a sample, ALL's test agents'); ``analyze``
    rows ``[T, B, ...]`` (GRU: unrolled from ``policy_state[0]``, reset after episode ends),
    ``"ppo"`` an ``ActorCriticAnalysis``, ``"value"`` the values."""

    def __init__(self, approximation: Approximation, head: Any, seed: int | None = None,
                 sample_evaluation: bool = False):
        self.approximation = approximation
        self.head = head
        self.sample_evaluation = sample_evaluation
        self.device = approximation.device
        self.continuous_action = isinstance(head, GaussianHead)
        seed = check_seed(type(self).__name__, seed)
        self._generator = None if seed is None else torch.Generator(self.device).manual_seed(seed)
        self._initial_state = approximation.model.initial_state()

    @property
    def recurrent(self) -> bool:
        """Whether the network has a recurrent memory (a ``policy_state``)."""
        return self._initial_state is not None

    @property
    def default_policy_state(self) -> NamedArray | None:
        return self._initial_state

    @property
    def unused_parameters(self) -> bool:
        """An auxiliary value head's (PPO's loss leaves it out), or a user's network's."""
        model = self.module
        return getattr(model, "aux_head", None) is not None or not isinstance(
            model, (ActorCritic, SharedActorCritic, ActorCriticNetwork))

    def rollout(self, request: RolloutRequest, **kwargs: Any) -> RolloutResult:
        """Actions, log-probs, values and next policy states for a batch (no gradients)."""
        state = None if self._initial_state is None else request.policy_state  # (recurrent)
        with torch.set_grad_enabled(False):  # (no_grad's effect, at half its call overhead)
            hx = self.module.memory_in(state) if state is not None else None
            obs = observation_tensor(request.obs, self.device, strict=False)
            params, value, _, next_hx = self.module(obs, hx)
            if value.dim() != 1:
                raise ValueError(f"rollout takes obs batched along dim 0 only, got leading "
                                 f"shape {tuple(value.shape)}")
            deterministic = deterministic_rows(request, value.shape[0])  # (checked anyway)
            if deterministic is False or self.sample_evaluation:  # (one pass for both)
                action, log_prob = self.head.sample_and_log_prob(params, self._generator)
            else:
                action = self._act(params, deterministic)
                log_prob = self.head.log_prob(params, action)
        policy_state = self.module.memory_out(next_hx) if next_hx is not None else None
        return RolloutResult(action=action, policy_state=policy_state, log_prob=log_prob,
                             value=value)

    def logits_and_values(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """The action head's parameters (logits if discrete) and the values (PLR)."""
        with torch.no_grad():
            params, value = self.module(observation_tensor(obs, self.device, strict=False))[:2]
        return params.float().cpu(), value.float().reshape(-1).cpu()

    def analyze(self, sample: Any, target: str | None = None, entropy: bool = True,
                **kwargs: Any) -> Any:
        """Re-evaluate ``sample`` with gradients (see the class docstring); ``entropy=False``:
        discrete policies leave the entropy out (``None``)."""
        target = target or "ppo"
        if target not in ("ppo", "value"):
            raise ValueError(f"unknown analyze target {target!r}; {type(self).__name__} "
                             "supports 'ppo' and 'value'")
        hx, reset = self._unroll_inputs(sample) if self.recurrent else (None, None)
        obs = observation_tensor(sample.obs, self.device, strict=False)
        params, value, aux, _ = self.approximation(obs, hx, reset)
        if target == "value":
            return ActorCriticAnalysis(log_prob=None, entropy=None, value=value, aux_value=aux)
        action = as_tensor(sample.action, self.device)
        action = action.float() if self.continuous_action else action
        logits = None if self.continuous_action else params
        if entropy or logits is None:
            log_prob, entropy = self.head.log_prob_and_entropy(params, action)
        else:
            log_prob, entropy = self.head.log_prob(params, action), None
        return ActorCriticAnalysis(log_prob=log_prob, entropy=entropy, value=value,
                                   aux_value=aux, logits=logits)

    def _act(self, params: torch.Tensor, deterministic: bool | torch.Tensor) -> torch.Tensor:
        """The mode (``deterministic`` is ``True``) or, per row of a bool tensor, mode or sample."""
        if deterministic is True:
            return self.head.mode(params)
        sample = self.head.sample(params, self._generator)
        rows = deterministic.to(params.device).view(-1, *([1] * (sample.dim() - 1)))
        return torch.where(rows, self.head.mode(params), sample)

    def _unroll_inputs(self, sample: Any) -> tuple[tuple | None, torch.Tensor | None]:
        """The memory before row 0 and the resets ``[T, B]`` after ``done``/``truncated`` rows."""
        state = sample["policy_state"] if "policy_state" in sample else None
        if state is None:
            raise ValueError("a recurrent policy analyzes samples with policy_state [T, B, ...]")
        first = self.module.memory_in({name: state[name][0] for name in state})
        flags = [as_tensor(sample[name], self.device).bool() for name in ("done", "truncated")
                 if name in sample and sample[name] is not None]
        if not flags:
            return first, None
        ends = flags[0] | flags[-1]  # (either flag, or the one given)
        if ends.dim() != 2:
            raise ValueError(f"a recurrent policy analyzes [T, B] samples; done/truncated have "
                             f"shape {tuple(ends.shape)}")
        reset = torch.zeros_like(ends)
        reset[1:] = ends[:-1]
        return first, reset


def actor_critic_policy(obs_dim: Any, action_dim: int, state_dim: Any = None, hidden_dim: int = 64,
                        num_layers: int = 2, activation: str = "tanh", rnn_type: str | None = None,
                        num_rnn_layers: int = 1, rnn_hidden_dim: int | None = None,
                        shared_backbone: bool = False, continuous_action: bool = False,
                        auxiliary_head: bool = False, init_log_std: float = 0.0,
                        action_low: Any = None, action_high: Any = None, lr: float = 3e-4,
                        eps: float = 1e-5, clip_grad: float = 0.0,
                        device: str | torch.device = "cpu", seed: int | None = None
                        ) -> ActorCriticPolicy:
    """An ``ActorCriticPolicy`` over an ``ActorCriticNetwork`` with Adam (seed 004's policies):
    ``obs_dim`` ``{field: dim or shape}`` for the actor, ``state_dim`` for a separate critic,
    ``rnn_type`` ``None`` or ``"gru"``, ``auxiliary_head`` for PPG, ``seed``: weights, sampling."""
    if not isinstance(action_dim, int | np.integer) or action_dim <= 0:
        raise ValueError(f"action_dim must be a positive int, got {action_dim!r}")
    if hidden_dim <= 0 or num_layers < 0 or num_rnn_layers <= 0:
        raise ValueError(f"hidden_dim and num_rnn_layers must be positive and num_layers >= 0, "
                         f"got {hidden_dim}, {num_rnn_layers}, {num_layers}")
    if rnn_type not in (None, "gru"):
        raise ValueError(f"rnn_type must be None or 'gru', got {rnn_type!r}")
    check_arguments("the actor-critic policy", lr=lr, eps=eps, clip_grad=clip_grad)
    seed = check_seed("actor-critic policy", seed)
    if shared_backbone and state_dim is not None:
        logger.warning("state_dim has no effect on a shared backbone: the critic reads obs")
    options = dict(hidden_dim=hidden_dim, num_layers=num_layers, activation=activation,
                   rnn_hidden_dim=(rnn_hidden_dim or hidden_dim) if rnn_type else 0,
                   num_rnn_layers=num_rnn_layers)
    with torch.random.fork_rng(devices=[], enabled=seed is not None):
        if seed is not None:
            torch.manual_seed(seed)
        actor = Backbone(field_shapes(obs_dim), **options)
        critic = None
        if not shared_backbone:
            critic_fields = obs_dim if state_dim is None else state_dim
            critic = Backbone(field_shapes(critic_fields, "state_dim"), **options)
        model = ActorCriticNetwork(actor, critic, action_dim, continuous_action, auxiliary_head,
                                   init_log_std)
    model = model.to(check_device(device))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, eps=eps)
    approximation = Approximation(model, optimizer, clip_grad=clip_grad, device=device,
                                  name="actor_critic")
    head = CategoricalHead(action_dim)
    if continuous_action:
        low = torch.full((action_dim,), -math.inf) if action_low is None else action_low
        high = torch.full((action_dim,), math.inf) if action_high is None else action_high
        head = GaussianHead(low, high)
    return ActorCriticPolicy(approximation, head, seed=seed)


#: The registered names (``looprl.agents``) and the options each fixes.
VARIANTS: dict[str, dict[str, bool]] = {
    "actor-critic": {},
    "actor-critic-separate": {"shared_backbone": False},
    "actor-critic-shared": {"shared_backbone": True},
    "actor-critic-auxiliary": {"shared_backbone": False, "auxiliary_head": True},
    "actor-critic-separate-continuous-action": {"shared_backbone": False,
                                                "continuous_action": True},
    "actor-critic-shared-continuous-action": {"shared_backbone": True, "continuous_action": True},
}


def variant(name: str) -> Any:
    """``actor_critic_policy`` with the options of the registered ``name`` fixed."""
    return functools.partial(actor_critic_policy, **VARIANTS[name])
