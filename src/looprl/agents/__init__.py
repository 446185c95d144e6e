"""Agents: one module per algorithm, each a policy + a trainer + a local agent."""

from looprl.agents.a2c import A2C, A2CPolicy, A2CTestAgent, A2CTrainer
from looprl.agents.c51 import C51Policy, C51Trainer
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
from looprl.agents.dqn import DQN, DQNPolicy, DQNTestAgent, DQNTrainer, q_network_policy
from looprl.agents.independent import (
    IndependentMultiagent,
    MaskedAgent,
    RandomAgent,
    SingleStateAgent,
)
from looprl.agents.ppg import PPG, PPGNetwork, PPGPolicy, PPGTestAgent, PPGTrainer
from looprl.agents.ppo import PPO, ActorCritic, PPOPolicy, PPOTestAgent, PPOTrainer
from looprl.agents.rainbow import rainbow_policy_and_trainer
from looprl.agents.replay import ReplayAgent
from looprl.agents.sac import SAC, SACPolicy, SACTestAgent, SACTrainer, Temperature
from looprl.agents.td3 import TD3, DelayedPolyakTarget, TD3Policy, TD3TestAgent, TD3Trainer
from looprl.agents.vac import VAC, VACPolicy, VACTestAgent, VACTrainer
from looprl.agents.vpg import VPG, EpisodeBuffer, VPGPolicy, VPGTestAgent, VPGTrainer
from looprl.agents.vqn import VQN, OnlineAgent
from looprl.agents.vsarsa import VSarsa
from looprl.core import register_policy, register_trainer

__all__ = [
    "A2C",
    "A2CPolicy",
    "A2CTestAgent",
    "A2CTrainer",
    "ActorCritic",
    "C51Policy",
    "C51Trainer",
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
    "OnlineAgent",
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
    "ReplayAgent",
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
    "VQN",
    "VSarsa",
    "q_network_policy",
    "rainbow_policy_and_trainer",
]

# SRL trainers and ready-made policies (seed 004): Trainer(type_=name, ...) and
# Policy(type_=name, args=dict(...)) import them on first use.
register_trainer("ppo", "looprl.agents.srl_trainers:SRLPPOTrainer")
register_trainer("ppg", "looprl.agents.srl_trainers:SRLPPGTrainer")
register_trainer("dqn", "looprl.agents.dqn:DQNTrainer")
_AC = "looprl.agents.actor_critic:"
register_policy("actor-critic", _AC + "ActorCriticPolicy")
register_policy("actor-critic-separate", _AC + "SeparateActorCriticPolicy")
register_policy("actor-critic-shared", _AC + "SharedActorCriticPolicy")
register_policy("actor-critic-auxiliary", _AC + "AuxiliaryActorCriticPolicy")
register_policy(
    "actor-critic-separate-continuous-action", _AC + "SeparateContinuousActorCriticPolicy"
)
register_policy("actor-critic-shared-continuous-action", _AC + "SharedContinuousActorCriticPolicy")
register_policy("q-network", "looprl.agents.dqn:q_network_policy")
