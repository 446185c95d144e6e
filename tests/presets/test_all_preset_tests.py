"""ALL 0.9.1's own preset tests (``all/presets/classic_control_test.py`` and
``continuous_test.py``), written as an ALL user's script with ``looprl`` in place of ``all``:
every preset built with its default hyperparameters acts on a ``DuplicateEnvironment`` of two
copies (whatever its ``n_envs``), its test agents act on a ``State`` and on the copies' rows, and
a saved preset loads again. One difference, documented in docs/coming-from-all-envs.md: a saved
preset loads through ``load_preset`` (ALL: ``torch.load`` without ``weights_only``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from looprl.environments import DuplicateEnvironment, GymEnvironment
from looprl.logging import DummyLogger
from looprl.presets import ParallelPreset, classic_control, continuous, load_preset

CLASSIC = ["a2c", "c51", "ddqn", "dqn", "ppo", "rainbow", "vac", "vpg", "vqn", "vsarsa"]
CONTINUOUS = ["ddpg", "ppo", "sac"]


def _validate(builder: Any, env_id: str, tmp_path: Path) -> None:
    """ALL's ``validate``: standard presets act on one ``State``, parallel ones on the rows of
    two copies (here for 20 steps: the agent writes a row of each copy at every step)."""
    torch.manual_seed(0)
    env, parallel_env = GymEnvironment(env_id), DuplicateEnvironment(
        [GymEnvironment(env_id), GymEnvironment(env_id)])
    env.reset(seed=0)
    parallel_env.reset(seed=1)
    preset = builder.device("cpu").env(env).build()
    agent = preset.agent(logger=DummyLogger(), train_steps=100000)
    if isinstance(preset, ParallelPreset):
        assert preset.n_envs != 2  # the preset's width is not the batch's
        for _ in range(20):
            actions = agent.act(parallel_env.state_array)
            assert len(actions) == 2
            parallel_env.step(actions)
        assert len(preset.parallel_test_agent().act(parallel_env.state_array)) == 2
    else:
        agent.act(env.state)
    preset.test_agent().act(env.state)
    preset.save(str(tmp_path / "test_preset.pt"))
    preset = load_preset(str(tmp_path / "test_preset.pt"))
    preset.test_agent().act(env.state)


@pytest.mark.parametrize("name", CLASSIC)
def test_alls_classic_control_preset_test(name: str, tmp_path: Path) -> None:
    _validate(getattr(classic_control, name), "CartPole-v1", tmp_path)


@pytest.mark.parametrize("name", CONTINUOUS)
def test_alls_continuous_preset_test(name: str, tmp_path: Path) -> None:
    _validate(getattr(continuous, name), "MountainCarContinuous-v0", tmp_path)
