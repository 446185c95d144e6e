"""Independent learners over a ``MultiagentEnvironment``: one single-agent preset per agent,
built on that agent's view (``env.subenv``; parallel presets with ``n_envs=1``). For agents
with action masks the view's observation has the mask appended and the ``model`` is wrapped
in a ``MaskedModule``."""

from __future__ import annotations

import copy
import difflib
import logging
import math
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from looprl.agents.independent import (
    IndependentMultiagent,
    IndependentPolicy,
    IndependentTrainer,
    MaskedAgent,
    MaskedModule,
    SingleStateAgent,
)
from looprl.agents.independent_learner import IndependentLearners, shared_cut
from looprl.agents.shell import LearningAgent
from looprl.core import Agent, ParallelAgent, Preset
from looprl.core.preset import check_train_steps
from looprl.environments.multiagent import MultiagentEnvironment
from looprl.memory.samples import REPLAY_KINDS
from looprl.presets.builder import PresetBuilder
from looprl.presets.common import to_device

log = logging.getLogger(__name__)


class IndependentMultiagentPreset(Preset):
    """One preset per agent; ``agent()`` routes each state to that agent's own agent, and
    ``policy()``/``trainer()`` compose the agents' parts for the Ray workers.

    Args:
        presets: one built single-agent ``Preset`` per agent name.
        masked: the agents whose states carry an ``action_mask``.
        hyperparameters: the overrides the presets were built with.
    """

    #: the agents whose presets read their observations without the action mask (built on
    #: ``env.subenvs``, ALL's way: ``fit_agents`` finds them)
    unmasked: frozenset[str] = frozenset()

    def __init__(self, name: str, device: str | torch.device, presets: dict[str, Preset],
                 masked: set[str] | None = None, hyperparameters: dict[str, Any] | None = None):
        self.presets = dict(presets)
        self.masked = set(masked or ())
        super().__init__(name, device, dict(hyperparameters or {}))

    @property
    def device(self) -> str | torch.device:
        return self._device

    @device.setter
    def device(self, device: str | torch.device) -> None:
        """Setting the device moves every agent's networks."""
        self._device = device
        for preset in self.presets.values():
            to_device(preset, device)

    def learning(self, train_steps: float, actors: int = 1, trainers: int = 1
                 ) -> dict[str, Any]:
        """One trainer worker keeps each agent's own buffer and steps each agent's trainer on
        its own streams."""
        if self.env_remote is None:
            raise ValueError(f"runtime=ray steps multi-agent presets in PettingZoo environments "
                             f"(MultiagentPettingZooEnv); {self.name!r} was built for another "
                             "one: run it locally (runtime=local)")
        if trainers > 1:
            raise ValueError(f"{self.name!r} (independent learners) trains in one trainer "
                             f"worker; set runtime.trainers=1 (got {trainers})")
        share = self._agent_steps(train_steps)
        agents = [preset.learning(share, actors) for preset in self.presets.values()]
        if len({str(agent.get("explorations")) for agent in agents}) > 1:
            raise ValueError(f"the agents of {self.name!r} explore differently on Ray (apex); "
                             "set apex for all of them or for none")
        length, whole = shared_cut([(agent["segment_length"], agent.get("whole_episodes", False),
                                     agent["buffer"] in REPLAY_KINDS) for agent in agents])
        return {"buffer": "independent",
                "buffer_args": {"agents": [(agent["buffer"], agent["buffer_args"])
                                           for agent in agents]},
                "explorations": agents[0].get("explorations"),
                "segment_length": length, "whole_episodes": whole}  # (the local run's cut)

    def _agent_steps(self, train_steps: float) -> float:
        """Each agent's share of ``train_steps`` frames (agents take turns)."""
        return train_steps / len(self.presets) if math.isfinite(train_steps) else train_steps

    def policy(self, logger: Any = None, device: Any = None, copy_model: bool = False,
               optimizer: bool = True) -> IndependentPolicy:
        """Each agent's preset's policy, behind one ``IndependentPolicy``."""
        policies = [preset.policy(logger=logger, device=device, copy_model=copy_model,
                                  optimizer=optimizer)
                    for preset in self.presets.values()]
        return IndependentPolicy(policies, list(self.presets), self.masked, self.unmasked)

    def trainer(self, policy: IndependentPolicy, train_steps: float = math.inf
                ) -> IndependentTrainer:
        """Each agent's preset's trainer of its policy, over its share of ``train_steps``."""
        steps = self._agent_steps(train_steps)
        trainers = [preset.trainer(agent_policy, train_steps=steps)
                    for preset, agent_policy in zip(self.presets.values(), policy.policies,
                                                    strict=True)]
        return IndependentTrainer(policy, trainers)

    def agent(self, logger: Any = None, train_steps: float = float("inf")
              ) -> IndependentLearners | IndependentMultiagent:
        """Training agents sharing the presets' networks; ``logger``: one, or one per agent
        name. Agents of a user's own presets (no actor and learner) are routed as ALL's are."""
        check_train_steps(train_steps, self.name)
        loggers = logger if isinstance(logger, dict) else dict.fromkeys(self.presets, logger)
        steps = self._agent_steps(train_steps)
        agents = {
            name: self._adapt(name, preset.agent(logger=loggers.get(name), train_steps=steps))
            for name, preset in self.presets.items()}
        if all(isinstance(getattr(agent, "unwrapped", agent), LearningAgent)
               for agent in agents.values()):
            return IndependentLearners(agents, self.masked, self.unmasked)
        return IndependentMultiagent(agents)

    def fit_agents(self, env: Any) -> None:
        """Fit the presets to ``env``'s agents: a one-line ``ValueError`` unless they are named
        by them (was: a misnamed one trained as another by its place); the agents whose
        presets (built on ``env.subenvs``, as ALL's) do not read its action masks are
        ``unmasked``, with a warning."""
        check_agent_names(list(self.presets), env.possible_agents, self.name, "preset", env.name)
        unread = [agent for agent in env.possible_agents
                  if agent not in self.masked and env.subenv(agent).has_action_mask]
        self.unmasked = frozenset(unread)
        if unread:
            log.warning("%s: the presets of %s act without %s's action masks (built on "
                        "env.subenvs, as ALL's: an illegal move ends its game); "
                        "looprl.presets.multiagent.independent(builder).env(env) builds them "
                        "to take only legal actions", self.name, ", ".join(unread), env.name)

    def test_agent(self) -> IndependentMultiagent:
        """Evaluation agents with copies of the current parameters."""
        return IndependentMultiagent({name: self._adapt(name, preset.test_agent())
                                      for name, preset in self.presets.items()})

    def _adapt(self, name: str, agent: Any) -> Agent:
        if isinstance(agent, ParallelAgent):
            agent = SingleStateAgent(agent)
        return MaskedAgent(agent) if name in self.masked else agent


def masked_view(view: Any) -> Any:
    """A copy of an agent's view whose flat observations have the action mask appended."""
    space, actions = view.observation_space, view.action_space
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise ValueError(f"Action masks need flat observations, but {view.name} has {space}")
    n = int(actions.n)
    masked = copy.copy(view)
    masked.observation_space = gym.spaces.Box(np.concatenate((space.low, np.zeros(n, np.float32))),
                                              np.concatenate((space.high, np.ones(n, np.float32))))
    return masked


def mask_model(preset: Preset, view: Any) -> None:
    """Wrap ``preset.model`` in a ``MaskedModule``; ``ValueError`` if its outputs do not fit."""
    model = getattr(preset, "model", None)
    if not isinstance(model, nn.Module):
        raise ValueError(f"Preset {preset.name!r} has no 'model' network whose actions to mask")
    n = int(view.action_space.n)
    device = next(model.parameters()).device
    with torch.no_grad():
        out = model(torch.zeros((1, *view.observation_space.shape), device=device))
    actions = out[0] if isinstance(out, tuple) else out
    if actions.shape[-1] != n:
        raise ValueError(f"Preset {preset.name!r} outputs shape {tuple(actions.shape)}, not one "
                         f"value per action ({n}); its actions cannot be masked")
    preset.model = MaskedModule(model, n)


class IndependentPresetBuilder(PresetBuilder):
    """Builds an ``IndependentMultiagentPreset`` from one ``PresetBuilder`` for every agent,
    or a dict agent name -> builder; each agent's preset is named ``{name}.{agent}``."""

    def __init__(self, builders: PresetBuilder | dict[str, PresetBuilder],
                 name: str = "independent"):
        _check_builders(builders)
        self.builders = builders
        self._builders = list(builders.values()) if isinstance(builders, dict) else [builders]
        defaults: dict[str, Any] = {}
        for builder in self._builders:
            for key, value in builder.hyperparameter_defaults.items():
                defaults.setdefault(key, value)
        if "n_envs" in defaults:
            defaults["n_envs"] = 1  # (each agent's preset steps its one view)
        super().__init__(name, defaults, IndependentMultiagentPreset)
        self._hyperparameters = {}  # the overrides only: each builder keeps its defaults

    def env(self, env: Any) -> IndependentPresetBuilder:
        """Set the ``MultiagentEnvironment`` (or a PettingZoo or SRL name, made as ``looprl
        train`` makes it) whose agents the presets are built for."""
        builder = super().env(env)
        if not isinstance(builder._env, MultiagentEnvironment):
            raise TypeError(f"{self.default_name}.env() takes a MultiagentEnvironment "
                            f"(MultiagentPettingZooEnv(game)) or a PettingZoo name "
                            f"('tictactoe_v3'), got {type(env).__name__} {env!r:.40}")
        return builder

    def hyperparameters(self, **hyperparameters: Any) -> IndependentPresetBuilder:
        """Override hyperparameters of the agents' builders that have them (``n_envs`` is
        always 1)."""
        checked = super().hyperparameters(**hyperparameters)  # unknown names fail here
        if hyperparameters.get("n_envs", 1) != 1:
            raise ValueError(f"{self.default_name} steps one environment per agent: n_envs is "
                             f"1, got {hyperparameters['n_envs']} (raise n_steps for more rows "
                             "per update)")
        for builder in self._builders:  # type errors now rather than at build()
            _configured(builder, hyperparameters)
        return checked

    def _construct(self, device: str | torch.device) -> IndependentMultiagentPreset:
        """One preset per agent of the environment, each on that agent's view of it."""
        self._check_agents()
        presets, masked = {}, set()
        for agent in self._env.possible_agents:
            view = self._env.subenv(agent)
            if view.has_action_mask:
                view = masked_view(view)
                masked.add(agent)
            presets[agent] = self._build_one(agent, view, device)
            if agent in masked:
                mask_model(presets[agent], view)
        return IndependentMultiagentPreset(self._name, device, presets, masked,
                                           dict(self._hyperparameters))

    def _check_agents(self) -> None:
        """A one-line ``ValueError`` unless a dict of builders names every agent of the
        environment and no other (whose builder would go unused)."""
        if isinstance(self.builders, dict):
            check_agent_names(list(self.builders), self._env.possible_agents, self.default_name,
                              "preset builder", self._env.name)

    def _build_one(self, agent: str, view: Any, device: str | torch.device) -> Preset:
        builder = self.builders
        if isinstance(builder, dict):
            builder = builder[agent]
        builder = _configured(builder, self._hyperparameters).name(f"{self._name}.{agent}")
        return builder.device(device).env(view).build()


def check_agent_names(names: list[str], agents: list[str], owner: str, what: str,
                      env_name: str) -> None:
    """A one-line ``ValueError`` unless ``names`` (of ``owner``'s ``what`` s) are ``agents``."""
    others = [name for name in names if name not in agents]
    for agent in agents:
        if agent not in names:
            close = difflib.get_close_matches(agent, others, n=1)
            hint = f": rename {close[0]!r} to {agent!r}" if close else ""
            raise ValueError(f"No {what} for agent {agent!r} of {env_name} (got {sorted(names)})"
                             + hint)
    if others:
        raise ValueError(f"{owner} has {what}s for {others}, but {env_name} has no such agent "
                         f"(its agents: {', '.join(agents)}): remove them, or fix their names")


def _check_builders(builders: Any) -> None:
    """A one-line ``TypeError`` unless ``builders`` is a ``PresetBuilder`` or a dict agent name
    -> ``PresetBuilder``."""
    given = builders.items() if isinstance(builders, dict) else [(None, builders)]
    for agent, builder in given:
        if not isinstance(builder, PresetBuilder):
            which = "" if agent is None else f" (for agent {agent!r})"
            built = ": give its builder" if isinstance(builder, Preset) else ""
            raise TypeError(f"independent() takes a preset builder (classic_control.dqn) or a "
                            f"dict agent name -> builder, got{which} {type(builder).__name__} "
                            f"{builder!r:.40}{built}")


def _configured(builder: PresetBuilder, hyperparameters: dict[str, Any]) -> PresetBuilder:
    """``builder`` with those of ``hyperparameters`` it has (``n_envs``: 1, one view each)."""
    defaults = builder.hyperparameter_defaults
    own = {k: v for k, v in hyperparameters.items() if k in defaults}
    if "n_envs" in defaults:
        own["n_envs"] = 1
    return builder.hyperparameters(**own)


#: ``independent(builders, name="independent")``
independent = IndependentPresetBuilder
