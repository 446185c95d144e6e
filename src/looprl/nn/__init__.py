"""Layers and models: ``MLP``, ``RLNetwork``, ``Dueling``, ``Flatten``, ``Linear0``; feature
extractors by spec (``feature_extractor``: MLP, CNN, ResNet, combinations)."""

from looprl.nn.actor_critic import (
    ActorCritic,
    ActorCriticModel,
    PPGNetwork,
    SharedActorCritic,
    single_field,
)
from looprl.nn.cnn import (
    nature_actor_critic,
    nature_categorical_dqn,
    nature_dqn,
    nature_dueling_dqn,
    nature_features,
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
from looprl.nn.layers import Dueling, Flatten, Linear0, orthogonal_init
from looprl.nn.models import MLP, RLNetwork
from looprl.nn.noisy import NoisyFactorizedLinear

__all__ = ["ActorCritic", "ActorCriticModel", "PPGNetwork", "CategoricalDueling",
           "CategoricalQHead", "ConvFeatures", "Dueling", "FEATURE_EXTRACTORS", "Flatten",
           "Linear0", "MLP", "MLPFeatures", "NatureCNN", "NatureConv", "NoisyFactorizedLinear",
           "RLNetwork", "ResNetFeatures", "SharedActorCritic", "feature_extractor",
           "nature_actor_critic", "nature_categorical_dqn", "nature_dqn", "nature_dueling_dqn",
           "nature_features", "orthogonal_init", "single_field"]
