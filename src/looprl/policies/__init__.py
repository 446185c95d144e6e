"""Action selection: epsilon-greedy, ez-greedy, Boltzmann, softmax, Gaussian and deterministic
policies."""

from looprl.nn.layers import ActionBounds
from looprl.policies.deterministic import DeterministicPolicy, SoftDeterministicPolicy
from looprl.policies.distributions import (
    CategoricalHead,
    GaussianActor,
    GaussianHead,
    TanhGaussianHead,
)
from looprl.policies.exploration import EXPLORATION, BoltzmannPolicy, EZGreedyPolicy
from looprl.policies.gaussian import GaussianPolicy
from looprl.policies.greedy import (
    MASKED_Q,
    GreedyPolicy,
    ParallelGreedyPolicy,
    apex_epsilons,
    epsilon_greedy,
    legal_actions,
    random_actions,
)
from looprl.policies.softmax import SoftmaxPolicy, SoftmaxPolicyNetwork

__all__ = [
    "EXPLORATION", "MASKED_Q", "ActionBounds", "BoltzmannPolicy", "CategoricalHead",
    "DeterministicPolicy", "EZGreedyPolicy", "GaussianActor", "GaussianHead", "GaussianPolicy",
    "GreedyPolicy", "ParallelGreedyPolicy", "SoftDeterministicPolicy", "SoftmaxPolicy",
    "SoftmaxPolicyNetwork", "TanhGaussianHead", "apex_epsilons", "epsilon_greedy", "legal_actions",
    "random_actions",
]
