"""Agents: one module per algorithm, each a policy + a trainer + a local agent."""

from looprl.agents.a2c import A2C, A2CPolicy, A2CTestAgent, A2CTrainer
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
from looprl.agents.ppg import PPG, PPGNetwork, PPGPolicy, PPGTestAgent, PPGTrainer
from looprl.agents.ppo import PPO, ActorCritic, PPOPolicy, PPOTestAgent, PPOTrainer
from looprl.agents.sac import SAC, SACPolicy, SACTestAgent, SACTrainer, Temperature
from looprl.agents.td3 import TD3, DelayedPolyakTarget, TD3Policy, TD3TestAgent, TD3Trainer
from looprl.agents.vac import VAC, VACPolicy, VACTestAgent, VACTrainer
from looprl.agents.vpg import VPG, EpisodeBuffer, VPGPolicy, VPGTestAgent, VPGTrainer

__all__ = [
    "A2C",
    "A2CPolicy",
    "A2CTestAgent",
    "A2CTrainer",
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
    "EpisodeBuffer",
    "IndependentMultiagent",
    "MaskedAgent",
    "OffPolicyAgent",
    "PPG",
    "PPGNetwork",
    "PPGPolicy",
    "PPGTestAgent",
    "PPGTrainer",
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
    "VAC",
    "VACPolicy",
    "VACTestAgent",
    "VACTrainer",
    "VPG",
    "VPGPolicy",
    "VPGTestAgent",
    "VPGTrainer",
]
