"""Losses of the algorithms in ``looprl.agents``: short pure functions of tensors, one module
per family, each tested against a hand-computed reference."""

from looprl.agents.losses.continuous import (
    critic_loss,
    deterministic_actor_loss,
    sac_actor_loss,
    sac_target,
    sac_temperature_loss,
    smoothed_target_action,
    td3_target,
    twin_critic_loss,
)
from looprl.agents.losses.policy_gradient import (
    a2c_loss,
    categorical_kl,
    normalize,
    policy_gradient_loss,
    ppg_aux_loss,
    ppo_clip_bounds,
    ppo_loss,
    ppo_policy_loss,
    value_loss,
)
from looprl.agents.losses.value import (
    c51_loss,
    categorical_cross_entropy,
    categorical_kl_divergence,
    categorical_projection,
    clipped_double_q_target,
    double_q_target,
    dqn_loss,
    n_step_bootstrap,
    td_target,
)
from looprl.agents.losses.vtrace import (
    generalized_advantage_estimate,
    segment_gae,
    segment_mask,
    vtrace,
)

__all__ = [
    "a2c_loss", "c51_loss", "categorical_cross_entropy", "categorical_kl",
    "categorical_kl_divergence", "categorical_projection", "clipped_double_q_target",
    "critic_loss", "deterministic_actor_loss", "double_q_target", "dqn_loss",
    "generalized_advantage_estimate", "n_step_bootstrap", "normalize", "policy_gradient_loss",
    "ppg_aux_loss", "ppo_clip_bounds", "ppo_loss", "ppo_policy_loss", "sac_actor_loss",
    "sac_target", "sac_temperature_loss", "segment_gae", "segment_mask", "smoothed_target_action",
    "td3_target", "td_target", "twin_critic_loss", "value_loss", "vtrace",
]
