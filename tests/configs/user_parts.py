"""A user's own parts, attached from the config by import path
(``tests.configs.user_parts:...``): importable wherever the repository root is on the path
(``python -m pytest`` puts it there, and Ray passes the driver's path on to its local
workers)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from looprl.environments import SRLEnvironment, StepResult, register, registered_environments
from looprl.environments.srl import action_value, step_result
from looprl.meta import MetaComponent


class ScaledReward(MetaComponent):
    """Multiplies every reward by ``scale`` (and counts the steps it saw)."""

    def __init__(self, scale: float = 1.0, offset: float = 0.0):
        super().__init__()
        self.scale, self.offset, self.steps = scale, offset, 0
        self.post_step_methods.append(self.rescale)

    def rescale(self, metrics: dict[str, Any]) -> None:
        self.steps += 1
        transition = metrics["transition"]
        transition["reward"] = transition["reward"] * self.scale + self.offset


class StepCounter(MetaComponent):
    """Counts the steps it saw (its state, ``steps``) and logs, at each episode's end, the count
    it started from (``log/counter/start``: a resumed run's, from its checkpoint)."""

    state_attributes = ("steps",)

    def __init__(self):
        super().__init__()
        self.steps, self.start = 0, None
        self.post_step_methods.append(self.count)
        self.post_episode_methods.append(self.report)

    def count(self, metrics: dict[str, Any]) -> None:
        if self.start is None:
            self.start = self.steps
        self.steps += 1

    def report(self, metrics: dict[str, Any]) -> None:
        metrics["log/counter/start"] = self.start


class NotAComponent:
    """A class that is no ``MetaComponent``."""


LENGTH = 8


class SignMatchEnv(gym.Env):
    """Observe a sign (+1 or -1), earn 1 for the action that matches it; 8 steps."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self._observe(), {}

    def step(self, action: Any):
        reward = float(int(action) == int(self.sign > 0))
        self.t += 1
        return self._observe(), reward, self.t >= LENGTH, False, {}

    def _observe(self) -> np.ndarray:
        self.sign = self.np_random.choice([-1.0, 1.0])
        return np.array([self.sign], np.float32)


class SignGame:
    """The play of the tests' two-agent SRL environments (``SignMatchPair`` here, the seed-004
    user's ``SignPair``): each agent sees a sign (+1 or -1) and earns 1 for the action that
    matches it, for ``length`` steps. A subclass says what one agent's ``result`` is (and
    the spaces)."""

    def __init__(self, length: int = LENGTH):
        self.length, self.t = length, 0
        self.rng = np.random.default_rng(0)

    @property
    def agent_count(self) -> int:
        return 2

    def seed(self, seed: int) -> int:
        self.rng = np.random.default_rng(seed)
        return seed

    def reset(self) -> list[StepResult]:
        self.t = 0
        return self._results([0.0, 0.0])

    def step(self, actions: list[Any]) -> list[StepResult]:
        rewards = [float(int(np.asarray(action_value(a)).reshape(-1)[0]) == int(s > 0))
                   for a, s in zip(actions, self.signs)]
        self.t += 1
        return self._results(rewards)

    def _results(self, rewards: list[float]) -> list[StepResult]:
        self.signs = self.rng.choice([-1.0, 1.0], size=2)
        return [self.result(np.array([s], np.float32), r, self.t >= self.length)
                for s, r in zip(self.signs, rewards)]

    def result(self, sign: np.ndarray, reward: float, done: bool) -> StepResult:
        raise NotImplementedError


class SignMatchPair(SignGame, SRLEnvironment):
    """Two agents, each matching its own sign (``SignMatchEnv`` as an SRL environment)."""

    @property
    def observation_spaces(self) -> list[gym.Space]:
        return [gym.spaces.Dict({"obs": SignMatchEnv.observation_space})] * 2

    @property
    def action_spaces(self) -> list[gym.Space]:
        return [SignMatchEnv.action_space] * 2

    def result(self, sign: np.ndarray, reward: float, done: bool) -> StepResult:
        return step_result({"obs": sign}, reward, done)


class SignMatchBoxPair(SignMatchPair):
    """``SignMatchPair`` with ``Box`` actions (their sign is the action)."""

    @property
    def action_spaces(self) -> list[gym.Space]:
        return [gym.spaces.Box(-1.0, 1.0, (1,), np.float32)] * 2


# Names registered on import: `env=tests.configs.user_parts:SignMatch-v0` (Gymnasium) and
# `env=tests.configs.user_parts:sign_match_pair` (SRL) import this module, then make them.
if "SignMatch-v0" not in gym.registry:
    gym.register("SignMatch-v0", entry_point=SignMatchEnv)
if "sign_match_pair" not in registered_environments():
    register("sign_match_pair", SignMatchPair)


class TakingTurns(SignMatchPair):
    """``SignMatchPair`` whose second agent acts at even steps only: ``None`` in between (the
    SRL API's agent that waits), or with ``short=True`` a list of the first agent's result
    alone (which the API does not allow)."""

    def __init__(self, short: bool = False):
        super().__init__()
        self.short = short

    def step(self, actions: list[Any]) -> list[StepResult | None]:
        waited = actions[1] is None
        results = super().step([actions[0], 0 if waited else actions[1]])
        if self.t % 2 == 0:
            return results
        return results[:1] if self.short else [results[0], None]


class _TwoAgents(SRLEnvironment):
    """Two agents observing the step count ``t``, both with a result at reset."""

    agent_count = 2
    observation_spaces = [gym.spaces.Dict({"obs": gym.spaces.Box(0, 9, (1,))})] * 2
    action_spaces = [gym.spaces.Discrete(2)] * 2

    def reset(self):
        self.t = 0
        return [step_result({"obs": np.zeros(1, np.float32)}, 0.0, False)] * 2


class LastToFinish(_TwoAgents):
    """Two agents acting at steps 0 and 1; at step 2 agent 0 finishes (return 2) while agent 1
    waits (``None``), and at step 3 agent 1 finishes with a reward of 5 (return 6)."""

    def step(self, actions):
        self.t = t = self.t + 1
        obs = {"obs": np.full(1, t, np.float32)}
        return [step_result(obs, 1.0, t == 2) if t <= 2 else None,
                step_result(obs, 1.0 if t == 1 else 5.0, t == 3) if t != 2 else None]


class TurnlessStep(_TwoAgents):
    """Two agents; agent 0 plays 3 steps, agent 1 steps 1, 3, 5 and 6: after step 4 neither
    has a turn (both results ``None``), and the environment steps on without actions."""

    def step(self, actions):
        self.t = t = self.t + 1
        acts = (t <= 3, t in (1, 3, 5, 6))
        return [step_result({"obs": np.full(1, t, np.float32)}, 1.0, t == end) if act
                else None for act, end in zip(acts, (3, 6), strict=True)]


class PressTheBit(SRLEnvironment):
    """One agent (SRL's Atari and gym-like environments have one): it sees one of ``n`` values
    (one-hot) and earns 1 for pressing the action equal to it, for ``length`` steps; with
    ``continuous``, of 2 values, for a Box action on the value's side of 0."""

    def __init__(self, length: int = LENGTH, n: int = 4, continuous: bool = False):
        self.length, self.continuous, self.t = length, continuous, 0
        self.n = 2 if continuous else n
        self.rng = np.random.default_rng(0)

    @property
    def agent_count(self) -> int:
        return 1

    @property
    def observation_spaces(self) -> list[gym.Space]:
        return [gym.spaces.Dict({"obs": gym.spaces.Box(0.0, 1.0, (self.n,), np.float32)})]

    @property
    def action_spaces(self) -> list[gym.Space]:
        return [gym.spaces.Box(-1.0, 1.0, (1,), np.float32) if self.continuous
                else gym.spaces.Discrete(self.n)]

    def seed(self, seed: int) -> int:
        self.rng = np.random.default_rng(seed)
        return seed

    def reset(self) -> list[StepResult]:
        self.t = 0
        return [self._result(0.0)]

    def step(self, actions: list[Any]) -> list[StepResult]:
        action = np.asarray(action_value(actions[0]), dtype=np.float64).reshape(-1)[0]
        pressed = int(action > 0) if self.continuous else int(action)
        self.t += 1
        return [self._result(float(pressed == self.value))]

    def _result(self, reward: float) -> StepResult:
        self.value = int(self.rng.integers(self.n))
        return step_result({"obs": np.eye(self.n, dtype=np.float32)[self.value]}, reward,
                           self.t >= self.length)
