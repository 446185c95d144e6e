"""PPO preset for continuous control: the classic-control PPO preset with a diagonal Gaussian
(``GaussianHead``) whose mean the actor outputs, and a learned log-std."""

from __future__ import annotations

from typing import Any

import numpy as np

from looprl.nn import MLP, ActorCritic
from looprl.policies.distributions import GaussianActor, GaussianHead
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.ppo import PPOClassicControlPreset
from looprl.presets.classic_control.ppo import default_hyperparameters as classic_defaults
from looprl.presets.common import derived, require_box_actions, require_flat_observations
from looprl.presets.constructors import (
    AC_NAMES,
    PPO_CONTINUOUS_MODELS,
    LogVarianceToLogStd,
    call_constructor,
    constructors,
    run_checked,
    space_sample,
)

default_hyperparameters: dict[str, Any] = derived(
    classic_defaults, drop=("features", AC_NAMES[0]), discount_factor=0.9, lam=0.95,
    lr_schedule="constant", n_steps=256, epochs=10, linear_clip=False, log_std_init=0.0,
)


def custom_gaussian(built: dict[str, Any], env: Any, algorithm: str, action_dim: int
                    ) -> ActorCritic:
    """ALL's ``value_model_constructor(env)`` and ``policy_model_constructor(env)`` (its
    ``cat(mean, log variance)`` halved into ``cat(mean, log_std)``), checked on a sample."""
    x = space_sample(env.observation_space)
    value_key, policy_key = "value_model_constructor", "policy_model_constructor"
    value = call_constructor(algorithm, value_key, built[value_key], env)
    policy = call_constructor(algorithm, policy_key, built[policy_key], env)
    run_checked(algorithm, value_key, built[value_key], value, [x], [(1, 1)], "one value")
    run_checked(algorithm, policy_key, built[policy_key], policy, [x], [(1, 2 * action_dim)],
                "cat(mean, log variance)")
    return ActorCritic(LogVarianceToLogStd(policy), value)


class PPOContinuousPreset(PPOClassicControlPreset):
    """Builds PPO agents with separate tanh actor and critic MLPs and Gaussian actions."""

    def _build(self, env: Any) -> tuple[ActorCritic, GaussianHead]:
        space = require_box_actions(env, self.algorithm, bounded=False)
        fixed = np.flatnonzero(space.low == space.high).tolist()  # (to_unit would divide by 0)
        if fixed:
            raise ValueError(f"{self.algorithm}'s Gaussian actions need low < high in every "
                             f"dimension, but {env.name}'s action space {space} has low == high "
                             f"in dimension(s) {fixed}: drop them in a gymnasium.ActionWrapper "
                             "(their action is fixed), or use sac, td3 or ddpg")
        obs_dim = require_flat_observations(env, self.algorithm, "continuous")
        action_dim = int(space.shape[0])
        hp = self.hyperparameters
        built = constructors(hp, PPO_CONTINUOUS_MODELS)
        if built is not None:
            return custom_gaussian(built, env, self.algorithm, action_dim), GaussianHead(
                space.low, space.high)
        hidden = (hp["hidden"],) * 2
        mean = MLP(obs_dim, action_dim, hidden=hidden, output_gain=0.01)
        actor = GaussianActor(mean, action_dim, hp["log_std_init"])
        critic = MLP(obs_dim, 1, hidden=hidden, output_gain=1.0)
        return ActorCritic(actor, critic), GaussianHead(space.low, space.high)


ppo = PresetBuilder("ppo", default_hyperparameters, PPOContinuousPreset)
