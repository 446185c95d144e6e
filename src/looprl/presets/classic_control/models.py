"""ALL 0.9's classic-control model constructors (``all.presets.classic_control.models``), with
their names, signatures and layers: ``from looprl.presets.classic_control.models import
fc_relu_q``. Each takes looprl's environment as ALL's took its own (``env.state_space``,
``env.action_space``); the presets call them as ALL's presets did when given as
``model_constructor`` (``dqn.hyperparameters(model_constructor=fc_relu_q)``; C51 adds
``atoms=``, Rainbow ``atoms=`` and ``sigma=``; the actor-critic presets call
``feature_model_constructor(env)``, ``value_model_constructor()`` and
``policy_model_constructor(env)``)."""

from __future__ import annotations

from typing import Any

from looprl import nn

__all__ = ["dueling_fc_relu_q", "fc_policy_head", "fc_relu_dist_q", "fc_relu_features",
           "fc_relu_q", "fc_relu_rainbow", "fc_value_head"]


def _inputs(env: Any) -> int:
    return int(env.state_space.shape[0])


def fc_relu_q(env: Any, hidden: int = 64) -> nn.Sequential:
    """Q-values of ``env``'s actions: one ReLU layer of ``hidden`` units (ALL's DQN)."""
    return nn.Sequential(nn.Flatten(), nn.Linear(_inputs(env), hidden), nn.ReLU(),
                         nn.Linear(hidden, env.action_space.n))


def dueling_fc_relu_q(env: Any) -> nn.Sequential:
    """Dueling Q-values: value and advantage streams of 256 ReLU units (ALL's VQN, VSarsa)."""
    return nn.Sequential(nn.Flatten(), nn.Dueling(
        nn.Sequential(nn.Linear(_inputs(env), 256), nn.ReLU(), nn.Linear(256, 1)),
        nn.Sequential(nn.Linear(_inputs(env), 256), nn.ReLU(),
                      nn.Linear(256, env.action_space.n))))


def fc_relu_features(env: Any, hidden: int = 64) -> nn.Sequential:
    """The actor-critic presets' shared features: one ReLU layer of ``hidden`` units."""
    return nn.Sequential(nn.Flatten(), nn.Linear(_inputs(env), hidden), nn.ReLU())


def fc_value_head(hidden: int = 64) -> nn.Linear0:
    """The state value over ``hidden`` features (starting at zero)."""
    return nn.Linear0(hidden, 1)


def fc_policy_head(env: Any, hidden: int = 64) -> nn.Linear0:
    """Action logits over ``hidden`` features (starting at zero: a uniform first policy)."""
    return nn.Linear0(hidden, env.action_space.n)


def fc_relu_dist_q(env: Any, hidden: int = 64, atoms: int = 51) -> nn.Sequential:
    """C51's logits ``(batch, actions * atoms)``: one ReLU layer of ``hidden`` units."""
    return nn.Sequential(nn.Flatten(), nn.Linear(_inputs(env), hidden), nn.ReLU(),
                         nn.Linear0(hidden, env.action_space.n * atoms))


def fc_relu_rainbow(env: Any, hidden: int = 64, atoms: int = 51, sigma: float = 0.5
                    ) -> nn.Sequential:
    """Rainbow's logits ``(batch, actions * atoms)``: one ReLU layer of ``hidden`` units and
    noisy (initial noise ``sigma``) value and advantage layers, combined per atom."""
    return nn.Sequential(
        nn.Flatten(), nn.Linear(_inputs(env), hidden), nn.ReLU(),
        nn.CategoricalDueling(
            nn.NoisyFactorizedLinear(hidden, atoms, sigma_init=sigma, init_scale=3),
            nn.NoisyFactorizedLinear(hidden, env.action_space.n * atoms, sigma_init=sigma,
                                     init_scale=0.0)))
