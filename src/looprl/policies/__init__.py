"""Action selection: epsilon-greedy, ez-greedy, Boltzmann, softmax, Gaussian and deterministic
policies."""

from looprl.nn.layers import ActionBounds
from looprl.policies.deterministic import (
    DeterministicPolicy,
    GaussianPolicy,
    SoftDeterministicPolicy,
    SoftmaxPolicy,
    SoftmaxPolicyNetwork,
)
from looprl.policies.distributions import (
    CategoricalHead,
    GaussianActor,
    GaussianHead,
    TanhGaussianHead,
)
from looprl.policies.greedy import (
    EXPLORATION,
    MASKED_Q,
    BoltzmannPolicy,
    EZGreedyPolicy,
    GreedyPolicy,
    ParallelGreedyPolicy,
    apex_epsilons,
    epsilon_greedy,
    legal_actions,
    random_actions,
)

__all__ = [
    "EXPLORATION", "MASKED_Q", "ActionBounds", "BoltzmannPolicy", "CategoricalHead",
    "DeterministicPolicy", "EZGreedyPolicy", "GaussianActor", "GaussianHead", "GaussianPolicy",
    "GreedyPolicy", "ParallelGreedyPolicy", "SoftDeterministicPolicy", "SoftmaxPolicy",
    "SoftmaxPolicyNetwork", "TanhGaussianHead", "apex_epsilons", "epsilon_greedy", "legal_actions",
    "random_actions",
]
