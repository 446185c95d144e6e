"""Action selection: epsilon-greedy and softmax policies."""

from looprl.policies.greedy import GreedyPolicy, ParallelGreedyPolicy
from looprl.policies.softmax import SoftmaxPolicy, SoftmaxPolicyNetwork

__all__ = ["GreedyPolicy", "ParallelGreedyPolicy", "SoftmaxPolicy", "SoftmaxPolicyNetwork"]
