"""``FaultyCartPole``: CartPole whose copies fail on purpose, as RLlib's env-runner failure
tests inject faults (``rllib/env/tests/test_env_runner_failures.py``). Ray actors import it by
its path, ``tests.distributed.faulty_env:FaultyCartPole``.

A copy's first ``reset(seed=s)`` arms it when ``faults`` names ``s`` (a Ray actor seeds copy
``c`` of actor ``i`` with ``wrapped_seed(run seed + 10_000 * i) + c``; a rebuilt copy, or a
copy of an actor Ray restarted, gets another seed, so each fault happens once). ``broken``
makes its constructor warn, then raise, in a Ray actor (as a user's environment that warns
why it cannot start). ``faulty_policy``: a policy whose policy worker fails likewise once Ray
restarted it."""

from __future__ import annotations

import itertools
import logging
import os
import time
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from looprl.environments.srl import Environment, StepResult

PATH = "tests.distributed.faulty_env:FaultyCartPole"
SRL_PATH = "tests.distributed.faulty_env:FaultySRLCartPole"

logger = logging.getLogger(__name__)


class FaultyCartPole(CartPoleEnv):
    """CartPole that, seeded with a key of ``faults``, does what its value says once: ``"step"``
    raises in step ``at`` of its first episode, ``"hang"`` sleeps ``hang`` seconds there,
    ``"reset"`` raises in the reset that starts episode ``at``, ``"exit"`` ends its process
    there (a value ``(what, n)``: ``at`` is ``n``); ``every``: the fault of every other seed.
    ``broken``: its constructor warns, then raises, in every Ray actor (``"actor"``) or in an
    actor Ray restarted (``"restarted"``)."""

    def __init__(self, faults: dict[int, str | tuple[str, int]] | None = None, at: int = 3,
                 render_mode: str | None = None, broken: str | None = None, hang: float = 3600,
                 every: str | None = None):
        if broken is not None and _in_actor(restarted=broken == "restarted"):
            logger.warning("FaultyCartPole: no licence server found (%s)", broken)
            raise RuntimeError("constructor fault injected")
        super().__init__(render_mode=render_mode)
        self.faults = {int(seed): fault for seed, fault in (faults or {}).items()}  # ("0": CLI)
        self.at, self.hang, self.every = at, hang, every
        self.fault: str | None = None
        self.episode = self.t = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        if seed is not None:
            fault = self.faults.get(seed, self.every)
            self.fault, self.at = (fault, self.at) if not isinstance(fault, tuple) else fault
        self.episode, self.t = self.episode + 1, 0
        if self.fault == "reset" and self.episode == self.at:
            raise RuntimeError("reset fault injected")
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        self.t += 1
        if self.episode == 1 and self.t == self.at:
            if self.fault == "step":
                raise RuntimeError("step fault injected")
            if self.fault == "hang":
                time.sleep(self.hang)
            if self.fault == "exit":
                os._exit(1)
        return super().step(action)


class FaultySRLCartPole(Environment):
    """``FaultyCartPole`` (its ``faults``) as a one-agent SRL environment (seed 004's API)."""

    def __init__(self, faults: dict[int, str | tuple[str, int]] | None = None):
        self.env, self._seed = FaultyCartPole(faults), None

    @property
    def agent_count(self) -> int:
        return 1

    @property
    def observation_spaces(self) -> list[gym.spaces.Dict]:
        return [gym.spaces.Dict({"obs": self.env.observation_space})]

    @property
    def action_spaces(self) -> list[gym.Space]:
        return [self.env.action_space]

    def seed(self, seed: int | None = None) -> int | None:
        self._seed = seed
        return seed

    def reset(self) -> list[StepResult]:
        obs, _ = self.env.reset(seed=self._seed)
        return [StepResult(obs={"obs": obs}, reward=np.zeros(1, np.float32),
                           done=np.zeros(1, bool), info={})]

    def step(self, actions: list[Any]) -> list[StepResult]:
        obs, reward, terminated, truncated, _ = self.env.step(int(np.ravel(actions[0])[0]))
        return [StepResult(obs={"obs": obs}, reward=np.array([reward], np.float32),
                           done=np.array([terminated]), info={}, truncated=np.array([truncated]))]


def faulty_policy(**args: Any) -> Any:
    """PPO's separate actor-critic policy (``args``), which in policy worker ``policy0`` ends
    its process in its 20th rollout, and there, once Ray started it again, warns why it cannot
    start and raises (as a policy whose GPU is gone)."""
    from looprl.core import Policy
    in_worker = _in_actor(restarted=False) and ray_name().endswith("-policy0")
    if in_worker and _in_actor(restarted=True):
        logger.warning("faulty_policy: no GPU left (restarted)")
        raise RuntimeError("policy constructor fault injected")
    policy = Policy(type_="actor-critic-separate", args=args)
    if in_worker:
        rollout, calls = policy.rollout, itertools.count(1)

        def rollout_until_exit(request: Any, **kwargs: Any) -> Any:
            if next(calls) == 20:
                os._exit(1)
            return rollout(request, **kwargs)

        policy.rollout = rollout_until_exit
    return policy


def ray_name() -> str:
    """This Ray actor's name."""
    import ray
    return ray.get_runtime_context().get_actor_name() or ""


def _in_actor(restarted: bool) -> bool:
    """Whether this process is a Ray actor (``restarted``: one that Ray restarted)."""
    import ray
    if not ray.is_initialized() or ray.get_runtime_context().get_actor_id() is None:
        return False
    with warnings.catch_warnings():  # Ray's property uses one of its deprecated APIs
        warnings.simplefilter("ignore", DeprecationWarning)
        return not restarted or ray.get_runtime_context().was_current_actor_reconstructed
