"""Agents: one module per algorithm, each a policy + a trainer + a local agent."""

from looprl.agents.dqn import DQN, DQNPolicy, DQNTestAgent, DQNTrainer
from looprl.agents.independent import (
    IndependentMultiagent,
    MaskedAgent,
    RandomAgent,
    SingleStateAgent,
)
from looprl.agents.ppo import PPO, ActorCritic, PPOPolicy, PPOTestAgent, PPOTrainer

__all__ = [
    "IndependentMultiagent",
    "MaskedAgent",
    "RandomAgent",
    "SingleStateAgent",
    "DQN",
    "PPO",
    "ActorCritic",
    "DQNPolicy",
    "DQNTestAgent",
    "DQNTrainer",
    "PPOPolicy",
    "PPOTestAgent",
    "PPOTrainer",
]
