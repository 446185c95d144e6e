"""Independent learners: one single-agent learner per agent of a multi-agent environment.

Independent Q-learning (Tan, 1993) and independent PPO (de Witt et al., 2020,
https://arxiv.org/abs/2011.09533) treat the other agents as part of the environment.
``IndependentMultiagent`` routes each ``MultiagentState`` to the agent named by its
``agent`` entry, so any single-environment agent can play its part:

* ``SingleStateAgent`` lets a ``ParallelAgent`` (built for ``n_envs == 1``) act on single
  states, as 1-row ``StateArray`` batches. An episode end is handled like a vector env's
  next-step autoreset: the agent sees the ``done`` state, then the first state of the next
  episode, and its buffer drops the transition between them.
* ``MaskedAgent`` enforces action masks (``state['action_mask']``): it appends the mask to
  the observation (so the networks see it and replay buffers store it), the preset wraps
  the network in a ``MaskedModule`` that pushes the Q-values or logits of illegal actions
  to ``ILLEGAL`` (invalid action masking, Huang & Ontanon, 2020,
  https://arxiv.org/abs/2006.14171), epsilon-greedy exploration draws among legal
  actions only (``MaskedGreedyPolicy``), and an illegal action raises ``RuntimeError``.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch
from torch import nn

from looprl.core import Agent, Hyperparameter, Multiagent, ParallelAgent, State, StateArray
from looprl.nn import ActorCriticModel, single_field
from looprl.policies import GreedyPolicy

#: Value given to the Q-values / logits of illegal actions. Finite, so that products with
#: a zero terminal mask and ``0 * log_softmax`` in entropies stay 0 (not NaN).
ILLEGAL = -1e8


class IndependentMultiagent(Multiagent):
    """Routes each state to ``agents[state['agent']]`` (seed 003).

    Args:
        agents: one ``Agent`` per agent name.
    """

    def __init__(self, agents: dict[str, Agent]):
        self.agents = dict(agents)

    def act(self, multiagent_state: State) -> Any:
        name = multiagent_state["agent"]
        if name not in self.agents:
            raise KeyError(f"No agent for {name!r}; this multiagent has {sorted(self.agents)}")
        return self.agents[name].act(multiagent_state)


class SingleStateAgent(Agent):
    """Lets a ``ParallelAgent`` act on single states, as ``StateArray`` batches of 1 row.

    Tensor entries gain a leading dimension of 1, numbers become 1-element tensors and
    other entries 1-element lists; the action of the row is returned.
    """

    def __init__(self, agent: ParallelAgent):
        self.agent = agent

    @property
    def unwrapped(self) -> Any:
        """The wrapped agent's."""
        return self.agent.unwrapped

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The wrapped agent's."""
        return self.agent.hyperparameters()

    def act(self, state: State) -> Any:
        device = state.device
        x: dict[str, Any] = {}
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                x[key] = value.unsqueeze(0)
            elif isinstance(value, (bool, int, float, np.number, np.bool_)):
                x[key] = torch.tensor([value], device=device)
            else:
                x[key] = [value]
        return self.agent.act(StateArray(x, (1,), device=device))[0]


def legal_actions(state: State) -> torch.Tensor:
    """``state['action_mask']`` as bool; all actions where every action is masked."""
    mask = state["action_mask"].bool()
    return mask | ~mask.any(-1, keepdim=True)


class MaskedModule(nn.Module):
    """Gives illegal actions the value ``ILLEGAL``; the mask is the input's last features.

    ``forward(x)`` runs ``module(x)`` and fills the action outputs where
    ``x[..., -num_actions:]`` is 0. The action outputs are the output itself (Q-values,
    logits) or its first element when the module returns a tuple (actor-critics). A row
    whose mask is all 0 (a finished agent) is left unmasked.

    Args:
        module: maps observations with the mask appended to ``(..., num_actions)`` outputs.
        num_actions: size of the discrete action space.
    """

    def __init__(self, module: nn.Module, num_actions: int):
        super().__init__()
        self.module = module
        self.num_actions = num_actions

    def forward(self, x: torch.Tensor, *args: Any) -> Any:
        out = self.module(x, *args)
        mask = single_field(x)[..., -self.num_actions :] > 0.5
        illegal = ~mask & mask.any(-1, keepdim=True)
        if isinstance(out, tuple):
            return (out[0].masked_fill(illegal, ILLEGAL), *out[1:])
        return out.masked_fill(illegal, ILLEGAL)

    def initial_state(self) -> Any:
        """The wrapped actor-critic's recurrent memory (``ActorCriticModel``), or ``None``."""
        return self.module.initial_state() if isinstance(self.module, ActorCriticModel) else None


class MaskedGreedyPolicy(GreedyPolicy):
    """Epsilon-greedy over legal actions only (``state['action_mask']``).

    Exploration draws uniformly among the legal actions; the greedy choice is the argmax
    over the legal actions' values. States without a mask behave as in ``GreedyPolicy``.
    """

    @classmethod
    def wrap(cls, policy: GreedyPolicy) -> MaskedGreedyPolicy:
        """A masked copy of ``policy`` sharing its Q network and epsilon schedule."""
        masked = cls(policy.q, policy.num_actions, epsilon=policy.epsilon)
        masked._rng, masked._seed = policy._rng, policy._seed
        return masked

    def no_grad(self, state: Any) -> torch.Tensor:
        if "action_mask" not in state:
            return super().no_grad(state)
        legal = legal_actions(state)
        epsilon = self._next_epsilon()
        greedy = self.q.no_grad(state).masked_fill(~legal, -torch.inf).argmax(dim=-1)
        if epsilon <= 0:
            return greedy
        random_legal = (torch.rand(legal.shape, device=legal.device) * legal).argmax(dim=-1)
        if isinstance(state, StateArray):
            explore = torch.rand(greedy.shape, device=greedy.device) < epsilon
            return torch.where(explore, random_legal, greedy)
        return random_legal if (self._rng or random).random() < epsilon else greedy

    def eval(self, state: Any) -> torch.Tensor:
        values = self.q.eval(state)
        if "action_mask" in state:
            values = values.masked_fill(~legal_actions(state), -torch.inf)
        return values.argmax(dim=-1)


def mask_exploration(agent: Any) -> None:
    """Replace the ``GreedyPolicy`` objects of ``agent`` and ``agent.policy`` by masked ones."""
    for owner in (agent, getattr(agent, "policy", None)):
        if owner is None or not hasattr(owner, "__dict__"):
            continue
        for attribute, value in list(vars(owner).items()):
            if isinstance(value, GreedyPolicy) and not isinstance(value, MaskedGreedyPolicy):
                setattr(owner, attribute, MaskedGreedyPolicy.wrap(value))


class MaskedAgent(Agent):
    """Makes an agent respect ``state['action_mask']`` (see the module docstring).

    Args:
        agent: the agent; its networks take the observation with the mask appended.
        check: raise ``RuntimeError`` when an illegal action is chosen (one sync per step).
    """

    def __init__(self, agent: Agent, check: bool = True):
        self.agent = agent
        self.check = check
        mask_exploration(agent)
        mask_exploration(getattr(agent, "agent", None))  # the agent inside an adapter

    @property
    def unwrapped(self) -> Any:
        """The wrapped agent's."""
        return self.agent.unwrapped

    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """The wrapped agent's."""
        return self.agent.hyperparameters()

    def act(self, state: State) -> Any:
        mask = state["action_mask"]
        observation = torch.cat((state.observation.float(), mask.float()), dim=-1)
        action = self.agent.act(state.update(observation=observation))
        if self.check and not state.done and not bool(mask[int(action)]):
            raise RuntimeError(
                f"{type(self.agent).__name__} chose the illegal action {int(action)} for "
                f"{state.get('agent', 'its agent')} (legal: {mask.nonzero().flatten().tolist()})"
            )
        return action


class RandomAgent(Agent):
    """Uniformly random legal actions (all actions when the state has no mask).

    Args:
        action_space: a ``gymnasium.spaces.Discrete`` space.
        seed: seed of the agent's own random generator.
    """

    def __init__(self, action_space: Any, seed: int | None = None):
        self.num_actions = int(action_space.n)
        self.rng = np.random.default_rng(seed)

    def act(self, state: State) -> int:
        if "action_mask" in state:
            legal = np.flatnonzero(legal_actions(state).cpu().numpy())
            return int(self.rng.choice(legal))
        return int(self.rng.integers(self.num_actions))
