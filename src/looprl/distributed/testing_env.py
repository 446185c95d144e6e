"""``test_environment``: check an SRL environment in one process before a distributed run.
No Ray is imported."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from contextlib import closing, suppress
from typing import Any

import gymnasium as gym
import numpy as np

from looprl.collector.recovery import EnvWatch, fault_limits
from looprl.core.suggest import check_count, is_whole
from looprl.environments.faults import EnvironmentOutputError
from looprl.environments.multiagent import MASK
from looprl.environments.srl import Environment, StepResult, make, spaces_of

logger = logging.getLogger(__name__)


#: steps in a row with no agent given a turn (all ``None``) that ``test_environment`` refuses
TURNLESS = 100


class EnvironmentCheckError(ValueError):
    """An environment broke the SRL environment API (the message says where)."""


@dataclasses.dataclass
class EnvironmentReport:
    """What ``test_environment`` saw; ``obs_shapes`` and ``obs_dtypes``: per agent, of each
    obs entry (``None`` for an agent that never received a ``StepResult``)."""

    env_name: str
    agent_count: int
    obs_shapes: list[dict[str, tuple[int, ...]] | None]
    obs_dtypes: list[dict[str, str] | None]
    episodes: int = 0
    steps: int = 0

    def __getitem__(self, agent: int) -> dict[str, tuple[int, ...]] | None:
        """``obs_shapes[agent]``: SRL's ``test_environment`` returned that list
        (``obs_dim = test_environment(...)``, then ``obs_dim[0]["obs"]``)."""
        return self.obs_shapes[agent]


def test_environment(env_name: str, env_args: dict | None = None, test_stepping: bool = True,
                     steps: int = 200, seed: int = 0, env_timeout: float | None = 60.0
                     ) -> EnvironmentReport:
    """Make ``env_name`` and check that it follows the SRL environment API: one ``StepResult``
    or ``None`` per agent from ``reset``/``step``; observations as dicts of numpy arrays of
    constant keys, shapes and dtypes (in ``observation_spaces`` when defined); ``reward`` real
    numbers, ``done``/``truncated`` bool or 0/1, ``info`` a dict or ``None``. With
    ``test_stepping`` it steps ``steps`` times with actions sampled from ``action_spaces``
    (legal ones under an ``"action_mask"``). ``EnvironmentCheckError``: the first problem (a
    ``reset``/``step`` that runs past ``env_timeout`` seconds is stopped there, in the main
    thread; ``None``: no limit)."""
    check_count(steps=steps)
    env_timeout = fault_limits(0, env_timeout)[1]
    if not isinstance(env_args or {}, Mapping):  # (was make()'s "argument after ** must be")
        raise TypeError(f"test_environment's env_args is a dict of the environment's arguments, "
                        f"got {type(env_args).__name__} {env_args!r:.40}")
    with closing(make(env_name, **(env_args or {}))) as env:
        checker = _Checker(env_name, env, seed)
        with EnvWatch(checker, env_timeout):
            report = checker.run(test_stepping, steps)
    logger.info("environment %r passed test_environment: %s", env_name, report)
    return report


test_environment.__test__ = False  # not a pytest test, despite its name


class _Checker:
    """Runs the checks of ``test_environment`` on one environment."""

    def __init__(self, env_name: str, env: Environment, seed: int):
        self.name, self.env, self.seed = env_name, env, seed
        self.env_call: tuple[float, None, str] | None = None  # (``EnvWatch`` reads it)
        self.episode, self.step = 0, 0  # (of the call in progress, as EnvWatch names it)
        self.rng = np.random.default_rng(seed)
        count = env.agent_count
        if not is_whole(count) or count < 1:
            raise self.fail(f"agent_count must be a positive int, got {count!r}")
        self.n = int(count)
        self.obs_spaces = self._spaces("observation_spaces")
        self.action_spaces = self._spaces("action_spaces")
        self.signatures: list[dict[str, tuple[tuple[int, ...], np.dtype]] | None] = [None] * self.n

    def fail(self, message: str, agent: int | None = None) -> EnvironmentCheckError:
        where = f"agent {agent}: " if agent is not None else ""
        return EnvironmentCheckError(f"env {self.name!r}: {where}{message}")

    def _spaces(self, attribute: str) -> list[gym.Space] | None:
        try:
            return spaces_of(self.env, attribute)
        except NotImplementedError:
            return None
        except EnvironmentOutputError as error:
            raise self.fail(str(error)) from None

    def run(self, test_stepping: bool, steps: int) -> EnvironmentReport:
        with suppress(NotImplementedError):  # an environment without randomness of its own
            self.env.seed(self.seed)
        results = self._reset()
        if not test_stepping:
            return self._report(0, 0)
        if self.action_spaces is None:
            raise self.fail("action_spaces is not implemented: implement it to let "
                            "test_environment step the env, or pass test_stepping=False")
        for i, space in enumerate(self.action_spaces):
            space.seed(self.seed + i)
        episodes, turnless, playing = 0, 0, [_live(r) for r in results]
        for _ in range(steps):
            actions = [self._action(i, r) if _live(r) else None for i, r in enumerate(results)]
            results = [r if r is None or playing[i] or _live(r) else None  # (SRL's garbage
                       for i, r in enumerate(self._call("step", actions))]  # steps: as runs)
            playing = [_live(r) if r is not None else on for r, on in zip(results, playing)]
            turnless = turnless + 1 if all(r is None for r in results) else 0
            if turnless >= TURNLESS:
                raise self.fail(f"step() returned None for every agent {TURNLESS} times in a "
                                f"row while agents {[i for i, on in enumerate(playing) if on]} "
                                "play on: none is given a turn (a run would cut the episode at "
                                "its cap); return a StepResult for the agents whose turn is next")
            if not turnless and not any(playing):  # (as a run ends an episode)
                episodes += 1
                results = self._reset()
                playing = [_live(r) for r in results]
        return self._report(episodes, steps)

    def _reset(self) -> list[StepResult | None]:
        self.episode, self.step = self.episode + 1, 0
        results = self._call("reset")
        if all(r is None for r in results):
            raise self.fail("reset() returned None for every agent: at least one must act")
        return results

    def env_place(self, copy: None, method: str) -> tuple[str, int, int | None]:
        """``(env name, episode, step)`` of the call in progress (``EnvWatch`` names it)."""
        return self.name, self.episode, self.step + 1 if method == "step" else None

    def _call(self, method: str, *args: Any) -> list[StepResult | None]:
        self.env_call = (time.monotonic(), None, method)
        try:
            results = getattr(self.env, method)(*args)
        except Exception as error:
            raise self.fail(f"{method}() raised {type(error).__name__}: {error}") from error
        finally:
            self.env_call = None
        self.step += method == "step"
        if not isinstance(results, (list, tuple)):
            raise self.fail(f"{method}() must return a list, got {type(results).__name__}")
        if len(results) != self.n:
            raise self.fail(f"{method}() returned {len(results)} results for {self.n} agents")
        for i, result in enumerate(results):
            if result is not None:
                self._check_result(method, i, result)
        return list(results)

    def _check_result(self, method: str, i: int, result: Any) -> None:
        if not isinstance(result, StepResult):
            raise self.fail(f"{method}() result is a {type(result).__name__}, not a StepResult "
                            "or None", i)
        self._check_obs(method, i, result.obs)
        for field in ("reward", "done", "truncated"):
            self._check_scalar(method, i, field, getattr(result, field))
        if not np.all(np.isfinite(result.reward)):
            raise self.fail(f"{method}() reward is {result.reward[0]}, not finite", i)
        if result.info is not None and not isinstance(result.info, dict):  # (SRL: may be None)
            raise self.fail(f"{method}() info is a {type(result.info).__name__}, not a dict "
                            "or None", i)

    def _check_scalar(self, method: str, i: int, field: str, value: Any) -> None:
        """``reward``: a numpy array of shape ``(1,)`` of real numbers (SRL's ``np.array([reward])``
        is float64); ``done``/``truncated``: of bools or 0/1 numbers."""
        flag = field != "reward"
        if isinstance(value, np.ndarray) and value.shape == (1,) and value.dtype.kind in (
                "biuf" if flag else "iuf"):
            if not flag or value.dtype == np.bool_ or value[0] in (0, 1):
                return
            raise self.fail(f"{method}() {field} is {value[0].item()!r} ({value.dtype}); a flag "
                            "must be True/False or 0/1: use np.array([flag], dtype=bool)", i)
        got = f"shape {value.shape}, {value.dtype}" if isinstance(value, np.ndarray) else type(
            value).__name__
        what, example = (("of bools", f"np.array([{field}], dtype=bool)") if flag else
                         ("of real numbers", "np.array([reward], dtype=np.float32)"))
        raise self.fail(f"{method}() {field} must be a numpy array of shape (1,) {what} "
                        f"({example}), got {got}", i)

    def _check_obs(self, method: str, i: int, obs: Any) -> None:
        if not isinstance(obs, dict) or not obs:
            kind = "an empty dict" if isinstance(obs, dict) else f"a {type(obs).__name__}"
            raise self.fail(f"{method}() obs is {kind}, not a dict of numpy arrays "
                            "(e.g. {'obs': array})", i)
        for key, value in obs.items():
            if not isinstance(key, str):
                raise self.fail(f"{method}() obs key {key!r} is not a string", i)
            if not isinstance(value, np.ndarray) or value.dtype == object:
                raise self.fail(f"{method}() obs[{key!r}] is a {type(value).__name__}, "
                                "not a numeric numpy array", i)
            if value.dtype.kind in "fc" and not np.all(np.isfinite(value)):
                raise self.fail(f"{method}() obs[{key!r}] holds NaN or inf, not finite", i)
        signature = {key: (value.shape, value.dtype) for key, value in obs.items()}
        if self.signatures[i] is None:
            self.signatures[i] = signature
        elif signature != self.signatures[i]:
            raise self.fail(f"{method}() obs changed from {_show(self.signatures[i])} to "
                            f"{_show(signature)}", i)
        if self.obs_spaces is not None:
            self._check_obs_space(method, i, obs)

    def _check_obs_space(self, method: str, i: int, obs: dict[str, np.ndarray]) -> None:
        space = self.obs_spaces[i]
        spaces = space.spaces if isinstance(space, gym.spaces.Dict) else {"obs": space}
        if set(spaces) != set(obs):
            raise self.fail(f"{method}() obs keys {sorted(obs)} differ from "
                            f"observation_spaces[{i}] keys {sorted(spaces)}", i)
        for key, value in obs.items():
            if not spaces[key].contains(value):
                raise self.fail(f"{method}() obs[{key!r}] (shape {value.shape}, {value.dtype}) "
                                f"is not in observation_spaces[{i}][{key!r}] = {spaces[key]}", i)

    def _action(self, i: int, result: StepResult) -> Any:
        space = self.action_spaces[i]
        mask = result.obs.get(MASK)
        if mask is None or not isinstance(space, gym.spaces.Discrete):
            return space.sample()
        legal = np.flatnonzero(mask)
        if legal.size == 0:
            raise self.fail("its action_mask allows no action although it must act", i)
        return space.start + legal[self.rng.integers(legal.size)]

    def _report(self, episodes: int, steps: int) -> EnvironmentReport:
        shapes = [None if s is None else {k: v[0] for k, v in s.items()} for s in self.signatures]
        dtypes = [None if s is None else {k: str(v[1]) for k, v in s.items()}
                  for s in self.signatures]
        return EnvironmentReport(self.name, self.n, shapes, dtypes, episodes, steps)


def _live(result: StepResult | None) -> bool:
    """Whether an agent with this latest result must act next."""
    return result is not None and not (bool(result.done[0]) or bool(result.truncated[0]))


def _show(signature: dict[str, tuple[tuple[int, ...], np.dtype]]) -> str:
    return "{" + ", ".join(f"{k}: {s} {d}" for k, (s, d) in signature.items()) + "}"
