"""Layers and models: ``MLP``, ``RLNetwork``, ``Dueling``, ``Flatten``, ``Linear0``."""

from looprl.nn.cnn import (
    FEATURE_EXTRACTORS,
    NatureCNN,
    NatureConv,
    SharedActorCritic,
    nature_actor_critic,
    nature_categorical_dqn,
    nature_dqn,
    nature_dueling_dqn,
    nature_features,
)
from looprl.nn.distributional import CategoricalDueling, CategoricalQHead
from looprl.nn.layers import Dueling, Flatten, Linear0, orthogonal_init
from looprl.nn.models import MLP, RLNetwork
from looprl.nn.noisy import NoisyFactorizedLinear

__all__ = [
    "CategoricalDueling",
    "CategoricalQHead",
    "Dueling",
    "FEATURE_EXTRACTORS",
    "Flatten",
    "Linear0",
    "MLP",
    "NatureCNN",
    "NatureConv",
    "NoisyFactorizedLinear",
    "RLNetwork",
    "SharedActorCritic",
    "nature_actor_critic",
    "nature_categorical_dqn",
    "nature_dqn",
    "nature_dueling_dqn",
    "nature_features",
    "orthogonal_init",
]
