"""``OnPolicyPreset``: the base of PPO, PPG, A2C and VAC (and VPG's parts) for every runtime:
an ``ActorCriticPolicy``, the algorithm's trainer and ``n_envs`` x ``n_steps`` segments."""

from __future__ import annotations

import copy
import math
from abc import abstractmethod
from typing import Any

import torch
from torch import nn, optim

from looprl.agents.actor import Actor
from looprl.agents.actor_critic import ActorCriticPolicy
from looprl.agents.on_policy import OnPolicyAgent
from looprl.approximation import Approximation
from looprl.core import ParallelPreset
from looprl.core.preset import check_train_steps
from looprl.core.ranges import check_ranges
from looprl.presets.common import FamilyPreset, cap_minibatch, check_memory, policy_network

__all__ = ["EVALUATION", "ActorCriticPreset", "OnPolicyAgentPreset", "OnPolicyPreset"]

#: Every actor-critic preset's evaluation hyperparameter: ``True``, its test agent takes the
#: policy's mode (SRL's ``is_evaluation``); ``False``, it samples its actions as ALL's test
#: agents do (the Atari presets' default: a Breakout agent whose mode never presses FIRE after
#: a lost life would wait out the 27,000-step cap), on every runtime.
EVALUATION: dict[str, Any] = {"deterministic_test": True}


class ActorCriticPreset(FamilyPreset):
    """A preset whose policy is an ``ActorCriticPolicy`` over ``_build(env)``'s network and
    action head, with ``_optimizer`` (Adam at ``lr`` by default)."""

    algorithm = "actor-critic"

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)
        model, self.head = self._build(env)
        self.model = model.to(device)

    @abstractmethod
    def _build(self, env: Any) -> tuple[nn.Module, Any]:
        """The network (an ``looprl.nn.ActorCriticModel``) and the action head for ``env``."""

    def _optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        hp = self.hyperparameters
        return optim.Adam(model.parameters(), lr=hp["lr"], eps=hp["eps"], fused=True)

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False,
               optimizer: bool = True) -> ActorCriticPolicy:
        """An ``ActorCriticPolicy`` (see ``FamilyPreset.policy``)."""
        model = policy_network(self, device, copy_model)
        device = torch.device(device if device is not None else self.device)
        clip = self.hyperparameters.get("clip_grad") or 0.0
        approximation = Approximation(model, self._optimizer(model) if optimizer else None,
                                      clip_grad=clip,
                                      device=device, name=self.algorithm.lower(), logger=logger)
        return ActorCriticPolicy(approximation, self.head, sample_evaluation=self._sampled_test)

    def test_agent(self) -> Actor:
        """An evaluation ``Actor`` over a copy of the current parameters: it takes the policy's
        mode, or samples its actions (ALL's test agents) with ``deterministic_test=False``."""
        return Actor(ActorCriticPolicy(Approximation(copy.deepcopy(self.model)), self.head,
                                       sample_evaluation=self._sampled_test), evaluation=True)

    @property
    def _sampled_test(self) -> bool:
        return not self.hyperparameters.get("deterministic_test", False)


class OnPolicyAgentPreset(FamilyPreset, ParallelPreset):
    """A parallel preset whose local agent is an ``OnPolicyAgent`` over ``n_envs``
    environments and ``n_steps`` segments (also VQN and VSarsa)."""

    def agent(self, logger: Any = None, train_steps: float = math.inf) -> Any:
        check_train_steps(train_steps, self.name)
        policy = self.policy(logger)
        agent = OnPolicyAgent(policy, self.trainer(policy, train_steps),
                              n_envs=self.n_envs, n_steps=self.n_steps, logger=logger)
        return self._wrap(agent)

    def updates(self, train_steps: float) -> float:
        """Trainer steps in ``train_steps`` env steps (one per ``n_envs * n_steps``)."""
        return train_steps / (self.n_envs * self.n_steps)

    def learning(self, train_steps: float, actors: int = 1, trainers: int = 1
                 ) -> dict[str, Any]:
        """On-policy: each trainer step takes ``n_envs`` fresh segments of ``n_steps`` rows."""
        return {"buffer": "on_policy", "buffer_args": {"batch_streams": self.n_envs},
                "segment_length": self.n_steps}

    def parallel_test_agent(self) -> Any:
        return self.test_agent()


class OnPolicyPreset(ActorCriticPreset, OnPolicyAgentPreset):
    """Base of the parallel on-policy presets (``n_steps`` defaults to 1)."""

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        check_ranges(hyperparameters, name)  # (before the sizes below are used)
        n_envs, n_steps = int(hyperparameters["n_envs"]), int(hyperparameters.get("n_steps", 1))
        rows = n_envs * n_steps
        check_memory(name, n_envs * (n_steps + 1), "n_envs x (n_steps + 1)", env,
                     "lower n_steps or n_envs")
        hyperparameters = cap_minibatch(name, hyperparameters, rows, f"the {rows} rows of each "
                                        "update (n_envs x n_steps)", "raise n_envs or n_steps")
        super().__init__(env, name, device, hyperparameters)
        self.n_steps = n_steps

