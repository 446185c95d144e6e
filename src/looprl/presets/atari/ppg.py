"""Phasic Policy Gradient (PPG) preset for Atari (Cobbe et al., 2021,
https://arxiv.org/abs/2009.04416).

The policy phase is ``atari.ppo``'s (8 environments x 128 steps, 4 epochs of 4 minibatches,
Adam at 2.5e-4 and clip range 0.1 both annealed linearly to 0, entropy bonus 0.01); the
paper's auxiliary phase follows every ``n_policy`` iterations: 6 epochs of distilling the
value targets into the policy network's auxiliary head, behaviour cloning weight 1. The
policy network is a Nature CNN with policy and auxiliary value heads, the value network a
second Nature CNN (``nn.atari_models.nature_value``).

The auxiliary phase keeps every state of the phase as uint8 frames (28 KB each: about
0.9 GB for the 32 x 1,024 states of a phase) and runs over them in minibatches of
``aux_minibatch_size``, so its activation memory does not grow with ``n_policy``.
"""

from __future__ import annotations

import math
from typing import Any

from torch import nn, optim

from looprl.agents.ppg import PPG, PPGNetwork, PPGPolicy, PPGTestAgent, PPGTrainer
from looprl.approximation import Approximation, LinearLR
from looprl.core import DummyLogger, ParallelPreset
from looprl.environments.bodies import deepmind_atari_body
from looprl.nn.atari_models import nature_value
from looprl.nn.cnn import nature_features
from looprl.nn.layers import orthogonal_init
from looprl.policies.distributions import CategoricalHead
from looprl.presets.atari.common import require_frames
from looprl.presets.builder import PresetBuilder
from looprl.presets.classic_control.ppo import linear
from looprl.presets.common import ActorCriticTestAgents, require_discrete_actions, require_positive

default_hyperparameters: dict[str, Any] = {
    "discount_factor": 0.99,
    "lam": 0.95,
    "lr": 2.5e-4,
    "linear_lr": True,
    "eps": 1e-5,
    "n_envs": 8,
    "n_steps": 128,
    "epochs": 4,
    "minibatch_size": 256,
    "clip": 0.1,
    "linear_clip": True,
    "value_coef": 0.5,
    "entropy_coef": 0.01,
    "value_clip": None,
    "clip_grad": 0.5,
    "n_policy": 32,
    "aux_epochs": 6,
    "beta_clone": 1.0,
    "aux_minibatch_size": 256,
    "episodic_life": True,
    "clip_rewards": True,
    "features": "nature",
}


def nature_ppg(num_actions: int, frames: int = 4, features: str = "nature") -> PPGNetwork:
    """A Nature CNN trunk with policy (gain 0.01) and auxiliary value (gain 1) heads, and a
    separate Nature value network."""
    trunk = nature_features(features, frames)
    policy_head = orthogonal_init(nn.Linear(trunk.out_features, num_actions), 0.01)
    aux_head = orthogonal_init(nn.Linear(trunk.out_features, 1), 1.0)
    return PPGNetwork(trunk, policy_head, aux_head, nature_value(frames, features))


class PPGAtariPreset(ActorCriticTestAgents, ParallelPreset):
    """Builds PPG agents over ``n_envs`` Atari environments (see the module docstring)."""

    policy_class = PPGPolicy
    test_agent_class = PPGTestAgent

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        require_positive(
            hyperparameters, "lr", "n_envs", "n_steps", "epochs", "minibatch_size",
            "n_policy", "aux_epochs", "aux_minibatch_size",
        )
        self.n_envs = hyperparameters["n_envs"]
        num_actions = require_discrete_actions(env, "PPG")
        frames = require_frames(env, "PPG")
        self.model = nature_ppg(num_actions, frames, hyperparameters["features"]).to(device)
        self.head = CategoricalHead(num_actions)

    def _optimizer_steps(self, updates: float) -> int:
        """Optimizer steps of ``updates`` PPO iterations and their auxiliary phases."""
        hp = self.hyperparameters
        rollout = hp["n_envs"] * hp["n_steps"]
        policy = hp["epochs"] * math.ceil(rollout / hp["minibatch_size"])
        aux_minibatches = math.ceil(rollout * hp["n_policy"] / hp["aux_minibatch_size"])
        aux = hp["aux_epochs"] * aux_minibatches / hp["n_policy"]
        return max(int(updates * (policy + aux)), 1)

    def _policy(self, logger: Any, updates: float) -> PPGPolicy:
        hp = self.hyperparameters
        optimizer = optim.Adam(self.model.parameters(), lr=hp["lr"], eps=hp["eps"], fused=True)
        scheduler = None
        if hp["linear_lr"] and math.isfinite(updates):
            scheduler = LinearLR(optimizer, self._optimizer_steps(updates))
        approximation = Approximation(
            self.model, optimizer, clip_grad=hp["clip_grad"], lr_scheduler=scheduler,
            name="ppg", logger=logger,
        )
        return PPGPolicy(approximation, self.head)

    def agent(self, logger: Any = None, train_steps: float = float("inf")) -> Any:
        hp = self.hyperparameters
        logger = logger or DummyLogger()
        updates = train_steps / (hp["n_envs"] * hp["n_steps"])
        policy = self._policy(logger, updates)
        clip = linear(hp["clip"]) if hp["linear_clip"] and math.isfinite(updates) else hp["clip"]
        trainer = PPGTrainer(
            policy,
            n_policy=hp["n_policy"],
            aux_epochs=hp["aux_epochs"],
            beta_clone=hp["beta_clone"],
            aux_minibatch_size=hp["aux_minibatch_size"],
            epochs=hp["epochs"],
            minibatch_size=hp["minibatch_size"],
            clip=clip,
            value_coef=hp["value_coef"],
            entropy_coef=hp["entropy_coef"],
            value_clip=hp["value_clip"],
            total_updates=updates,
        )
        agent = PPG(
            policy, trainer, n_envs=hp["n_envs"], n_steps=hp["n_steps"],
            discount_factor=hp["discount_factor"], lam=hp["lam"], logger=logger,
        )
        return deepmind_atari_body(agent, hp["episodic_life"], hp["clip_rewards"])


ppg = PresetBuilder("ppg", default_hyperparameters, PPGAtariPreset)
