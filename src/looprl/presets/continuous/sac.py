"""SAC preset for continuous control, with automatic entropy tuning (Pendulum-v1 above -400
within 15,000 steps)."""

from __future__ import annotations

import copy
import math
from typing import Any

from looprl.agents.actor import Actor
from looprl.agents.sac import SAC, SACPolicy, SACTrainer, Temperature
from looprl.approximation import Approximation
from looprl.core import DummyLogger
from looprl.policies.deterministic import SoftDeterministicActor, SoftDeterministicPolicy
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import derived, policy_network
from looprl.presets.constructors import DDPG_MODELS, SAC_MODELS, LogVarianceToLogStd, unset
from looprl.presets.continuous.ddpg import OffPolicyContinuousPreset, adam, mlp
from looprl.presets.continuous.ddpg import default_hyperparameters as ddpg_defaults

default_hyperparameters: dict[str, Any] = derived(
    ddpg_defaults, drop=("noise", *DDPG_MODELS), lr_temperature=1e-3, alpha=1.0,
    entropy_tuning=True, target_entropy=None, exploration="stochastic", buffer="uniform",
    update="sac", **unset(SAC_MODELS),
)


class SACContinuousPreset(OffPolicyContinuousPreset):
    """Builds SAC agents: a tanh-Gaussian actor and twin critics, all 2 x ``hidden``
    (``target_entropy=None``: ``-|A|``; ``entropy_tuning=False`` keeps ``alpha`` fixed)."""

    algorithm = "SAC"
    agent_class = SAC
    twin = True
    models = SAC_MODELS
    parts = {"exploration": ("stochastic",), "buffer": ("uniform",), "update": ("sac",)}

    def __init__(self, env: Any, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(env, name, device, hyperparameters)
        self.temperature = Temperature(hyperparameters["alpha"]).to(device)

    def _actor(self) -> SoftDeterministicActor:
        actor = mlp(self.obs_dim, 2 * self.action_dim, self.hyperparameters["hidden"])
        return SoftDeterministicActor(actor, self.action_space)

    def q_names(self) -> list[str]:
        return ["q1_model_constructor", "q2_model_constructor"]

    def _custom_actor(self, built: dict[str, Any], env: Any) -> SoftDeterministicActor:
        """ALL's ``policy_model_constructor(env)``: ``cat(mean, log variance)``, its log
        variance halved into the actor's log std."""
        model = self._policy_model(built, env, 2 * self.action_dim, "cat(mean, log variance)")
        return SoftDeterministicActor(LogVarianceToLogStd(model), self.action_space)

    def idle(self) -> dict[str, str]:
        """``FamilyPreset.idle``; the temperature's tuning settings, where ``alpha`` stays
        fixed."""
        tuned = self.hyperparameters["entropy_tuning"]
        return {**super().idle(), **dict.fromkeys(
            () if tuned else ("lr_temperature", "target_entropy"), "entropy_tuning=True")}

    @property
    def target_entropy(self) -> float:
        target = self.hyperparameters["target_entropy"]
        return -float(self.action_dim) if target is None else float(target)

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False,
               optimizer: bool = True) -> SACPolicy:
        hp = self.hyperparameters
        actor = policy_network(self, device, copy_model, self.actor)
        approximation = SoftDeterministicPolicy(actor, adam(actor, hp["lr_actor"], optimizer),
                                                name="actor", logger=logger or DummyLogger())
        return SACPolicy(approximation, hp["replay_start_size"])

    def trainer(self, policy: SACPolicy, train_steps: float = math.inf) -> SACTrainer:
        hp = self.hyperparameters
        temperature = self._own(policy, self.temperature)
        optimizer = adam(temperature, hp["lr_temperature"]) if hp["entropy_tuning"] else None
        temperature = Approximation(temperature, optimizer, name="temperature",
                                    logger=policy.actor.logger)
        return SACTrainer(policy, self._q(policy), temperature, hp["discount_factor"],
                          target_entropy=self.target_entropy)

    def test_agent(self) -> Actor:
        """An evaluation ``Actor`` over a copy of the actor (``center + scale * tanh(mean)``)."""
        return Actor(SACPolicy(SoftDeterministicPolicy(copy.deepcopy(self.actor))),
                     evaluation=True)


sac = PresetBuilder("sac", default_hyperparameters, SACContinuousPreset)
