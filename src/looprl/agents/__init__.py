"""Agents: one module per algorithm, each a policy + a trainer + a local agent, and the agent
interfaces ``Agent``, ``ParallelAgent`` and ``Multiagent`` (seed 003's ``all.agents``)."""

from looprl.agents.a2c import A2CTrainer
from looprl.agents.actor import Actor
from looprl.agents.actor_critic import (
    VARIANTS,
    ActorCriticNetwork,
    ActorCriticPolicy,
    actor_critic_policy,
    variant,
)
from looprl.agents.all_agents import A2C, PPO, VAC
from looprl.agents.all_test_agents import (
    A2CTestAgent,
    C51TestAgent,
    DDPGTestAgent,
    DDQNTestAgent,
    DQNTestAgent,
    PPOTestAgent,
    RainbowTestAgent,
    SACTestAgent,
    VACTestAgent,
    VPGTestAgent,
    VQNTestAgent,
    VSarsaTestAgent,
)
from looprl.agents.c51 import C51, C51Policy, C51Trainer, Rainbow
from looprl.agents.ddpg import DDPG, ContinuousPolicy, ContinuousQ, DDPGPolicy, DDPGTrainer, TwinQ
from looprl.agents.dqn import DDQN, DQN, VQN, DQNPolicy, DQNTrainer, VSarsa, q_network_policy
from looprl.agents.independent import (
    IndependentMultiagent,
    IndependentPolicy,
    IndependentTrainer,
    MaskedAgent,
    RandomAgent,
    SingleStateAgent,
)
from looprl.agents.learner import Learner, ReplaySchedule
from looprl.agents.on_policy import OnPolicyAgent, OnPolicyTrainer
from looprl.agents.ppg import PPGTrainer
from looprl.agents.ppo import PPOTrainer
from looprl.agents.sac import SAC, SACPolicy, SACTrainer, Temperature
from looprl.agents.shell import LearningAgent, ReplayAgent, SegmentAgent
from looprl.agents.single_model import SingleModelPytorchPolicy
from looprl.agents.td3 import TD3, DelayedPolyakTarget, TD3Trainer
from looprl.agents.vac import VACTrainer
from looprl.agents.vpg import VPG
from looprl.core import Agent, Multiagent, ParallelAgent, register_policy, register_trainer

__all__ = ["Agent", "Multiagent", "ParallelAgent", "A2C", "C51", "DDQN", "PPO", "Rainbow", "VAC",
           "VQN", "VSarsa", "A2CTrainer", "Actor", "ActorCriticNetwork", "ActorCriticPolicy",
           "C51Policy", "C51Trainer", "ContinuousPolicy", "ContinuousQ", "DDPG", "DDPGPolicy",
           "DDPGTrainer", "DQN", "DQNPolicy", "DQNTrainer", "DelayedPolyakTarget",
           "IndependentMultiagent", "IndependentPolicy", "IndependentTrainer", "Learner",
           "MaskedAgent", "OnPolicyAgent", "OnPolicyTrainer", "PPGTrainer", "PPOTrainer",
           "RandomAgent", "LearningAgent", "ReplayAgent", "ReplaySchedule", "SegmentAgent", "SAC",
           "SACPolicy", "SACTrainer", "SingleStateAgent", "TD3", "TD3Trainer", "Temperature",
           "TwinQ", "VACTrainer", "VPG", "SingleModelPytorchPolicy", "actor_critic_policy",
           "q_network_policy", "A2CTestAgent", "C51TestAgent", "DDPGTestAgent", "DDQNTestAgent",
           "DQNTestAgent", "PPOTestAgent", "RainbowTestAgent", "SACTestAgent", "VACTestAgent",
           "VPGTestAgent", "VQNTestAgent", "VSarsaTestAgent"]

# Trainers and ready-made policies by name (seed 004): Trainer(type_=name, ...) and
# Policy(type_=name, args=dict(...)).
for _name, _trainer in {"ppo": PPOTrainer, "ppg": PPGTrainer, "a2c": A2CTrainer,
                        "vac": VACTrainer, "dqn": DQNTrainer}.items():
    register_trainer(_name, _trainer)
for _name in VARIANTS:
    register_policy(_name, variant(_name))
register_policy("q-network", q_network_policy)
