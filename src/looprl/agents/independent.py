"""Independent learners (Tan, 1993; de Witt et al., 2020): one single-agent learner per agent,
as a seed 003 ``Multiagent`` and as one policy and trainer for the collector."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from looprl.agents.segments import PolicyTrainer
from looprl.core import (
    Agent,
    AgentWrapper,
    Multiagent,
    Policy,
    RolloutRequest,
    RolloutResult,
    SampleBatch,
    Trainer,
    TrainerStepResult,
)
from looprl.core.leaves import as_numpy
from looprl.core.namedarray import NamedArray, concat, recursive_apply
from looprl.core.preset import check_agent
from looprl.core.state import MultiagentState, State, StateArray
from looprl.nn import ActorCriticModel, single_field
from looprl.nn.fields import ACTION_MASK, legal_mask
from looprl.policies import MASKED_Q, legal_actions


class IndependentMultiagent(Multiagent):
    """Routes each state to ``agents[state['agent']]`` (seed 003), each row of a ``StateArray``
    to its agent; ``agents``: a dict agent name -> agent."""

    def __init__(self, agents: dict[str, Agent]):
        if not isinstance(agents, Mapping):
            raise TypeError(f"IndependentMultiagent takes a dict agent name -> agent, got "
                            f"{type(agents).__name__} {agents!r:.40}")
        for name, agent in agents.items():
            check_agent(agent, f"IndependentMultiagent (agent {name!r})")
        self.agents = dict(agents)

    def act(self, multiagent_state: State) -> Any:
        if isinstance(multiagent_state, StateArray):
            return torch.as_tensor(row_actions(self, multiagent_state))
        name = multiagent_state["agent"]
        if name not in self.agents:
            raise KeyError(f"No agent for {name!r}; this multiagent has {sorted(self.agents)}")
        return self.agents[name].act(multiagent_state)


def row_actions(agent: Any, states: StateArray, names: Sequence[str] | None = None
                ) -> np.ndarray:
    """``agent``'s action per row of ``states`` (``agent``: a name, or an index into ``names``)."""
    actions = []
    for i in range(len(states)):
        row = dict(states[i])
        if names is not None and not isinstance(row["agent"], str):
            row["agent"] = names[int(row["agent"])]
        actions.append(as_numpy(agent.act(MultiagentState(row))))
    return np.stack(actions)


class SingleStateAgent(AgentWrapper, Agent):
    """Lets a ``ParallelAgent`` act on single states, as ``StateArray`` batches of 1 row."""

    def act(self, state: State) -> Any:
        return self.agent.act(State.array([state]))[0]


def masked_observation(observation: Any, mask: Any) -> Any:
    """``observation`` with the action ``mask`` appended as 0/1 float32 features."""
    if isinstance(observation, torch.Tensor):
        mask = torch.as_tensor(mask, device=observation.device)
        return torch.cat((observation.float(), mask.float()), dim=-1)
    return np.concatenate((np.asarray(observation, np.float32), np.asarray(mask, np.float32)),
                          axis=-1)


class MaskedModule(nn.Module):
    """Gives illegal actions the value ``MASKED_Q`` (Huang & Ontanon, 2020), the mask being the
    input's last ``num_actions`` features; masks the output, or its first element (an all-0
    mask, a finished agent's, masks nothing)."""

    def __init__(self, module: nn.Module, num_actions: int):
        super().__init__()
        self.module = module
        self.num_actions = num_actions

    def forward(self, x: torch.Tensor, *args: Any) -> Any:
        out = self.module(x, *args)
        illegal = ~legal_mask(single_field(x)[..., -self.num_actions :] > 0.5)
        if isinstance(out, tuple):
            return (out[0].masked_fill(illegal, MASKED_Q), *out[1:])
        return out.masked_fill(illegal, MASKED_Q)

    def __getattr__(self, name: str) -> Any:
        """The wrapped module's attributes (``model.actor``, as a preset's optimizer reads)."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "module":
                raise
            return getattr(self.module, name)

    def initial_state(self) -> Any:
        """The wrapped actor-critic's recurrent memory, or ``None``."""
        return self.module.initial_state() if isinstance(self.module, ActorCriticModel) else None


class MaskedAgent(AgentWrapper, Agent):
    """Makes an agent respect ``state['action_mask']``, appended to the observation its networks
    see; an illegal action raises ``RuntimeError``."""

    def act(self, state: State) -> Any:
        mask = state["action_mask"]
        observation = masked_observation(state.observation, mask)
        action = self.agent.act(state.update(observation=observation))
        if not state.done and not bool(mask[int(action)]):
            raise RuntimeError(f"{type(self.agent).__name__} chose the illegal action "
                               f"{int(action)} for {state.get('agent', 'its agent')} (legal: "
                               f"{mask.nonzero().flatten().tolist()})")
        return action


class RandomAgent(Agent):
    """Uniformly random legal actions of a ``Discrete`` ``action_space`` (all without a mask)."""

    def __init__(self, action_space: Any, seed: int | None = None):
        self.num_actions = int(action_space.n)
        self.rng = np.random.default_rng(seed)

    def act(self, state: State) -> int:
        if "action_mask" in state:
            legal = np.flatnonzero(legal_actions(state).cpu().numpy())
            return int(self.rng.choice(legal))
        return int(self.rng.integers(self.num_actions))


class IndependentPolicy(Policy):
    """One policy per agent behind one ``rollout``: row ``i`` goes to agent ``request.agent[i]``'s
    policy, in its ``view``; one shared ``version``; ``masked``: agents with an ``action_mask``
    appended to their observations; ``unmasked``: agents whose networks read the observation
    alone (ALL's presets built on ``env.subenvs``: the mask is left out); others: as it came."""

    _padded = False  # (a policy pickled before the flag)
    _unmasked: frozenset[int] = frozenset()  # (and before this one)

    def __init__(self, policies: list[Policy], names: list[str], masked: Collection[str] = (),
                 unmasked: Collection[str] = ()):
        if len(names) != len(policies) or not policies:
            raise ValueError(f"IndependentPolicy needs one name per policy, got {len(names)} "
                             f"names for {len(policies)} policies")
        if len({p.default_policy_state is None for p in policies}) > 1:
            raise ValueError("IndependentPolicy needs the policies of all agents recurrent or "
                             "all feed-forward: the actors keep one policy_state per stream")
        self.policies = list(policies)
        self.names = list(names)
        self.masked = [name in set(masked) for name in self.names]
        self._unmasked = frozenset(i for i, name in enumerate(self.names) if name in unmasked)
        #: policies of several kinds: every row carries ``log_prob`` and ``value`` (NaN where
        #: its policy has none), so that rows of agents asked alone (turns) are written alike
        self._padded = len({type(policy) for policy in self.policies}) > 1
        self._module = nn.ModuleList([policy.module for policy in self.policies])

    @property
    def version(self) -> int:  # type: ignore[override]
        """The newest version among the agents' policies; setting it sets all of them."""
        return max(policy.version for policy in self.policies)

    @version.setter
    def version(self, value: int) -> None:
        for policy in self.policies:
            policy.version = value

    def seed(self, seed: int) -> None:
        """Seed agent ``i``'s policy with ``seed + i`` (those with a ``seed`` method)."""
        for i, policy in enumerate(self.policies):
            own = getattr(policy, "seed", None)
            if callable(own):
                own(seed + i)

    def share_version(self) -> None:
        self.version = self.version

    @property
    def module(self) -> nn.Module:
        return self._module

    @property
    def default_policy_state(self) -> Any:
        return self.policies[0].default_policy_state

    def view(self, agent: int, obs: Any) -> Any:
        """``obs`` as agent ``agent``'s networks read it (``action_mask`` appended if masked)."""
        if agent in self._unmasked and isinstance(obs, NamedArray) and ACTION_MASK in obs.keys():
            return NamedArray(obs=obs["obs"])
        if not self.masked[agent]:
            return obs
        return NamedArray(obs=masked_observation(obs["obs"], obs[ACTION_MASK]))

    def rollout(self, request: RolloutRequest, **kwargs: Any) -> RolloutResult:
        """Each agent's policy answers its own rows (``request.agent``), in its view."""
        agents = _agent_indices(request.agent, "request", len(self.policies))
        results, indices = [], []
        for agent in sorted(set(agents.tolist())):  # (of a few rows: faster than np.unique)
            index = np.flatnonzero(agents == agent)
            whole = len(index) == len(agents)  # (one agent's rows: the request's own)
            rows = {name: value if whole else _take(value, index)
                    for name, value in request.items() if name != "agent"}
            rows["obs"] = self.view(agent, rows["obs"])
            results.append(self.policies[agent].rollout(RolloutRequest(**rows), **kwargs))
            indices.append(index)
        return _merge(results, indices, self._padded)

    def analyze(self, sample: Any, target: str | None = None, **kwargs: Any) -> Any:
        """The ``analyze`` of the one agent whose streams ``sample`` holds."""
        agents = np.unique(_agent_indices(sample["agent"] if "agent" in sample else None,
                                          "sample", len(self.policies)))
        if len(agents) != 1:
            raise ValueError(f"IndependentPolicy.analyze takes one agent's streams, got agents "
                             f"{agents.tolist()}: split the sample (IndependentTrainer.split)")
        agent = int(agents[0])
        sample = recursive_apply(sample, lambda leaf: leaf)  # a copy to set obs on
        sample.obs = self.view(agent, sample.obs)
        return self.policies[agent].analyze(sample, target, **kwargs)


class IndependentTrainer(PolicyTrainer):
    """One trainer per agent (trainer ``i`` trains ``policy.policies[i]``) on its own streams."""

    def __init__(self, policy: IndependentPolicy, trainers: list[Trainer]):
        if [t.policy for t in trainers] != policy.policies:
            raise ValueError(f"IndependentTrainer needs one trainer per agent of the policy, "
                             f"trainer i training policy.policies[i] (agents {policy.names})")
        self._policy = policy
        self.trainers = list(trainers)
        self.steps = 0

    def split(self, batch: SampleBatch) -> dict[int, SampleBatch]:
        """Each agent's streams (columns) of ``[T + 1, B]`` segments by agent index, in its view."""
        agent = None if batch.agent is None else as_numpy(batch.agent)[0]
        agents = _agent_indices(agent, "batch", len(self.trainers))
        parts = {}
        for index in np.unique(agents):
            part = batch[:, np.flatnonzero(agents == index)]
            part.obs = self._policy.view(int(index), part.obs)
            parts[int(index)] = part
        return parts

    def step(self, batch: SampleBatch) -> TrainerStepResult:
        """Step each agent's trainer on its own streams; statistics are named ``{agent}/{name}``."""
        stats: dict[str, Any] = {}
        for agent, part in self.split(batch).items():
            result = self.trainers[agent].step(part)
            self._policy.share_version()
            stats.update(agent_stats(self._policy.names[agent], result.stats))
        self.steps += 1
        return TrainerStepResult(stats, self.steps)


def agent_stats(name: str, stats: dict[str, Any]) -> dict[str, Any]:
    """``stats`` of agent ``name``'s trainer, named ``{name}/{key}``."""
    return {f"{name}/{key}": value for key, value in stats.items()}


def _agent_indices(agent: Any, what: str, agents: int) -> np.ndarray:
    """``agent`` as indices below ``agents``; ``ValueError`` if it is ``None`` or out of range."""
    if agent is None:
        raise ValueError(f"the {what} does not say whose rows it holds (agent is None): "
                         "independent learners need an environment of several agents, whose "
                         "runner records each row's agent")
    indices = np.asarray(as_numpy(agent), dtype=np.int64).reshape(-1)
    if len(indices) and (indices.min() < 0 or indices.max() >= agents):
        raise ValueError(f"the {what} names agents {sorted(set(indices.tolist()))}, but there "
                         f"are {agents} (0..{agents - 1})")
    return indices


def _take(value: Any, index: np.ndarray) -> Any:
    """Rows ``index`` of an array, tensor or ``NamedArray``; ``None`` and scalars as they are."""
    if value is None or (not isinstance(value, NamedArray) and np.ndim(value) == 0):
        return value
    if isinstance(value, NamedArray | torch.Tensor):
        return value[index]
    return np.asarray(value)[index]


def _merge(results: list[RolloutResult], rows: list[np.ndarray], padded: bool = False
           ) -> RolloutResult:
    """The agents' ``results`` for their ``rows`` as one, in request order (NaN if missing)."""
    results = [result.to_numpy() for result in results]
    for result, index in zip(results, rows, strict=True) if padded else ():
        for name in ("log_prob", "value"):
            if result[name] is None:
                result[name] = np.full(len(index), np.nan, np.float32)
    if len(results) == 1:
        return results[0]
    inverse = np.argsort(np.concatenate(rows))
    fields: dict[str, Any] = {}
    for name in RolloutResult._field_names:
        parts = [result[name] for result in results]
        if all(part is None for part in parts):
            continue
        if any(part is None for part in parts):
            if name == "policy_state":
                raise ValueError("the agents' policies disagree on returning a policy_state")
            parts = [np.full(len(index), np.nan, np.float32) if part is None else part
                     for part, index in zip(parts, rows, strict=True)]
        merged = concat(parts) if isinstance(parts[0], NamedArray) else np.concatenate(parts)
        fields[name] = merged[inverse]
    return RolloutResult(**fields)
