"""Layers, models and feature extractors: as ``all.nn``, a superset of ``torch.nn``."""

from torch import nn as _torch_nn
from torch.nn import *  # noqa: F403  (as all.nn: every torch.nn name, then looprl's)
from torch.nn import functional as F

from looprl.nn.cnn import (
    ActorCritic,
    ActorCriticModel,
    PPGNetwork,
    SharedActorCritic,
    actor_critic_heads,
    linear_head,
    nature_actor_critic,
    nature_categorical_dqn,
    nature_dqn,
    nature_dueling_dqn,
    nature_features,
    rainbow_network,
    shared_actor_critic,
)
from looprl.nn.distributional import CategoricalDueling, CategoricalQHead
from looprl.nn.features import (
    FEATURE_EXTRACTORS,
    ConvFeatures,
    MLPFeatures,
    NatureCNN,
    NatureConv,
    ResNetFeatures,
    feature_extractor,
)
from looprl.nn.fields import single_field
from looprl.nn.layers import (
    MLP,
    ActionBounds,
    Aggregation,
    Dueling,
    Flatten,
    Float,
    Linear0,
    NoisyFactorizedLinear,
    RLNetwork,
    Scale,
    TanhActionBound,
    orthogonal_init,
    td_loss,
    weighted_mse_loss,
    weighted_smooth_l1_loss,
)

__all__ = ["ActionBounds", "ActorCritic", "ActorCriticModel", "Aggregation", "PPGNetwork",
           "CategoricalDueling", "CategoricalQHead", "ConvFeatures", "Dueling", "F",
           "FEATURE_EXTRACTORS", "Flatten", "Float", "Linear0", "MLP", "MLPFeatures", "NatureCNN",
           "NatureConv", "NoisyFactorizedLinear", "RLNetwork", "ResNetFeatures", "Scale",
           "SharedActorCritic", "TanhActionBound", "actor_critic_heads", "feature_extractor",
           "linear_head", "nature_actor_critic", "nature_categorical_dqn", "nature_dqn",
           "nature_dueling_dqn", "nature_features", "orthogonal_init", "rainbow_network",
           "shared_actor_critic", "single_field", "td_loss", "weighted_mse_loss",
           "weighted_smooth_l1_loss"]
__all__ += sorted({name for name in dir(_torch_nn) if not name.startswith("_")} - set(__all__))
