"""Tests of looprl.experiments.watch: environment per family, GIF output, step cap."""

from __future__ import annotations

import pytest
import torch

from looprl.environments import GymEnvironment
from looprl.experiments import watch


class _Right:
    def act(self, state):
        return torch.tensor(1)


def test_max_steps_cuts_the_episode(tmp_path) -> None:
    watch.offscreen_rendering()
    env = GymEnvironment("CartPole-v1", render_mode="rgb_array")
    returns, path = watch.watch(_Right(), env, episodes=2, gif=tmp_path / "a.gif", max_steps=3)
    assert returns == [3.0, 3.0]
    assert path.read_bytes()[:6] == b"GIF89a"


def test_watch_env_per_family() -> None:
    from looprl.presets.classic_control import ppo

    preset = ppo.env(GymEnvironment("CartPole-v1")).device("cpu").build()
    env = watch.watch_env(preset, "CartPole-v1", to_file=True)
    assert type(env) is GymEnvironment
    env.close()


def test_watch_env_for_atari_and_mujoco() -> None:
    pytest.importorskip("ale_py")
    pytest.importorskip("mujoco")
    from looprl.environments import AtariEnvironment, MujocoEnvironment
    from looprl.presets.atari import dqn
    from looprl.presets.continuous import sac

    atari = dqn.env(AtariEnvironment("Breakout")).device("cpu").build()
    assert isinstance(watch.watch_env(atari, "Breakout", to_file=True), AtariEnvironment)
    cheetah = sac.env(MujocoEnvironment("HalfCheetah-v5")).device("cpu").build()
    env = watch.watch_env(cheetah, "HalfCheetah-v5", to_file=True)
    assert isinstance(env, MujocoEnvironment)
    env.reset()
    assert env.render().shape[-1] == 3
    env.close()


def test_watch_env_rejects_multiagent_presets() -> None:
    from looprl.environments import MultiagentPettingZooEnv
    from looprl.presets.multiagent import dqn

    preset = dqn.env(MultiagentPettingZooEnv("tictactoe_v3")).device("cpu").build()
    with pytest.raises(ValueError, match="multi-agent"):
        watch.watch_env(preset, "tictactoe_v3", to_file=True)
