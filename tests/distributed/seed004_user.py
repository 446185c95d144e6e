"""A seed-004 (SRL) user's own code, written as the seed's quick start shows it, with ``looprl``
in place of SRL's package: a two-agent environment (the seed's optional method names
``observation_space``/``action_space``, ``done`` as ``uint8``; its play is the config tests'
``SignGame``), a GRU policy subclassing
``SingleModelPytorchPolicy`` (``@namedarray`` policy state, ``rollout``, ``analyze``) and an own
trainer (no ``sample_buffer``). Importable by Ray workers (``tests.distributed.seed004_user``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from tests.configs.user_parts import SignGame
from torch import nn

from looprl.agents import SingleModelPytorchPolicy
from looprl.core import (
    RolloutRequest,
    RolloutResult,
    SampleBatch,
    Trainer,
    TrainerStepResult,
    namedarray,
)
from looprl.environments.srl import Environment, StepResult


class SignPair(SignGame, Environment):
    """Two agents; each sees a sign (+1 or -1) and earns 1 for the action matching it (the
    play: ``SignGame``)."""

    @property
    def observation_space(self) -> gym.Space:  # the seed's name: one space for every agent
        return gym.spaces.Dict({"obs": gym.spaces.Box(-1.0, 1.0, (1,), np.float32)})

    @property
    def action_space(self) -> gym.Space:
        return gym.spaces.Discrete(2)

    def result(self, sign: np.ndarray, reward: float, done: bool) -> StepResult:
        ended = np.array([done], dtype=np.uint8)  # as many SRL envs write it
        return StepResult(obs={"obs": sign}, reward=np.array([reward], np.float32),
                          done=ended, info={})


@namedarray
class MyPolicyState:
    hx: np.ndarray


class GRUNet(nn.Module):
    """obs ``[T, B, 1]`` and memory ``[layers, B, H]`` -> logits, values, next memory."""

    def __init__(self, hidden: int, action_dim: int):
        super().__init__()
        self.encoder = nn.Linear(1, hidden)
        self.gru = nn.GRU(hidden, hidden)
        self.pi = nn.Linear(hidden, action_dim)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor, hx: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        out, hx = self.gru(torch.tanh(self.encoder(obs)), hx)
        return self.pi(out), self.v(out).squeeze(-1), hx


@dataclasses.dataclass
class AnalyzedResult:
    """What ``MyTrainer`` needs from ``analyze`` (a plain dataclass, as the seed says)."""

    log_prob: torch.Tensor
    entropy: torch.Tensor
    value: torch.Tensor


class MyGRUPolicy(SingleModelPytorchPolicy):
    """A recurrent actor-critic: its memory is the ``policy_state``."""

    def __init__(self, hidden: int = 16, action_dim: int = 2):
        super().__init__(GRUNet(hidden, action_dim))
        self.hidden = hidden

    @property
    def default_policy_state(self) -> MyPolicyState:
        return MyPolicyState(hx=np.zeros((1, 1, self.hidden), dtype=np.float32))

    def rollout(self, requests: RolloutRequest, **kwargs: Any) -> RolloutResult:
        obs = torch.as_tensor(np.asarray(requests.obs.obs), device=self.device)  # [B, 1]
        hx = torch.as_tensor(np.asarray(requests.policy_state.hx), device=self.device)
        hx = hx[:, :, 0].transpose(0, 1).contiguous()  # [B, layers, 1, H] -> [layers, B, H]
        with torch.no_grad():
            logits, value, hx = self.net(obs[None], hx)
        dist = torch.distributions.Categorical(logits=logits[0])
        action = dist.sample()
        if requests.is_evaluation is not None:
            greedy = torch.as_tensor(np.asarray(requests.is_evaluation), dtype=torch.bool)
            action = torch.where(greedy.reshape(-1).to(self.device), logits[0].argmax(-1),
                                 action)
        state = MyPolicyState(hx=hx.transpose(0, 1)[:, :, None].cpu().numpy())
        return RolloutResult(action=action.cpu().numpy(), policy_state=state,
                             log_prob=dist.log_prob(action).cpu().numpy(),
                             value=value[0].cpu().numpy())

    def analyze(self, sample: SampleBatch, target: str | None = None,
                **kwargs: Any) -> AnalyzedResult:
        obs = torch.as_tensor(np.asarray(sample.obs.obs), device=self.device)  # [T+1, B, 1]
        ends = torch.as_tensor(np.asarray(sample.done) | np.asarray(sample.truncated))
        hx = torch.as_tensor(np.asarray(sample.policy_state.hx[0]), device=self.device)
        hx = hx[:, :, 0].transpose(0, 1).contiguous()
        logits, values = [], []
        for t in range(obs.shape[0]):  # unroll; a new episode starts with an empty memory
            if t > 0:
                hx = hx * (~ends[t - 1]).to(hx.dtype)[None, :, None]
            step_logits, step_value, hx = self.net(obs[t:t + 1], hx)
            logits.append(step_logits[0])
            values.append(step_value[0])
        dist = torch.distributions.Categorical(logits=torch.stack(logits))
        action = torch.as_tensor(np.asarray(sample.action), device=self.device).long()
        return AnalyzedResult(log_prob=dist.log_prob(action), entropy=dist.entropy(),
                              value=torch.stack(values))


class MyTrainer(Trainer):
    """Advantage actor-critic on ``[T + 1, B]`` segments (the user's own; no
    ``sample_buffer``: the runtime gives it on-policy segments)."""

    def __init__(self, policy: MyGRUPolicy, lr: float = 0.02, gamma: float = 0.9):
        self._policy = policy
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
        self.gamma = gamma
        self.steps = 0

    @property
    def policy(self) -> MyGRUPolicy:
        return self._policy

    def step(self, samples: SampleBatch) -> TrainerStepResult:
        analyzed = self.policy.analyze(samples, target="a2c")
        reward = torch.as_tensor(np.asarray(samples.reward), dtype=torch.float32)
        ends = torch.as_tensor(np.asarray(samples.done) | np.asarray(samples.truncated))
        value = analyzed.value
        ret = value[-1].detach()
        returns = []
        for t in reversed(range(len(reward) - 1)):  # row t's action earns row t + 1's reward
            ret = reward[t + 1] + self.gamma * ret * (~ends[t + 1]).float()
            returns.append(ret)
        returns = torch.stack(returns[::-1])
        acting = (~ends[:-1]).float()  # a row that ended an episode took no action
        advantage = (returns - value[:-1]).detach()
        loss = (-(analyzed.log_prob[:-1] * advantage * acting).mean()
                + 0.5 * (((returns - value[:-1]) ** 2) * acting).mean()
                - 0.01 * (analyzed.entropy[:-1] * acting).mean())
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.policy.inc_version()
        self.steps += 1
        return TrainerStepResult(stats={"loss": loss.item()}, step=self.steps)
