"""Action selection: epsilon-greedy, ez-greedy, Boltzmann, softmax, Gaussian and deterministic
policies."""

from looprl.policies.deterministic import DeterministicPolicy, SoftDeterministicPolicy
from looprl.policies.distributions import (
    ActionBounds,
    CategoricalHead,
    GaussianActor,
    GaussianHead,
    TanhGaussianHead,
)
from looprl.policies.exploration import EXPLORATION, BoltzmannPolicy, EZGreedyPolicy
from looprl.policies.greedy import GreedyPolicy, ParallelGreedyPolicy, apex_epsilons
from looprl.policies.softmax import SoftmaxPolicy, SoftmaxPolicyNetwork

__all__ = [
    "EXPLORATION",
    "ActionBounds",
    "BoltzmannPolicy",
    "CategoricalHead",
    "DeterministicPolicy",
    "EZGreedyPolicy",
    "GaussianActor",
    "GaussianHead",
    "GreedyPolicy",
    "ParallelGreedyPolicy",
    "SoftDeterministicPolicy",
    "SoftmaxPolicy",
    "SoftmaxPolicyNetwork",
    "TanhGaussianHead",
    "apex_epsilons",
]
