"""Agents: one module per algorithm, each a policy + a trainer + a local agent."""

from looprl.agents.dqn import DQN, DQNPolicy, DQNTestAgent, DQNTrainer
from looprl.agents.ppo import PPO, ActorCritic, PPOPolicy, PPOTestAgent, PPOTrainer

__all__ = [
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
