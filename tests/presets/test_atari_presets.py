"""Smoke tests of the Atari presets on the real emulator: build, train, save, load, evaluate."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ale_py")

import torch  # noqa: E402

from looprl.agents.dqn import DQN, DQNTestAgent  # noqa: E402
from looprl.agents.ppo import PPO, PPOTestAgent  # noqa: E402
from looprl.core import ParallelPreset, Preset  # noqa: E402
from looprl.environments import GymEnvironment  # noqa: E402
from looprl.environments.atari import AtariEnvironment  # noqa: E402
from looprl.environments.bodies import EpisodicLife, RewardClipping  # noqa: E402
from looprl.experiments.experiment import (  # noqa: E402
    ParallelEnvExperiment,
    SingleEnvExperiment,
)
from looprl.memory.atari_replay import AtariReplayBuffer  # noqa: E402
from looprl.presets import load_preset  # noqa: E402
from looprl.presets.atari import dqn, ppo  # noqa: E402


def _env() -> AtariEnvironment:
    # 1,200 emulator frames (300 agent steps) bound every episode, evaluation included
    return AtariEnvironment("Breakout", seed=0, max_episode_frames=1200)


def _inner(agent):
    assert isinstance(agent, EpisodicLife) and isinstance(agent.agent, RewardClipping)
    return agent.agent.agent


def _weights(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()]).clone()


def _load_and_evaluate(preset, tmp_path: Path, env: AtariEnvironment) -> None:
    path = tmp_path / "preset.pt"
    preset.save(str(path))
    loaded = load_preset(str(path))
    assert type(loaded) is type(preset) and loaded.hyperparameters == preset.hyperparameters
    assert torch.equal(_weights(loaded.model), _weights(preset.model))
    agent = loaded.test_agent()
    state, steps, score = env.reset(), 0, 0.0
    while not state.done:
        state = env.step(agent.act(state))
        steps, score = steps + 1, score + state.reward
    assert 0 < steps <= 300 and score >= 0


def test_dqn_preset_trains_saves_loads_and_evaluates(tmp_path: Path) -> None:
    env = _env()
    preset = (
        dqn.env(env).device("cpu")
        .hyperparameters(replay_start_size=50, replay_buffer_size=1000,
                         final_exploration_step=200, target_update_frequency=20)
        .build()
    )
    assert isinstance(preset, Preset) and not isinstance(preset, ParallelPreset)
    assert isinstance(preset.test_agent(), DQNTestAgent)
    before = _weights(preset.model)
    experiment = SingleEnvExperiment(preset, env, quiet=True, logdir=str(tmp_path), seed=0)
    experiment.train(episodes=1)  # up to 300 steps
    agent = _inner(experiment.agent)
    assert isinstance(agent, DQN) and isinstance(agent.replay_buffer, AtariReplayBuffer)
    steps = experiment.frame
    assert steps >= 100 and len(agent.replay_buffer) >= steps - 5  # a few lost lives
    assert agent.policy.version == (steps + 1) // 4 - 50 // 4  # every 4 acts after 50
    assert not torch.equal(_weights(preset.model), before)  # the agent trains the preset's model
    _load_and_evaluate(preset, tmp_path, env)


def test_ppo_preset_trains_saves_loads_and_evaluates(tmp_path: Path) -> None:
    env = _env()
    preset = (
        ppo.env(env).device("cpu")
        .hyperparameters(n_envs=2, n_steps=32, minibatch_size=32, epochs=2)
        .build()
    )
    assert isinstance(preset, ParallelPreset) and preset.n_envs == 2
    before = _weights(preset.model)
    experiment = ParallelEnvExperiment(
        preset, env, quiet=True, logdir=str(tmp_path), seed=0, train_steps=320
    )
    experiment.train(frames=320)
    agent = _inner(experiment.agent)
    assert isinstance(agent, PPO) and agent.trainer.updates >= 4
    assert not torch.equal(_weights(preset.model), before)
    assert isinstance(preset.parallel_test_agent(), PPOTestAgent)
    assert len(experiment.test(episodes=2)) == 2  # in the vector environment
    _load_and_evaluate(preset, tmp_path, env)


def test_defaults_are_the_deepmind_settings() -> None:
    d = dqn.hyperparameter_defaults
    assert (d["lr"], d["replay_buffer_size"], d["target_update_frequency"]) == (1e-4, 10**6, 1000)
    assert (d["final_exploration"], d["final_exploration_step"], d["update_frequency"]) == (
        0.01, 250_000, 4
    )
    p = ppo.hyperparameter_defaults
    assert (p["n_envs"], p["n_steps"], p["epochs"], p["clip"]) == (8, 128, 4, 0.1)


@pytest.mark.parametrize("builder", [dqn, ppo])
def test_non_image_environments_are_rejected(builder) -> None:
    with pytest.raises(ValueError, match="uint8 frames") as info:
        builder.env(GymEnvironment("CartPole-v1")).build()
    assert "CartPole-v1" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="lr"):
        builder.env(_env()).hyperparameters(lr=0.0).build()
