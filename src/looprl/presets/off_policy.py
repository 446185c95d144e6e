"""``ReplayPreset``: the base of the replay presets (DQN, DDQN, C51, Rainbow through
``QPreset``; DDPG, TD3, SAC) for every runtime: ``policy``, ``trainer``, the replay and its
update schedule, which the local ``agent`` composes and Ray's trainer worker keeps
(``learning``). Ape-X (Horgan et al., 2018) is the DQN presets' ``apex`` option."""

from __future__ import annotations

import copy
import math
from abc import abstractmethod
from typing import Any

from torch import nn, optim

from looprl.agents.actor import Actor
from looprl.agents.c51 import C51Policy, C51Trainer
from looprl.agents.dqn import DQN, DQNPolicy, DQNTrainer
from looprl.agents.learner import ReplaySchedule
from looprl.approximation import FixedTarget, QDist, QNetwork
from looprl.approximation.q_dist import check_support
from looprl.core import Agent, DummyLogger, Trainer
from looprl.core.preset import check_train_steps
from looprl.memory import ExperienceReplayBuffer, PrioritizedReplayBuffer
from looprl.policies import apex_epsilons
from looprl.presets.common import (
    FamilyPreset,
    cap_minibatch,
    check_memory,
    policy_network,
    require_discrete_actions,
    value_bytes,
)
from looprl.presets.constructors import call_constructor, run_checked, space_sample
from looprl.presets.parts import beta_schedule, epsilon_schedule, replay_updates

__all__ = ["QNetworkPreset", "QPreset", "ReplayPreset"]


class ReplayPreset(FamilyPreset):
    """Base of the replay presets: subclasses give ``policy`` and ``trainer``, and may change
    the replay (``prioritized``, ``n_step``) and the local agent (``agent_class``)."""

    #: the local agent (a ``ReplayAgent``)
    agent_class: type = DQN
    #: the local agent's uniform and prioritized replay buffer classes
    replays: tuple[type, type] = (ExperienceReplayBuffer, PrioritizedReplayBuffer)
    #: of the trainer worker's replay kind (``"atari_"``: the Atari frame ring)
    remote_prefix = ""

    def __init__(self, name: str, device: Any, hyperparameters: dict[str, Any]):
        super().__init__(name, device, hyperparameters)  # (checks the values as given)
        size = hyperparameters["replay_buffer_size"]
        self.hyperparameters = cap_minibatch(name, hyperparameters, size, "the replay it is "
                                             f"sampled from (replay_buffer_size={size})",
                                             "raise replay_buffer_size")

    @property
    def replay_device(self) -> Any:
        """Where the replay stores its transitions: the preset's device."""
        return self.device

    def window_bytes(self, env: Any) -> int:
        """The least bytes one sampled transition of ``env`` takes: its window's
        ``n_step + 1`` rows of observation, action, float32 reward, done and truncated."""
        return (self.n_step + 1) * (value_bytes(env.observation_space)
                                    + value_bytes(env.action_space) + 6)

    def replay_bytes(self, env: Any) -> int:
        """The least bytes one transition of ``env`` takes in the replay (a window)."""
        return self.window_bytes(env)

    def check_replay_memory(self, env: Any) -> None:
        """A one-line ``ValueError`` when ``replay_buffer_size`` transitions of ``env`` (the
        replay allocates them at its first write, steps into a run) or a minibatch of
        ``minibatch_size`` would not fit in memory."""
        hp = self.hyperparameters
        for key, row_bytes in (("replay_buffer_size", self.replay_bytes(env)),
                               ("minibatch_size", self.window_bytes(env))):
            check_memory(self.name, int(hp[key]), key, env, f"lower {key}", row_bytes,
                         self.replay_device)

    @property
    def apex(self) -> bool:
        """Ape-X exploration on Ray: one rate per actor (``apex_epsilons``)."""
        return bool(self.hyperparameters.get("apex", False))

    @property
    def prioritized(self) -> bool:
        """Prioritized replay (else uniform)."""
        return bool(self.hyperparameters.get("prioritized", False))

    @property
    def n_step(self) -> int:
        """Steps per replayed window (``n_steps``; 1 without it)."""
        return int(self.hyperparameters.get("n_steps", 1))

    def _replay_args(self, train_steps: float) -> dict[str, Any]:
        """The replay's ``n_step`` and, prioritized, ``alpha`` and ``beta_schedule``."""
        hp = self.hyperparameters
        if not self.prioritized:
            return {"n_step": self.n_step}
        return {"n_step": self.n_step, "alpha": hp["alpha"], "beta": beta_schedule(hp, train_steps)}

    def replay_buffer(self, train_steps: float = math.inf) -> Any:
        """The local agent's replay buffer (of ``replays``)."""
        return self.replays[self.prioritized](self.hyperparameters["replay_buffer_size"],
                                              device=self.device, **self._replay_args(train_steps))

    def learning(self, train_steps: float, actors: int = 1, trainers: int = 1
                 ) -> dict[str, Any]:
        """The trainer worker keeps the local agent's replay, with its schedule."""
        hp = self.hyperparameters
        args = {"size": hp["replay_buffer_size"], "batch": hp["minibatch_size"],
                "min_size": hp["replay_start_size"], "update_frequency": hp["update_frequency"],
                "gradient_steps": hp["gradient_steps"], **self._replay_args(train_steps)}
        kind = "prioritized" if self.prioritized else "uniform"
        schedule = ReplaySchedule(update_frequency=hp["update_frequency"])
        return {"buffer": self.remote_prefix + kind, "buffer_args": args,
                "explorations": apex_epsilons(actors) if self.apex else None,
                "segment_length": schedule.segment_length}  # (the local agent's)

    def agent(self, logger: Any = None, train_steps: float = math.inf) -> Agent:
        check_train_steps(train_steps, self.name)
        hp = self.hyperparameters
        policy = self.policy(logger)
        schedule = {key: hp[key] for key in ("minibatch_size", "replay_start_size",
                                             "update_frequency", "gradient_steps")}
        return self._wrap(self.agent_class(policy, self.trainer(policy, train_steps),
                                           self.replay_buffer(train_steps), logger=logger,
                                           **schedule))


class QNetworkPreset(FamilyPreset):
    """The Q-network of the DQN family, with replay (``QPreset``) or online (VQN): a
    ``QNetwork`` (``QDist`` when ``distributional``) over ``_build``'s network, or the one ALL's
    ``model_constructor`` builds (``model_constructor(env, **model_arguments)``), with Adam and
    a target copied every ``target_update_frequency`` updates (0: none)."""

    algorithm = "DQN"
    #: the hyperparameters ALL's preset passes to its ``model_constructor`` as keywords
    model_arguments: tuple[str, ...] = ()

    def __init__(self, env: Any, name: str, device: Any, hp: dict[str, Any]):
        super().__init__(name, device, hp)
        if "v_min" in hp and self.distributional:  # (QDist's check, before its first agent)
            check_support(hp["v_min"], hp["v_max"], hp["atoms"])
        self.num_actions = require_discrete_actions(env, self.algorithm)
        constructed = self._constructed(env)
        self.model = (self._build(env) if constructed is None else constructed).to(device)

    def _constructed(self, env: Any) -> nn.Module | None:
        """The network ``model_constructor`` builds, checked to return one Q-value per action
        (logits or probabilities of the atoms of each, ``distributional``); ``None`` without
        one."""
        value = self.hyperparameters.get("model_constructor")
        if value is None:
            return None
        arguments = {key: self.hyperparameters[key] for key in self.model_arguments}
        model = call_constructor(self.name, "model_constructor", value, env, **arguments)
        shapes = [(1, self.num_actions)]
        if self.distributional:
            atoms = self.hyperparameters["atoms"]
            shapes = [(1, self.num_actions * atoms), (1, self.num_actions, atoms)]
        run_checked(self.name, "model_constructor", value, model,
                    [space_sample(env.observation_space)], shapes)
        return model

    @abstractmethod
    def _build(self, env: Any) -> nn.Module:
        """The network for ``env``."""

    @property
    def distributional(self) -> bool:
        """A return distribution (C51): presets with ``atoms``, unless ``distributional`` is
        off."""
        hp = self.hyperparameters
        return "atoms" in hp and bool(hp.get("distributional", True))

    def _q(self, model: nn.Module, **kwargs: Any) -> QNetwork | QDist:
        hp = self.hyperparameters
        if not self.distributional:
            return QNetwork(model, **kwargs)
        return QDist(model, num_actions=self.num_actions, num_atoms=hp["atoms"],
                     v_min=hp["v_min"], v_max=hp["v_max"], **kwargs)

    def _q_policy(self, q: Any, epsilon: Any = 0.0) -> DQNPolicy:
        """A ``C51Policy`` or ``DQNPolicy`` over ``q``, exploring at ``epsilon`` and evaluating
        at ``test_exploration``."""
        return (C51Policy if self.distributional else DQNPolicy)(
            q, self.num_actions, epsilon,
            evaluation_epsilon=self.hyperparameters.get("test_exploration", 0.0))

    def _policy(self, q: Any) -> DQNPolicy:
        """The exploring policy over ``q`` (``epsilon_schedule``)."""
        return self._q_policy(q, epsilon_schedule(self.hyperparameters))

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False,
               optimizer: bool = True) -> DQNPolicy:
        """The exploring policy over the Q-network (a copy with ``copy_model``) on ``device``."""
        hp = self.hyperparameters
        model = policy_network(self, device, copy_model)
        adam = optim.Adam(model.parameters(), lr=hp["lr"], eps=hp.get("eps", 1e-8),
                          fused=True) if optimizer else None
        period = hp["target_update_frequency"]
        return self._policy(self._q(model, optimizer=adam, clip_grad=hp["clip_grad"],
                                    target=FixedTarget(period) if period else None,
                                    logger=logger or DummyLogger()))

    def test_agent(self) -> Actor:
        """An evaluation ``Actor`` over a copy of the current parameters."""
        return Actor(self._q_policy(self._q(copy.deepcopy(self.model))), evaluation=True)


class QPreset(QNetworkPreset, ReplayPreset):
    """Base of the DQN family's replay presets: a ``QNetworkPreset`` with a ``C51Trainer``
    (``distributional``) or ``DQNTrainer``."""

    #: the choice that turns prioritized replay on (``idle``)
    prioritized_part = "prioritized=True"

    def __init__(self, env: Any, name: str, device: Any, hp: dict[str, Any]):
        super().__init__(env, name, device, hp)
        self.check_replay_memory(env)

    def idle(self) -> dict[str, str]:
        """The hyperparameters the chosen parts leave unused -> the part they need (Rainbow's
        switches off: ``sigma`` without noisy nets, the atoms without a distribution)."""
        hp = self.hyperparameters
        idle = super().idle()
        if not self.prioritized:
            idle.update(dict.fromkeys(("alpha", "beta"), self.prioritized_part))
        if hp.get("noisy") is False:
            idle["sigma"] = "noisy=True"
        if "atoms" in hp and not self.distributional:
            idle.update(dict.fromkeys(("atoms", "v_min", "v_max"), "distributional=True"))
        return idle

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False,
               optimizer: bool = True) -> DQNPolicy:
        """``QNetworkPreset.policy``, its epsilon schedule counting env steps (each of a Ray
        actor's env copies' rows one, as the local agent's one environment counts them)."""
        policy = super().policy(logger, device, copy_model, optimizer)
        policy.epsilon_per_row = True
        return policy

    @property
    def double(self) -> bool:
        """Double-Q bootstrap (the ``double`` hyperparameter)."""
        return bool(self.hyperparameters.get("double", False))

    def trainer(self, policy: DQNPolicy, train_steps: float = math.inf) -> Trainer:
        """The DQN (or C51) trainer; the rate anneals as ``lr_schedule`` says over the
        budget's updates."""
        hp = self.hyperparameters
        if self.distributional:
            trainer: Trainer = C51Trainer(policy, hp["discount_factor"], self.n_step,
                                          double=self.double)
        else:
            trainer = DQNTrainer(policy, hp["discount_factor"], self.n_step,
                                 update=hp.get("update", "q_learning"), double_q=self.double,
                                 huber=hp.get("huber", True))
        return self.anneal_rates(policy, trainer, replay_updates(hp, train_steps))
