"""The presets' networks: actor-critic models, one builder per head on any body (a feature
extractor of ``looprl.nn.features`` or the caller's torso), and the Atari networks that put them
on the Nature CNN (Mnih et al., 2015), taking stacked uint8 frames ``(batch, 4, 84, 84)``."""

from __future__ import annotations

from typing import Any

from torch import nn

from looprl.nn.distributional import CategoricalDueling, CategoricalQHead
from looprl.nn.features import FEATURE_EXTRACTORS, NatureCNN, NatureConv, feature_extractor
from looprl.nn.fields import single_field
from looprl.nn.layers import HIDDEN_GAIN, Dueling, NoisyFactorizedLinear, orthogonal_init

__all__ = ["FEATURE_EXTRACTORS", "ActorCritic", "ActorCriticModel", "NatureCNN", "NatureConv",
           "PPGNetwork", "SharedActorCritic", "actor_critic_heads", "linear_head",
           "nature_actor_critic", "nature_c51", "nature_categorical_dqn", "nature_dqn",
           "nature_dueling_dqn", "nature_features", "nature_rainbow", "rainbow_network",
           "shared_actor_critic"]


class ActorCriticModel(nn.Module):
    """Base of ``ActorCriticPolicy``'s networks: ``forward(obs, hx=None, reset=None)`` returns
    distribution parameters, ``V(obs)``, PPG's aux values, the next memory (or ``None``)."""

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
    """PPG's networks: a ``trunk`` with two heads and a separate ``critic``."""

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


def linear_head(body: nn.Module, outputs: int) -> nn.Sequential:
    """DQN's network: ``body`` (with ``out_features``) and an orthogonal linear layer (gain 1)."""
    return nn.Sequential(body, orthogonal_init(nn.Linear(body.out_features, outputs), 1.0))


def actor_critic_heads(in_features: int, num_actions: int) -> tuple[nn.Module, nn.Module]:
    """A policy head of ``num_actions`` logits (orthogonal, gain 0.01) and a value head (gain 1)."""
    return (orthogonal_init(nn.Linear(in_features, num_actions), 0.01),
            orthogonal_init(nn.Linear(in_features, 1), 1.0))


def shared_actor_critic(body: nn.Module, num_actions: int) -> SharedActorCritic:
    """``body`` (a feature extractor) shared by the ``actor_critic_heads``."""
    return SharedActorCritic(body, *actor_critic_heads(body.out_features, num_actions))


def rainbow_network(torso: nn.Module, in_features: int, num_actions: int, atoms: int = 51,
                    hidden: int = 512, sigma: float = 0.5, dueling: bool = True,
                    noisy: bool = True, distributional: bool = True, orthogonal: bool = True
                    ) -> nn.Module:
    """Rainbow's Q-network (Hessel et al., 2018) on ``torso``: dueling streams of ``hidden``
    noisy units, each part optional (layers without noise orthogonal with ``orthogonal``);
    probabilities ``(batch, num_actions, atoms)`` if ``distributional``, else Q-values."""
    outputs = atoms if distributional else 1

    def linear(n_in: int, n_out: int, gain: float) -> nn.Module:
        if noisy:
            return NoisyFactorizedLinear(n_in, n_out, sigma_init=sigma)
        layer = nn.Linear(n_in, n_out)
        return orthogonal_init(layer, gain) if orthogonal else layer

    def stream(n_out: int) -> nn.Sequential:
        first = linear(in_features, hidden, HIDDEN_GAIN)
        return nn.Sequential(first, nn.ReLU(), linear(hidden, n_out, 1.0))

    if dueling:
        combine = CategoricalDueling if distributional else Dueling
        head = combine(stream(outputs), stream(num_actions * outputs))
    else:
        head = stream(num_actions * outputs)
    net = nn.Sequential(torso, head)
    return CategoricalQHead(net, num_actions, atoms) if distributional else net


def nature_features(kind: Any = "nature", frames: int = 4) -> nn.Module:
    """The feature extractor ``kind`` (a spec) over ``frames`` stacked 84x84 frames."""
    return feature_extractor(kind, (frames, 84, 84))


def nature_dqn(num_actions: int, frames: int = 4, features: str = "nature") -> nn.Sequential:
    """The Nature DQN: features and a linear layer of one value per action."""
    return linear_head(nature_features(features, frames), num_actions)


def nature_dueling_dqn(num_actions: int, frames: int = 4, hidden: int = 512) -> nn.Sequential:
    """Dueling DQN (Wang et al., 2016): ``nature_rainbow`` without noise and atoms."""
    return nature_rainbow(num_actions, frames=frames, hidden=hidden, noisy=False,
                          distributional=False)


def nature_rainbow(num_actions: int, atoms: int = 51, frames: int = 4, hidden: int = 512,
                   sigma: float = 0.5, dueling: bool = True, noisy: bool = True,
                   distributional: bool = True) -> nn.Sequential:
    """``rainbow_network`` on the Nature convolutions (orthogonal layers without noise)."""
    conv = NatureConv(frames)
    net = rainbow_network(conv, conv.out_features, num_actions, atoms, hidden, sigma,
                          dueling=dueling, noisy=noisy, distributional=distributional)
    return nn.Sequential(net) if distributional else net  # (the parameters' names: "0.model.")


def nature_categorical_dqn(num_actions: int, atoms: int = 51, frames: int = 4,
                           features: str = "nature") -> nn.Sequential:
    """C51's network (Bellemare et al., 2017): logits ``(batch, num_actions * atoms)``."""
    return nature_dqn(num_actions * atoms, frames, features)


def nature_c51(num_actions: int, atoms: int = 51, frames: int = 4, features: str = "nature"
               ) -> CategoricalQHead:
    """C51: ``(batch, num_actions, atoms)`` probabilities (a softmax per action)."""
    logits = nature_categorical_dqn(num_actions, atoms, frames, features)
    return CategoricalQHead(logits, num_actions, atoms)


def nature_actor_critic(num_actions: int, frames: int = 4, features: str = "nature"
                        ) -> SharedActorCritic:
    """The Nature CNN shared by a policy head (gain 0.01) and a value head (gain 1)."""
    return shared_actor_critic(nature_features(features, frames), num_actions)
