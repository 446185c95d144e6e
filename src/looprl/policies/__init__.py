"""Action selection: epsilon-greedy and softmax policies."""

from looprl.policies.deterministic import DeterministicPolicy, SoftDeterministicPolicy
from looprl.policies.distributions import (
    ActionBounds,
    CategoricalHead,
    GaussianActor,
    GaussianHead,
    TanhGaussianHead,
)
from looprl.policies.greedy import GreedyPolicy, ParallelGreedyPolicy
from looprl.policies.softmax import SoftmaxPolicy, SoftmaxPolicyNetwork

__all__ = [
    "ActionBounds",
    "CategoricalHead",
    "DeterministicPolicy",
    "GaussianActor",
    "GaussianHead",
    "GreedyPolicy",
    "ParallelGreedyPolicy",
    "SoftDeterministicPolicy",
    "SoftmaxPolicy",
    "SoftmaxPolicyNetwork",
    "TanhGaussianHead",
]
