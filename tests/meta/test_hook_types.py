"""The hooks receive one form of every key (docs/meta-components.md's table, made by
``looprl.meta.hub``), whichever loop or runtime drives them: a local run, and a Ray actor's
collector (``EnvRunner`` with ``meta=``) beside the trainer worker's ``Learner``, whose batches
are ``NamedArray`` s of NumPy arrays."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from looprl.collector import EnvRunner
from looprl.core import NamedArray, SampleBatch
from looprl.distributed import AlgorithmSpec
from looprl.distributed.pipeline import trainer_core
from looprl.environments import GymEnvironment
from looprl.experiments import make_experiment
from looprl.experiments.experiment import seed_everything
from looprl.meta import MetaComponent
from looprl.meta.hub import hook_batch
from looprl.presets.classic_control import a2c, dqn

BUILDERS = {"a2c": a2c.hyperparameters(n_envs=2, n_steps=4, hidden=16),
            "dqn": dqn.hyperparameters(replay_start_size=16, minibatch_size=8, hidden=16,
                                   update_frequency=4, gradient_steps=1)}
OBS = (4,)  # CartPole's observation rows


class TypeCheck(MetaComponent):
    """Notes every key a hook receives that is not in its documented form."""

    def __init__(self) -> None:
        super().__init__()
        self.wrong: list[str] = []
        self.calls: dict[str, int] = {}
        self.pre_step_methods.append(self.pre_step)
        self.post_step_methods.append(self.post_step)
        self.post_episode_methods.append(self.post_episode)
        self.pre_update_methods.append(self.update)
        self.post_update_methods.append(self.update)

    def note(self, hook: str, key: str, value: Any, dtype: torch.dtype | None = None,
             ndim: int | None = None, tail: tuple[int, ...] = ()) -> None:
        ok = (isinstance(value, torch.Tensor) and dtype in (None, value.dtype)
              and ndim in (None, value.ndim)
              and tuple(value.shape[value.ndim - len(tail):]) == tail)
        if not ok:
            shape = tuple(getattr(value, "shape", ()))
            self.wrong.append(f"{hook}: {key} is a {type(value).__name__} {shape}")

    def count(self, hook: str) -> None:
        self.calls[hook] = self.calls.get(hook, 0) + 1

    def pre_step(self, metrics: dict[str, Any]) -> None:
        self.count("pre_step")
        self.note("pre_step", "state", metrics["state"], torch.float32, 2, OBS)

    def post_step(self, metrics: dict[str, Any]) -> None:
        self.count("post_step")
        transition = metrics["transition"]
        for key in ("state", "next_state"):
            self.note("post_step", key, transition[key], torch.float32, 2, OBS)
        for key, dtype in (("action", torch.int64), ("reward", torch.float32),
                           ("terminated", torch.bool), ("truncated", torch.bool),
                           ("env_index", torch.int64)):
            self.note("post_step", key, transition[key], dtype, 1)
        if not isinstance(transition["env_step"], int):
            self.wrong.append("post_step: env_step is no int")

    def post_episode(self, metrics: dict[str, Any]) -> None:
        self.count("post_episode")
        self.note("post_episode", "ended", metrics["ended"], torch.bool, 1)
        returns = metrics["episode_returns"]
        if not all(isinstance(r, float) for r in returns) or not isinstance(returns, list):
            self.wrong.append(f"post_episode: episode_returns is {returns!r}")

    def update(self, metrics: dict[str, Any]) -> None:
        self.count("update")
        batch = metrics["batch"]
        if type(batch) is not SampleBatch:
            self.wrong.append(f"update: batch is a {type(batch).__name__}")
            return
        self.note("update", "batch.obs", batch.obs, torch.float32, 3, OBS)
        for key, value in batch.items():
            if value is not None and key != "policy_state":
                self.note("update", f"batch.{key}", value)


def check(component: TypeCheck) -> None:
    assert component.wrong == []
    assert {"pre_step", "post_step", "post_episode", "update"} <= set(component.calls)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_a_local_run_hands_the_hooks_the_documented_types(name: str, tmp_path: Path) -> None:
    seed_everything(0)
    env = GymEnvironment("CartPole-v1")
    component = TypeCheck()
    preset = BUILDERS[name].env(env).device("cpu").build()
    experiment = make_experiment(preset, env, logdir=str(tmp_path), quiet=True, seed=0,
                                 train_steps=200, meta=[component])
    experiment.train(frames=200)
    experiment.close()
    check(component)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_a_ray_actor_and_trainer_hand_the_hooks_the_documented_types(name: str) -> None:
    """An actor worker's collector and the trainer worker's ``Learner``, in one process: the
    learner's batches are the actors' segments (on-policy: ``NamedArray`` s of NumPy arrays),
    yet the update hooks see the same ``SampleBatch`` of tensors as locally."""
    env = GymEnvironment("CartPole-v1")
    preset = BUILDERS[name].env(env).device("cpu").build()
    spec, _ = AlgorithmSpec.of_preset(preset, 1000)
    policy = spec.make_policy()
    spec.meta = [TypeCheck()]
    learner = trainer_core(spec, policy)
    trainer_side = learner.hooks.stack.components[0]
    actor_side = TypeCheck()
    runner = EnvRunner(spec.make_env, None, 2, 4, None, meta=[actor_side], policy=policy)
    raw = []
    while trainer_side.calls.get("update", 0) < 4 or "post_episode" not in actor_side.calls:
        runner.step(0, policy.rollout(runner.request(0)), policy.version)
        for sample in runner.segments():
            raw.append(type(sample.obs).__name__)
            learner.put(sample)
        learner.train_step()
    env.close()
    assert "NamedArray" in raw  # the actors' segments are the SRL API's
    actor_side.calls["update"] = trainer_side.calls["update"]
    trainer_side.calls.update(actor_side.calls)
    check(actor_side)
    check(trainer_side)


def test_a_batch_from_ray_becomes_tensors_without_a_warning() -> None:
    """Ray delivers read-only NumPy arrays: the hooks get tensors (copies of those), float64
    observations as float32, the other fields of a ``NamedArray`` observation left out."""
    rows = np.arange(12, dtype=np.float64).reshape(3, 1, 4)
    reward = np.ones((3, 1), dtype=np.float32)
    for array in (rows, reward):
        array.flags.writeable = False
    mask = np.ones((3, 1, 2), dtype=bool)
    batch = SampleBatch(obs=NamedArray(obs=rows, action_mask=mask), reward=reward,
                        action=np.zeros((3, 1), dtype=np.int64),
                        policy_state=NamedArray(h=np.zeros((3, 1, 2), dtype=np.float32)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seen = hook_batch(batch)
    assert seen.obs.dtype == torch.float32 and seen.obs.shape == (3, 1, 4)
    torch.testing.assert_close(seen.obs, torch.tensor(rows, dtype=torch.float32))
    assert isinstance(seen.reward, torch.Tensor) and isinstance(seen.policy_state.h, torch.Tensor)
    action = batch.action
    assert seen.action.data_ptr() == action.ctypes.data  # a writable array: viewed, not copied
    assert seen.done is None and batch.obs["obs"] is rows  # the trainer's batch is unchanged
