"""Agents: one module per algorithm, each a policy + a trainer + a local agent."""

from looprl.agents.ddpg import (
    DDPG,
    ContinuousPolicy,
    ContinuousQ,
    ContinuousTestAgent,
    DDPGPolicy,
    DDPGTestAgent,
    DDPGTrainer,
    OffPolicyAgent,
    TwinQ,
)
from looprl.agents.dqn import DQN, DQNPolicy, DQNTestAgent, DQNTrainer
from looprl.agents.independent import (
    IndependentMultiagent,
    MaskedAgent,
    RandomAgent,
    SingleStateAgent,
)
from looprl.agents.ppo import PPO, ActorCritic, PPOPolicy, PPOTestAgent, PPOTrainer
from looprl.agents.sac import SAC, SACPolicy, SACTestAgent, SACTrainer, Temperature
from looprl.agents.td3 import TD3, DelayedPolyakTarget, TD3Policy, TD3TestAgent, TD3Trainer

__all__ = [
    "ActorCritic",
    "ContinuousPolicy",
    "ContinuousQ",
    "ContinuousTestAgent",
    "DDPG",
    "DDPGPolicy",
    "DDPGTestAgent",
    "DDPGTrainer",
    "DQN",
    "DQNPolicy",
    "DQNTestAgent",
    "DQNTrainer",
    "DelayedPolyakTarget",
    "IndependentMultiagent",
    "MaskedAgent",
    "OffPolicyAgent",
    "PPO",
    "PPOPolicy",
    "PPOTestAgent",
    "PPOTrainer",
    "RandomAgent",
    "SAC",
    "SACPolicy",
    "SACTestAgent",
    "SACTrainer",
    "SingleStateAgent",
    "TD3",
    "TD3Policy",
    "TD3TestAgent",
    "TD3Trainer",
    "Temperature",
    "TwinQ",
]
