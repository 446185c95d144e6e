"""Layers and models: ``MLP``, ``RLNetwork``, ``Dueling``, ``Flatten``, ``Linear0``."""

from looprl.nn.layers import Dueling, Flatten, Linear0, orthogonal_init
from looprl.nn.models import MLP, RLNetwork

__all__ = ["MLP", "Dueling", "Flatten", "Linear0", "RLNetwork", "orthogonal_init"]
